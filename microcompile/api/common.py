"""Small things every public function shares: the `progress=` argument and a model's name."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from ..errors import UserError, shown
from ..escape import valid_text
from ..frontend import torch_kind
from ..progress import QUIET, Progress

ProgressArg = bool | Progress | Callable[[str], None]


def as_progress(progress: ProgressArg) -> Callable[[str], None]:
    """The API's `progress=`: False (quiet, the default), True (lines and notebook-aware bars),
    or a Progress / a callable taking each line."""
    if progress is True:
        return Progress(lines=True, bars=True, auto=True)
    if progress is False or progress is None:
        return QUIET
    return progress


def name_of(model) -> str:
    """A model's name in reports: a file's stem, an ONNX graph's name, a Quantized's name."""
    if isinstance(model, (str, os.PathLike)):
        return valid_text(Path(model).stem)
    if type(model).__name__ == "ModelProto":
        return model.graph.name or "onnx_model"
    kind = torch_kind(model)
    if kind is not None:
        return type(model).__name__.lower() if kind == "module" else "torch_model"
    return getattr(model, "name", None) or "model"


def parse_weights_in_ram(text: str) -> str | int:
    """--weights-in-ram: "off", "auto" or a number of bytes (K/KiB/M as --flash-budget), as
    CompileOptions(weights_in_ram=...) takes it (compiler/ram_weights.py)."""
    if text in ("off", "auto"):
        return text
    from ..report.memory import parse_bytes
    try:
        return parse_bytes(text, "--weights-in-ram")
    except UserError:
        raise UserError(f"--weights-in-ram {shown(text)} is not off, auto or a number of bytes",
                        hint="e.g. --weights-in-ram auto, or --weights-in-ram 16K") from None
