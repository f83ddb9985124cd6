"""Model readers: a model file in, a verified Graph out (NHWC, float32 or int8)."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ModelFormatError, UserError
from ..escape import valid_text
from ..files import MODEL_BYTES_MAX, read_file
from ..ir import Graph
from .tflite.reader import FILE_IDENTIFIER, list_ops, load_tflite

__all__ = ["load_model", "load_tflite", "list_tflite_ops", "parse_input_shapes"]


def parse_input_shapes(specs) -> dict[str, tuple[int, ...]] | None:
    """The CLI's repeated --input-shape NAME:1x3x32x32 as {name: shape} (None when absent)."""
    if not specs:
        return None
    from .onnx.loader import parse_shape_arg
    return dict(parse_shape_arg(s) for s in specs)


def load_model(model, input_shapes: dict | None = None) -> Graph:
    """Read a model: a file path (the reader chosen by extension, .tflite or .onnx; another
    extension is read as TFLite when the file carries the TFLite identifier), a file's bytes
    (TFLite by its identifier, else ONNX), an `onnx.ModelProto`, or a Graph (returned as is).

    `input_shapes` ({input name: shape}) pins dynamic input dimensions of ONNX models.
    """
    if isinstance(model, Graph):
        return model
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        if data[4:8] == FILE_IDENTIFIER:
            _no_input_shapes(input_shapes)
            return load_tflite(data)
        from .onnx import load_onnx
        return load_onnx(_onnx_from_bytes(data), input_shapes=input_shapes)
    if type(model).__name__ == "ModelProto":       # onnx.ModelProto, without importing onnx here
        from .onnx import load_onnx
        return load_onnx(model, input_shapes=input_shapes)
    if not isinstance(model, (str, os.PathLike)):
        raise UserError(f"cannot read a model from a {type(model).__name__}",
                        hint="pass a file path, the file's bytes, an onnx.ModelProto or what microcompile.quantization "
                             "returns")
    path = Path(os.fspath(model))
    ext = path.suffix.lower()
    if ext == ".onnx":
        from .onnx import load_onnx
        return load_onnx(path, input_shapes=input_shapes)
    _no_input_shapes(input_shapes)
    if ext == ".tflite":
        return load_tflite(path)
    # No known extension: read the file once (a regular file, permissions, size) and sniff it.
    data = read_file(path, "model file", MODEL_BYTES_MAX, ModelFormatError)
    if data[4:8] == FILE_IDENTIFIER:
        return load_tflite(data, name=valid_text(path.stem), label=str(path))
    raise UserError(f"cannot tell the format of {path} (extension {ext or 'none'!r})",
                    hint="microcompile reads .tflite and .onnx models")


def _no_input_shapes(input_shapes) -> None:
    if input_shapes:
        raise UserError("--input-shape applies to ONNX models only",
                        hint="TFLite models have static input shapes; drop --input-shape")


def _onnx_from_bytes(data: bytes):
    import onnx
    try:
        return onnx.load_model_from_string(data)
    except Exception as e:   # protobuf DecodeError and friends
        raise ModelFormatError(f"the bytes are neither a TFLite model (no 'TFL3' identifier) nor a readable ONNX "
                               f"model ({type(e).__name__})", hint="pass the bytes of a .tflite or .onnx file") from None


def list_tflite_ops(path) -> list[tuple[int, str, str, bool]]:
    """(layer index, TFLite op name, output tensor name, supported) for each op of a .tflite
    file; works on models with unsupported ops, so `inspect` can show them all."""
    return list_ops(path)
