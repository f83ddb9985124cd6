"""Export compiled models as a library for your own firmware: `cm.export(...)`,
`mc.export([cm1, cm2], ...)` and `microcompile export`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from .. import exporter as ex
from ..deploy.inputs import model_inputs
from ..errors import UserError
from .common import ProgressArg, as_progress

if TYPE_CHECKING:
    from .model import CompiledModel

FORMATS = ex.FORMATS
Exported = ex.Exported
model_name = ex.model_name


def check_export(directory, names: list[str], given: bool = False) -> None:
    """Before any work: the names can name models of one export, and `directory` is new,
    empty, or an earlier export."""
    ex.check_names(names, given=given)
    ex.check_export_dir(directory)


def export(models, directory, *, format: str = "cmake", bsp: bool = False, emulate: bool = False,  # noqa: A002
           names: list[str] | None = None, progress: ProgressArg = False) -> ex.Exported:
    """Write `models` (a CompiledModel or a list of them, all compiled for one board) as a
    library into `directory` (new, empty, or an earlier export, which is updated).

    format : str
        ``"cmake"`` (CMakeLists.txt for add_subdirectory), ``"make"`` (microcompile.mk to
        include), ``"lib"`` (a prebuilt libmicrocompile_<N>.a with the board's core flags),
        ``"arduino"`` (an Arduino library with an example sketch), ``"zephyr"`` (a Zephyr
        module with a sample application) or ``"cmsis-pack"`` (a .pdsc and its .pack).
    bsp : bool
        Add the board support (startup, linker script, console, cycle counter) as its own
        target; ``emulate`` makes it the QEMU twin's.
    names : list of str, optional
        The C names of the models (default: each model's name made a C identifier). Model N
        gets ``include/N.h``, ``N_model``, ``N_ARENA_BYTES``; every symbol it defines starts
        with ``N_``.

    Returns the Exported (its ``directory``, ``description``: microcompile.json, ``files``)."""
    progress = as_progress(progress)
    models = list(models) if isinstance(models, (list, tuple)) else [models]
    if not models:
        raise UserError("no model to export", hint="pass a compiled model or a list of them")
    board = models[0].board
    other = next((m for m in models if m.board.name != board.name), None)
    if other is not None:
        raise UserError(f"models compiled for different boards ({board.name}, {other.board.name}) cannot share "
                        f"one export", hint="compile every model for the same board")
    if names is not None and len(names) != len(models):
        raise UserError(f"{len(names)} names for {len(models)} models", hint="give one name per model")
    given = names is not None
    names = list(names) if given else [ex.model_name(m.name) for m in models]
    ex.check_names(names, given=given)
    options = ex.ExportOptions(format=format, bsp=bsp, emulate=emulate)
    progress(f"[export] {', '.join(names)} for {board.name} as {format} into {directory}")
    result = ex.export([ex.ExportModel(n, m._artifact.compiled, _test_inputs(m)) for n, m in zip(names, models)],
                       board, Path(directory), options)
    progress(f"[export] wrote {len(result.files)} files (build id {result.description['build_id']})")
    return result


def _test_inputs(cm) -> tuple:
    """The deterministic input `deploy` embeds when given none: the samples' test input."""
    x = model_inputs(cm.graph, None)
    return tuple(np.ascontiguousarray(x[n]) for n in cm.graph.inputs)
