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
from ..memory.banks import BankRoom, split_banks
from ..target import Board
from ..target.board import STACK_BYTES
from ..transform import pipeline
from .options import CompileOptions
from . import ram_weights
from .patches import PatchChoice, plan_with_patches


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
    patch: PatchChoice | None = None              # the patch stage --patch chose (compiler/patches.py)
    ram_weights: ram_weights.RamWeights | None = None   # the weights mc_init copies to RAM

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


def optimized(graph: Graph, options: CompileOptions = CompileOptions(), dump: bool = True) -> Graph:
    """`graph` after the graph passes the options ask for (the input of the patch choice and of
    lowering); `dump`: write options.dump_ir's files."""
    return pipeline.run(graph, None if options.fuse_rows else pipeline.WITHOUT_FUSE_ROWS,
                        dump=options.dump_ir if dump else None)


def compile_graph(graph: Graph, board: Board, artifact_dir: Path, options: CompileOptions = CompileOptions()) -> Compiled:
    """Optimize, lower, schedule, order, plan and emit C for `graph` into `artifact_dir`."""
    graph = optimized(graph, options)
    planned, patch = plan_with_patches(graph, board, options)
    kernels, plan, graph, widened, tuned_nodes, stored_int4 = planned
    plan = place_banks(plan, graph, board, options.arena_region)
    ram = ram_weights.choose(kernels, plan, board, options.weights_in_ram, options.arena_region)
    manifest = emit_artifact(graph, [(n, f) for n, f, _ in kernels], plan, artifact_dir,
                             traces=[t for _, _, t in kernels], ram_weights=ram.banks)
    return Compiled(graph, plan, manifest, kernels, widened, tuned_nodes, stored_int4, patch, ram)


# Room left in the `ram` bank for .data and .bss (runtime, platform, main.c) when the arena is
# split: a few hundred bytes on our boards; the fit report after the link checks the real figure.
RAM_MARGIN = 2048


def place_banks(plan: MemoryPlan, graph: Graph, board: Board, pin: str | None = None) -> MemoryPlan:
    """`plan` over the board's RAM banks when its arena does not fit the arena's bank (with the
    stack and the state buffer when that is the `ram` bank), else `plan` itself, unchanged: the
    primary arena stays in the `ram` bank (the one main.c passes to mc_init, with the inputs
    and outputs in it), the rest goes by memory/banks.py's rule. `pin` (--arena-region) keeps
    the one arena. A plan that does not fit the banks together either is returned unchanged
    too, and the build's fit check refuses it, naming the banks."""
    mcu = board.mcu
    if pin is not None or mcu.ram is None or board.is_host:
        return plan
    ram = [b for b in mcu.banks if b.kind == "ram"]
    if len(ram) < 2 or plan.arena_bytes + plan.state_bytes + STACK_BYTES <= mcu.ram.size:
        return plan
    primary = BankRoom(mcu.ram.name, mcu.ram.size - STACK_BYTES - plan.state_bytes - RAM_MARGIN)
    others = [BankRoom(b.name, b.size, b.fast) for b in ram if b.name != mcu.ram.name]
    io = {plan.alias[t].root if t in plan.alias else t for t in graph.inputs + graph.outputs}
    return split_banks(plan, [primary] + others, io) or plan


def plan_model(model, board: Board, options: CompileOptions = CompileOptions()) -> Compiled:
    """compile_model into a throwaway directory: the plan, kernels and widening for a report."""
    with tempfile.TemporaryDirectory(prefix="microcompile-") as tmp:
        return compile_model(model, board, Path(tmp), options)


def check_arena(compiled: Compiled, budget: int | None) -> None:
    """ArenaBudgetError when `compiled` plans a larger arena than `budget` bytes (None: no bound)."""
    if budget is not None and compiled.plan.arena_bytes > budget:
        raise ArenaBudgetError(f"arena {compiled.plan.arena_bytes:,} bytes is over the arena budget of "
                               f"{budget:,} bytes", hint="--arena-budget BYTES (or none) allows more")
