"""Model readers: a model file in, a verified Graph out (NHWC, float32 or int8)."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import ModelFormatError, UserError
from ..ir import Graph
from .tflite_reader import FILE_IDENTIFIER, list_ops, load_tflite

__all__ = ["load_model", "load_tflite", "list_tflite_ops"]


def load_model(path) -> Graph:
    """Read a model file, choosing the reader by extension (.tflite; .onnx is planned).

    A file with another extension is read as TFLite when it carries the TFLite identifier.
    """
    path = Path(os.fspath(path))
    ext = path.suffix.lower()
    if ext == ".tflite" or path.is_dir():
        return load_tflite(path)   # which also explains a missing file or a directory
    if ext == ".onnx":
        raise UserError("ONNX import is not implemented yet",
                        hint="convert the model to .tflite (for example with onnx2tf) and pass that file")
    if path.is_file():
        with open(path, "rb") as f:
            head = f.read(8)
        if head[4:8] == FILE_IDENTIFIER:
            return load_tflite(path)
    elif not path.exists():
        raise ModelFormatError(f"model file {path} does not exist",
                               hint="check the path (relative paths are taken from the current directory)")
    raise UserError(f"cannot tell the format of {path} (extension {ext or 'none'!r})",
                    hint="microcompile reads .tflite models")


def list_tflite_ops(path) -> list[tuple[int, str, str, bool]]:
    """(layer index, TFLite op name, output tensor name, supported) for each op of a .tflite
    file; works on models with unsupported ops, so `inspect` can show them all."""
    return list_ops(path)
