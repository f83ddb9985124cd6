"""A model to C: read it, run the graph passes, lower, schedule, order and plan its kernels,
and write the artifact (model.c, model_weights.*, manifest.json) into a directory."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..codegen import emit_artifact
from ..errors import ArenaBudgetError
from ..frontend import load_model
from ..ir import Graph
from ..memory import MemoryPlan
from ..target import Board
from ..transform import pipeline
from .options import CompileOptions
from .plan import schedule_and_plan


@dataclass
class Compiled:
    """A compiled model: the optimized graph in execution order, the arena plan, the artifact's
    manifest, and each kernel as (node, scheduled PrimFunc, schedule trace)."""

    graph: Graph
    plan: MemoryPlan
    manifest: dict
    kernels: list = field(default_factory=list)   # (node, scheduled PrimFunc, trace)
    widened: dict = field(default_factory=dict)   # node name -> extra flash of its int16 weights
    tuned: dict = field(default_factory=dict)     # node name -> workload key of the record it replays
    stored_int4: dict = field(default_factory=dict)  # node name -> flash its packed int4 weights save

    @property
    def widened_weight_bytes(self) -> int:
        """Flash the int16 copies of int8 weights cost beyond int8 (one byte per element):
        what int8 weights would save."""
        return sum(b.size for _, f, _ in self.kernels for b in f.buffers if b.scope == "const" and b.dtype == "int16")


def compile_model(model, board: Board, artifact_dir: Path, options: CompileOptions = CompileOptions()) -> Compiled:
    """Read `model` (a path, the file's bytes, an onnx.ModelProto or a Graph; see
    frontend.load_model) and compile it for `board` into `artifact_dir`."""
    return compile_graph(read_model(model, options), board, artifact_dir, options)


def read_model(model, options: CompileOptions = CompileOptions()) -> Graph:
    """`model` read with the options' input shapes and layout (frontend.load_model)."""
    return load_model(model, input_shapes=dict(options.input_shapes) or None, input_layout=options.input_layout)


def compile_graph(graph: Graph, board: Board, artifact_dir: Path, options: CompileOptions = CompileOptions()) -> Compiled:
    """Optimize, lower, schedule, order, plan and emit C for `graph` into `artifact_dir`."""
    graph = pipeline.run(graph, None if options.fuse_rows else pipeline.WITHOUT_FUSE_ROWS, dump=options.dump_ir)
    kernels, plan, graph, widened, tuned_nodes, stored_int4 = schedule_and_plan(graph, board, options.flash_budget,
                                                                                dict(options.tuned) or None)
    manifest = emit_artifact(graph, [(n, f) for n, f, _ in kernels], plan, artifact_dir,
                             traces=[t for _, _, t in kernels])
    return Compiled(graph, plan, manifest, kernels, widened, tuned_nodes, stored_int4)


def plan_model(model, board: Board, options: CompileOptions = CompileOptions()) -> Compiled:
    """compile_model into a throwaway directory: the plan, kernels and widening for a report."""
    with tempfile.TemporaryDirectory(prefix="microcompile-") as tmp:
        return compile_model(model, board, Path(tmp), options)


def check_arena(compiled: Compiled, budget: int | None) -> None:
    """ArenaBudgetError when `compiled` plans a larger arena than `budget` bytes (None: no bound)."""
    if budget is not None and compiled.plan.arena_bytes > budget:
        raise ArenaBudgetError(f"arena {compiled.plan.arena_bytes:,} bytes is over the arena budget of "
                               f"{budget:,} bytes", hint="--arena-budget BYTES (or none) allows more")
