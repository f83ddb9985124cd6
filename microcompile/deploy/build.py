"""A compiled model into a standalone Makefile project, built, with its fit checked."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import project
from ..compiler import CompileOptions, Compiled, check_arena
from ..escape import say
from ..progress import progress_bar
from ..target import Board
from .options import BuildOptions

Progress = Callable[[str], None]


@dataclass
class Artifact:
    """A compiled model and the directory that holds its C (what a project copies), for `board`.
    `name` is the model's name in reports (its file's stem); `source` what it was read from (a
    path, bytes, an onnx.ModelProto or a Graph), for verify's comparison with LiteRT."""

    compiled: Compiled
    directory: Path
    board: Board
    name: str
    options: CompileOptions = CompileOptions()
    source: object = None


@dataclass
class Built:
    """A project built for a board, and its fit report (None on the host)."""

    artifact: Artifact
    options: BuildOptions
    inputs: dict[str, np.ndarray]          # the self-test's embedded input (also the agent's default)
    sizes: project.SizeReport
    fit: project.FitReport | None
    project_dir: Path

    @property
    def board(self) -> Board:
        return self.artifact.board

    @property
    def compiled(self) -> Compiled:
        return self.artifact.compiled


def build(artifact: Artifact, project_dir: Path, options: BuildOptions, inputs: dict[str, np.ndarray],
          progress: Progress = say) -> Built:
    """Write `artifact`'s project into `project_dir` (checked by the caller before the compile:
    project.check_out_dir) and build it. `inputs` is the self-test's embedded input. Raises
    ArenaBudgetError over `options.arena_budget`, and project.FitError when it does not fit."""
    compiled, board = artifact.compiled, artifact.board
    where = project.placement(board, options.arena_region, options.weights_region, emulated=options.emulate,
                              arena_banks=project.model_banks(compiled.manifest))
    check_arena(compiled, options.arena_budget)
    if not board.is_host:
        with _quantize_hint(compiled):
            project.check_manifest_fits(compiled.manifest, board, where, compiled.widened_weight_bytes)
    test_inputs = None if options.agent else [inputs[n] for n in compiled.graph.inputs]
    project.generate(artifact.directory, board, project_dir, test_inputs, options)
    sizes = build_with_bar(project_dir, progress)
    budget = artifact.options.flash_budget
    if budget is not None and not board.is_host and sizes.flash > budget:
        progress(f"[build] note: flash {sizes.flash} B is over --flash-budget {budget} B "
                 f"({len(compiled.widened)} kernel(s) with int16 weights, {len(compiled.stored_int4)} with packed int4, "
                 "chosen against an estimate of the code)")
    if options.agent:
        progress(f"[build] agent firmware, build id {project.read_marker(project_dir)['build_id']}")
    fit = None
    if not board.is_host:
        platform = "twin" if options.emulate else "board"
        fit = project.fit_report(project_dir / "firmware.elf", board, where, project_dir / "build" / platform,
                                 compiled.widened_weight_bytes)
        if not fit.fits:
            with _quantize_hint(compiled):
                raise project.FitError(fit, compiled.manifest["model"])
    return Built(artifact, options, inputs, sizes, fit, project_dir)


QUANTIZE_HINT = ("quantize it to int8 (deploy --quantize int8 --calibration SAMPLES, or microcompile.quantize): "
                 "its float32 weights and activations take four times the bytes of int8 ones")


@contextmanager
def _quantize_hint(compiled):
    """A float model that does not fit is told about quantizing first, before a bigger board."""
    try:
        yield
    except project.FitError as e:
        if any(t.is_const and t.dtype == "float32" and t.size > 1 for t in compiled.graph.tensors.values()):
            e.report.hints.insert(0, QUANTIZE_HINT)
            e.hint = "; ".join(e.report.hints)
        raise


def build_with_bar(project_dir: Path, progress: Progress, platform: str | None = None) -> project.SizeReport:
    """project.build with a progress bar over the C files (its lines go to `progress` when
    stderr is not a terminal)."""
    sources = len([p for p in project_dir.rglob("*.c") if "build" not in p.relative_to(project_dir).parts])
    with progress_bar(progress, sources, "build", "file") as b:
        def step(line: str) -> None:
            if line.startswith("[build] CC"):
                b.update(1)
            elif b.disable:
                progress(line)
            else:
                b.write(line, file=sys.stderr)
        sizes = project.build(project_dir, progress=step, platform=platform)
        b.update(b.total - b.n)
    return sizes
