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


def load_model(path, input_shapes: dict | None = None) -> Graph:
    """Read a model file, choosing the reader by extension (.tflite, .onnx).

    A file with another extension is read as TFLite when it carries the TFLite identifier.
    `input_shapes` ({input name: shape}) pins dynamic input dimensions of ONNX models.
    """
    path = Path(os.fspath(path))
    ext = path.suffix.lower()
    if ext == ".onnx":
        from .onnx import load_onnx
        return load_onnx(path, input_shapes=input_shapes)
    if input_shapes:
        raise UserError("--input-shape applies to ONNX models only",
                        hint="TFLite models have static input shapes; drop --input-shape")
    if ext == ".tflite":
        return load_tflite(path)
    # No known extension: read the file once (a regular file, permissions, size) and sniff it.
    data = read_file(path, "model file", MODEL_BYTES_MAX, ModelFormatError)
    if data[4:8] == FILE_IDENTIFIER:
        return load_tflite(data, name=valid_text(path.stem), label=str(path))
    raise UserError(f"cannot tell the format of {path} (extension {ext or 'none'!r})",
                    hint="microcompile reads .tflite and .onnx models")


def list_tflite_ops(path) -> list[tuple[int, str, str, bool]]:
    """(layer index, TFLite op name, output tensor name, supported) for each op of a .tflite
    file; works on models with unsupported ops, so `inspect` can show them all."""
    return list_ops(path)
