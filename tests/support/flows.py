"""The public API's common flows in one call each, with the keyword arguments the tests use:
`deploy(path, board, project_dir, emulate=True, input_path=x)` is
`mc.compile(path, board, ...).deploy(project_dir, inputs=x, emulate=True)`."""

from __future__ import annotations

from pathlib import Path

import microcompile as mc
from microcompile.compiler import CompileOptions
from microcompile.compiler import compile_model as _compile_model
from microcompile.compiler import plan_model as _plan_model
from microcompile.target import load_board


def _board(board):
    return load_board(board) if isinstance(board, str) else board


def compile_model(model, board, artifact_dir, *, flash_budget=None, tuned=None, input_shapes=None):
    """compiler.compile_model with keyword options."""
    return _compile_model(model, _board(board), Path(artifact_dir),
                          CompileOptions(input_shapes=input_shapes or {}, flash_budget=flash_budget,
                                         tuned=tuned or {}))


def plan_model(model, board, *, flash_budget=None, input_shapes=None):
    return _plan_model(model, _board(board), CompileOptions(input_shapes=input_shapes or {},
                                                            flash_budget=flash_budget))


def deploy(model, board, project_dir, *, emulate=False, input_path=None, agent=False, port=None, probe=None,
           timeout=10.0, records=None, flash_budget=None, arena_region=None, weights_region=None, progress=None,
           input_shapes=None):
    """mc.compile + CompiledModel.deploy (the CLI's deploy)."""
    cm = mc.compile(model, board, records=records, input_shapes=input_shapes, progress=progress or False,
                    options=mc.CompileOptions(flash_budget=flash_budget))
    link = mc.Link(emulate=emulate, port=port, probe=probe, timeout=timeout)
    return cm.deploy(project_dir, inputs=input_path, agent=agent, link=link, progress=progress or False,
                     options=mc.BuildOptions(arena_region=arena_region, weights_region=weights_region))


def build(model, board, project_dir, *, emulate=False, input_path=None, agent=False, arena_region=None,
          weights_region=None, progress=None, flash_budget=None):
    """mc.compile + CompiledModel.build: the project written and built (a Firmware)."""
    cm = mc.compile(model, board, progress=progress or False, options=mc.CompileOptions(flash_budget=flash_budget))
    return cm.build(project_dir, agent=agent, emulate=emulate, inputs=input_path, progress=progress or False,
                    options=mc.BuildOptions(arena_region=arena_region, weights_region=weights_region))


def verify(model, board, project_dir, *, emulate=False, input_path=None, port=None, timeout=10.0, progress=None):
    """mc.compile + CompiledModel.verify (the CLI's verify)."""
    cm = mc.compile(model, board, progress=progress or False)
    return cm.verify(project_dir, inputs=input_path, link=mc.Link(emulate=emulate, port=port, timeout=timeout),
                     progress=progress or False)


def run(model, board, project_dir, *, emulate=False, input_path=None, repeat=None, labels=None, progress=None):
    """mc.compile + Device.check (the CLI's run): a SamplesResult."""
    cm = mc.compile(model, board, progress=progress or False)
    dev = cm.emulate(project_dir, progress=progress or False)
    with dev:
        return dev.check(input_path, labels, count=repeat)


def quantize(model, calibration, output=None, **kw):
    """mc.quantize, saved to `output` when given."""
    q = mc.quantize(model, calibration, **kw)
    if output is not None:
        q.save(output)
    return q


def measurer(model, board, work_dir, compiled, *, emulate=True, port=None, timeout=10.0, boards=None,
             arena_budget=None, inputs=None):
    """tune.run.Measurer of `model` compiled with its default schedules (`compiled`, from
    tune.run.lowered_workloads) on `board`."""
    from microcompile.deploy import Artifact
    from microcompile.autotune.run import Measurer

    b = _board(board)
    artifact = Artifact(compiled, Path(work_dir), b, Path(str(model)).stem, CompileOptions(), model)
    return Measurer(artifact, Path(work_dir), mc.Link(emulate=emulate, port=port, timeout=timeout), boards,
                    arena_budget, inputs)
