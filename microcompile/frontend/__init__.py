"""Model readers: a model file in, a verified Graph out (NHWC, float32 or int8)."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ModelFormatError, UserError
from ..escape import valid_text
from ..files import MODEL_BYTES_MAX, read_file
from ..ir import Graph
from .tflite.reader import FILE_IDENTIFIER, list_ops, load_tflite

__all__ = ["is_torch_object", "load_model", "torch_kind", "load_tflite", "list_tflite_ops", "parse_input_shapes"]


def parse_input_shapes(specs) -> dict[str, tuple[int, ...]] | None:
    """The CLI's repeated --input-shape NAME:1x3x32x32 as {name: shape} (None when absent)."""
    if not specs:
        return None
    from .onnx.loader import parse_shape_arg
    return dict(parse_shape_arg(s) for s in specs)


INPUT_LAYOUTS = ("nchw", "nhwc")


def load_model(model, input_shapes: dict | None = None, input_layout: str = "nchw",
               example_inputs=None) -> Graph:
    """Read a model: a file path (the reader chosen by extension, .tflite, .onnx or .pt2;
    another extension is read as TFLite when the file carries the TFLite identifier), a
    file's bytes (TFLite by its identifier, a torch.export.save archive, else ONNX), an
    `onnx.ModelProto`, a `torch.export.ExportedProgram`, a `torch.nn.Module` with
    `example_inputs` (exported here with torch.export), or a Graph (returned as is).

    `input_shapes` ({input name: shape}) pins dynamic input dimensions of ONNX models.
    `input_layout` "nhwc" makes an ONNX or PyTorch model's 4-D inputs and outputs NHWC (the
    kernels' layout: no transpose at the edges) instead of the framework's NCHW.
    """
    if input_layout not in INPUT_LAYOUTS:
        raise UserError(f"unknown input layout {input_layout!r}", hint="--input-layout nchw (the default) or nhwc")
    nhwc = input_layout == "nhwc"
    if isinstance(model, Graph):
        return model
    kind = torch_kind(model)
    if kind is not None:
        _only_onnx_shapes(input_shapes, "PyTorch programs have static shapes")
        from . import pytorch
        if kind == "module":
            return pytorch.load_module(model, example_inputs, nhwc_io=nhwc)
        return pytorch.load_exported_program(model, nhwc_io=nhwc)
    if example_inputs is not None:
        raise UserError("example_inputs apply to a torch.nn.Module only",
                        hint="drop example_inputs, or pass the module itself")
    if isinstance(model, (bytes, bytearray, memoryview)):
        data = bytes(model)
        if data[4:8] == FILE_IDENTIFIER:
            _no_input_shapes(input_shapes)
            _no_layout(nhwc, "TFLite")
            return load_tflite(data)
        from .pytorch import is_pt2
        if is_pt2(data):
            _only_onnx_shapes(input_shapes, "PyTorch programs have static shapes")
            from .pytorch import load_pt2
            return load_pt2(data, nhwc_io=nhwc)
        from .onnx import load_onnx
        return load_onnx(_onnx_from_bytes(data), input_shapes=input_shapes, nhwc_io=nhwc)
    if type(model).__name__ == "ModelProto":       # onnx.ModelProto, without importing onnx here
        from .onnx import load_onnx
        return load_onnx(model, input_shapes=input_shapes, nhwc_io=nhwc)
    if not isinstance(model, (str, os.PathLike)):
        raise UserError(f"cannot read a model from a {type(model).__name__}",
                        hint="pass a file path, the file's bytes, an onnx.ModelProto, a torch.export program, a "
                             "torch.nn.Module with example_inputs, or what microcompile.quantize returns")
    path = Path(os.fspath(model))
    ext = path.suffix.lower()
    if ext == ".onnx":
        from .onnx import load_onnx
        return load_onnx(path, input_shapes=input_shapes, nhwc_io=nhwc)
    if ext == ".pt2":
        _only_onnx_shapes(input_shapes, "PyTorch programs have static shapes")
        from .pytorch import load_pt2
        return load_pt2(path, nhwc_io=nhwc, name=valid_text(path.stem), label=str(path))
    _no_input_shapes(input_shapes)
    _no_layout(nhwc, "TFLite")
    if ext == ".tflite":
        return load_tflite(path)
    # No known extension: read the file once (a regular file, permissions, size) and sniff it.
    data = read_file(path, "model file", MODEL_BYTES_MAX, ModelFormatError)
    if data[4:8] == FILE_IDENTIFIER:
        return load_tflite(data, name=valid_text(path.stem), label=str(path))
    raise UserError(f"cannot tell the format of {path} (extension {ext or 'none'!r})",
                    hint="microcompile reads .tflite, .onnx and .pt2 (torch.export.save) models")


def is_torch_object(model) -> bool:
    """A torch.export program or a torch.nn.Module (torch not imported to tell)."""
    return torch_kind(model) is not None


def torch_kind(model) -> str | None:
    """"program" for a torch.export.ExportedProgram, "module" for a torch.nn.Module, else None,
    without importing torch (a user who never passes a torch object may not have it)."""
    import sys
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    if isinstance(model, torch.export.ExportedProgram):
        return "program"
    if isinstance(model, torch.nn.Module):
        return "module"
    return None


def _only_onnx_shapes(input_shapes, why: str) -> None:
    if input_shapes:
        raise UserError(f"--input-shape applies to ONNX models only: {why}", hint="drop --input-shape")


def _no_layout(nhwc: bool, fmt: str) -> None:
    if nhwc:
        raise UserError(f"--input-layout applies to ONNX and PyTorch models: {fmt} models are NHWC already",
                        hint="drop --input-layout")


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
