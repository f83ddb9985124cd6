"""The only module that wires the stages together.

    compile_model: file -> Graph -> passes -> lowered + scheduled kernels -> memory plan -> C artifact
    deploy:        compile_model -> project -> build -> run (QEMU / host) or flash -> verify -> report
"""

from __future__ import annotations

import json
import sys
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from . import memory, memory_report, project
from .codegen import emit_artifact
from .errors import ArenaBudgetError, DeviceError, UserError, shown
from .files import check_output_file, load_arrays, write_file
from .frontend import load_model
from .ir import Graph, NP_DTYPES, ops
from .reference import interp
from .ir.compare import Comparison, compare
from .ir.summary import layer_table
from .ir.budget import Tally, elements
from .lower import lower_node
from .memory import MemoryPlan
from .schedule import ScheduleError, blocks, default_schedule, widening
from .target import Board, load_board
from .transform import pipeline
from .tune.records import load_selection, tuned_summary
from .tune.workload import workload_key

Progress = Callable[[str], None]


@dataclass
class Compiled:
    graph: Graph
    plan: MemoryPlan
    manifest: dict
    kernels: list = field(default_factory=list)   # (node, scheduled PrimFunc, trace)
    widened: dict = field(default_factory=dict)   # node name -> extra flash of its int16 weights
    tuned: dict = field(default_factory=dict)     # node name -> workload key of the record it replays


def compile_model(model_path: str | Path, board: Board, artifact_dir: Path,
                  dump_ir: Callable[[str, Graph], None] | None = None, input_shapes: dict | None = None,
                  flash_budget: int | None = None, tuned: dict | None = None) -> Compiled:
    """Import, optimize, lower, schedule, order, plan and emit C for `model_path` into
    `artifact_dir`. `input_shapes` pins dynamic ONNX input dimensions (--input-shape);
    `flash_budget` caps the firmware's flash (bytes; default: the board's) when choosing
    which kernels get int16 weights. `tuned`: {workload key: schedule.Trace} replayed on every
    kernel of that workload instead of its default schedule (tune/)."""
    return compile_graph(load_model(model_path, input_shapes=input_shapes), board, artifact_dir, dump_ir,
                         flash_budget, tuned)


def compile_graph(graph: Graph, board: Board, artifact_dir: Path,
                  dump_ir: Callable[[str, Graph], None] | None = None,
                  flash_budget: int | None = None, tuned: dict | None = None) -> Compiled:
    """compile_model for a Graph already in memory (e.g. the output of PTQ)."""
    graph = pipeline.run(graph, dump=dump_ir)
    kernels, plan, graph, widened, tuned_nodes = schedule_and_plan(graph, board, flash_budget, tuned)
    manifest = emit_artifact(graph, [(n, f) for n, f, _ in kernels], plan, artifact_dir,
                             traces=[t for _, _, t in kernels])
    return Compiled(graph, plan, manifest, kernels, widened, tuned_nodes)


def plan_model(model_path: str | Path, board_name: str, input_shapes: dict | None = None,
               flash_budget: int | None = None) -> Compiled:
    """compile_model into a throwaway directory: the plan, kernels and widening for a report."""
    board = load_board(board_name)
    with tempfile.TemporaryDirectory(prefix="microcompile-") as tmp:
        return compile_model(model_path, board, Path(tmp), input_shapes=input_shapes, flash_budget=flash_budget)


def schedule_and_plan(graph: Graph, board: Board, flash_budget: int | None = None, tuned: dict | None = None):
    """Lower and schedule every node that needs code (int16 weights and tables where the flash
    allows and the arena does not grow, schedule/widening.py), pick the execution order with the
    smallest peak, and plan the arena: (kernels in order, plan, graph in that order,
    {widened node: extra flash bytes}, {tuned node: workload key}). A node whose workload key
    is in `tuned` replays that trace (its widening is the trace's, not a candidate here); a
    trace that does not replay is a ScheduleError."""
    slices = memory.concat_slices(graph)
    # Views (reshape) and in-place concatenations are no code: their bytes are planned in place.
    no_code = {n.name for n in graph.nodes if ops.get(n.op).is_view} | {c for c, _ in slices.values()}
    target = board.target
    narrow, wide, candidates, tuned_nodes, lowered = {}, {}, [], {}, {}
    # Each repacked weight is checked as it is made (schedule/); their sum, here, layer by layer.
    consts = Tally("scheduling (weights repacked, int16 copies)")
    for node in graph.nodes:
        if node.name in no_code:
            continue
        func = lowered[node.name] = lower_node(graph, node, target)
        key = workload_key(node, func, target) if tuned else None
        if key in (tuned or {}):
            narrow[node.name] = (tuned[key].apply(func), tuned[key])
            tuned_nodes[node.name] = key
            continue
        narrow[node.name] = default_schedule(func, target, wide=False)
        w = default_schedule(func, target, wide=True)
        consts.add(f"layer {shown(node.name)!r} ({node.op})", _const_bytes(narrow[node.name][0]) + _const_bytes(w[0]))
        if _const_bytes(w[0]) > _const_bytes(narrow[node.name][0]):
            wide[node.name] = w
            gain = widening.estimate_gain(node.op, int(func.attrs.get("macs", 0)),
                                          graph.tensors[node.outputs[0]].size)
            candidates.append(widening.Candidate(node.name, gain, _const_bytes(narrow[node.name][0]),
                                                 _const_bytes(w[0])))
    alias = memory.aliases(graph, {t: a for t, (_, a) in slices.items()})
    rules = memory.overlap_rules(graph, alias, skip=no_code)

    def planned(scheduled, planner=None):
        scratch = {name: f.scratch_bytes for name, (f, _) in scheduled.items() if f.scratch_bytes}
        g = graph.replace(nodes=memory.best_order(graph, scratch, rules, alias))
        return g, memory.plan_memory(g, scratch, overlaps=rules, slices={t: a for t, (_, a) in slices.items()},
                                     planner=planner)

    # Widening never raises the arena: a wide variant whose scratch (e.g. an int16 copy of a
    # fully connected layer's input) would lift its step above the int8 plan's peak stays int8.
    # (Only the int8 plan's live bytes per step matter here, which any planner gives.)
    g0, p0 = planned(narrow, "greedy_by_size")
    live = dict(zip((n.name for n in g0.nodes), p0.timeline()))
    peak = p0.lower_bound
    candidates = [c for c in candidates
                  if live[c.name] - narrow[c.name][0].scratch_bytes + wide[c.name][0].scratch_bytes <= peak]
    fixed = sum(_const_bytes(f) for name, (f, _) in narrow.items() if name not in {c.name for c in candidates})
    budget = _weights_budget(graph, board, flash_budget, len(narrow))
    chosen = widening.choose_wide(candidates, fixed, budget)
    widened = {c.name: c.extra for c in candidates if c.name in chosen}
    scheduled = {name: wide[name] if name in widened else sched for name, sched in narrow.items()}
    graph, plan = planned(scheduled)
    graph, plan = _grow_blocks(graph, plan, scheduled, {n: f for n, f in lowered.items() if n not in tuned_nodes},
                               widened, target, planned)
    kernels = [(n, *scheduled[n.name]) for n in graph.nodes if n.name in scheduled]
    return kernels, plan, graph, widened, tuned_nodes


def _grow_blocks(graph: Graph, plan: MemoryPlan, scheduled: dict, lowered: dict, widened: dict, target, planned):
    """Give conv2d kernels off the arena's peak larger im2col blocks (schedule/blocks.py), never
    growing the arena: each kernel takes the largest block within its slack (the plan's peak of
    live bytes, its lower bound, less the bytes live at its step); all together are re-planned, and if that arena is larger (the order
    or the placement changed), one kernel at a time, each kept only if the arena stays. Updates
    `scheduled` in place; returns the graph in its order and the plan."""
    live = dict(zip((n.name for n in graph.nodes), plan.timeline()))
    bigger = {}
    for name, func in lowered.items():
        f, t = scheduled[name]
        grown = blocks.larger_block(func, target, name in widened, f, t, plan.lower_bound - live[name])
        if grown is not None:
            bigger[name] = grown
    if not bigger:
        return graph, plan
    g, p = planned({**scheduled, **bigger})
    if p.arena_bytes <= plan.arena_bytes:
        scheduled.update(bigger)
        return g, p
    for name, grown in bigger.items():
        g, p = planned({**scheduled, name: grown})
        if p.arena_bytes <= plan.arena_bytes:
            scheduled[name] = grown
            graph, plan = g, p
    return graph, plan


def _const_bytes(f) -> int:
    return sum(b.nbytes for b in f.buffers if b.scope == "const")


def _weights_budget(graph: Graph, board: Board, flash_budget: int | None, kernels: int) -> int | None:
    """Flash the weights may take: --flash-budget (or the board's flash) less the code
    estimate; None on the host, which has no flash to fit."""
    total = flash_budget if flash_budget is not None else (board.mcu.flash.size if board.mcu.flash else None)
    if total is None:
        return None
    inputs = sum(graph.tensors[t].nbytes for t in graph.inputs)
    return total - widening.code_estimate(kernels, inputs)


def deterministic_input(shape, dtype: str) -> np.ndarray:
    """BENCHMARK.md's input: int8 x[i] = (i*7 + 3) % 256 - 128; float models use the same / 128."""
    i = np.arange(elements(shape), dtype=np.int64)
    x = ((i * 7 + 3) % 256 - 128).astype(np.int8)
    return (x.astype(np.float32) / 128 if dtype == "float32" else x.astype(NP_DTYPES[dtype])).reshape(shape)


def load_inputs(graph: Graph, input_path: str | Path | None, arrays=None) -> dict[str, np.ndarray]:
    """The model inputs: from a .npy (one input) / .npz (by name), or the deterministic pattern.
    `arrays` is the file's content when it was read already (`load_arrays`).

    UserError for an unreadable file, a wrong name, shape or dtype, and for NaN or infinity
    in a float input (see check_finite_inputs)."""
    specs = [graph.tensors[name] for name in graph.inputs]
    if input_path is None:
        return {t.name: deterministic_input(t.shape, t.dtype) for t in specs}
    path = Path(input_path)
    loaded = load_arrays(path, "input file") if arrays is None else arrays
    if isinstance(loaded, np.ndarray):
        if len(specs) != 1:
            raise UserError(f"{path} holds one array but the model has {len(specs)} inputs",
                            hint="pass a .npz with one array per input name: " + ", ".join(t.name for t in specs))
        loaded = {specs[0].name: loaded}
    out = {}
    for t in specs:
        if t.name not in loaded:
            raise UserError(f"{path} has no array named {t.name!r}",
                            hint=f"arrays found: {', '.join(shown(k) for k in loaded)}")
        a = loaded[t.name]
        want = np.dtype(NP_DTYPES[t.dtype])
        if tuple(a.shape) != tuple(t.shape) or a.dtype != want:
            raise UserError(f"input {t.name!r} in {path} is {a.dtype}{list(a.shape)}, "
                            f"but the model expects {want}{list(t.shape)}",
                            hint=f"convert it, e.g. np.save(path, x.reshape({tuple(t.shape)}).astype(np.{want}))")
        out[t.name] = a
    check_finite_inputs(out, path)
    return out


def check_finite_inputs(inputs: dict[str, np.ndarray], path) -> None:
    """Refuse NaN and infinity in float inputs: nothing could be verified with them. numpy
    propagates NaN through every op, while the compiled kernels, like TFLite's, clamp with
    fminf/fmaxf and take maxima by comparison, which drop a NaN or turn it into a finite
    value; infinity gives inf - inf = NaN inside softmax and normalizations."""
    for name, a in inputs.items():
        bad = ~np.isfinite(a) if np.issubdtype(a.dtype, np.floating) else None
        if bad is not None and bad.any():
            where = ", ".join(str(list(map(int, i))) for i in np.argwhere(bad)[:3]) + (" ..." if bad.sum() > 3 else "")
            raise UserError(f"input {name!r} in {path} has {int(bad.sum())} non-finite value(s) (NaN or infinity) at "
                            f"{where}: the compiled float kernels do not propagate them as the reference does (their "
                            "clamps and maxima drop a NaN or make it finite), so the outputs could not be compared",
                            hint="give finite input values")


@dataclass
class DeployResult:
    report: dict
    outputs: dict[str, np.ndarray]
    comparisons: dict[str, Comparison]
    project_dir: Path
    compiled: Compiled | None = None
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    run: project.RunResult | None = None
    fit: project.FitReport | None = None


@dataclass
class Built:
    """A compiled model, its project built for a board, and the fit report (None on the host)."""
    board: Board
    compiled: Compiled
    inputs: dict[str, np.ndarray]
    sizes: project.SizeReport
    fit: project.FitReport | None
    project_dir: Path
    model_path: Path


def widened_weight_bytes(compiled: Compiled) -> int:
    """Flash the int16 copies of int8 weights cost beyond int8 (one byte per element): what int8
    weights would save."""
    return sum(b.size for _, f, _ in compiled.kernels for b in f.buffers if b.scope == "const" and b.dtype == "int16")


def build_firmware(model_path: str | Path, board: str | Board, project_dir: str | Path, *, emulate: bool = False,
                   input_path=None, progress: Progress = print,
                   dump_ir: Callable[[str, Graph], None] | None = None, trace: bool = False,
                   quantize: str | None = None, calibration=None, input_shapes: dict | None = None,
                   arena_region: str | None = None, weights_region: str | None = None,
                   agent: bool = False, flash_budget: int | None = None, activations: str = "int8",
                   tuned: dict | None = None, records=None, arena_budget: int | None = None) -> Built:
    """Compile `model_path` for `board`, write and build its project, and check that it fits
    (project.FitError, with what does not fit and what would help, when it does not).
    `arena_region` / `weights_region` move the arena / the weights to another memory bank.
    `agent` builds the agent firmware (the input is sent at run time) instead of the self-test
    (the input is compiled in); files that did not change are not rewritten, so an up-to-date
    build is reused. `flash_budget` (bytes) caps the firmware's flash when choosing which
    kernels get int16 weights (default: the board's flash; schedule/widening.py).
    `quantize="int8"` first quantizes the float model on the `calibration` samples (see
    quantize_model; activations="int16" for 16x8) and compiles the quantized graph as it is in
    memory; the .tflite of it is left in project_dir/<model>_int8.tflite (or _16x8) when
    TFLite can express it.
    `tuned` ({workload key: Trace}) or `records` (a tuning records file: the best valid record
    per workload for this board's core and toolchain) replace default schedules.
    `arena_budget` (bytes): ArenaBudgetError, before the project is written and built, when the
    planned arena is larger (the tuner's bound on what a candidate may cost in RAM)."""

    board = load_board(board) if isinstance(board, str) else board
    selection = None
    if records is not None:
        selection = load_selection(records, board, progress)
        tuned = {**selection.traces(), **(tuned or {})}
    _check_target(board, emulate, None, agent=False)   # the port, if any, was checked by the caller
    where = project.placement(board, arena_region, weights_region, emulated=emulate)
    project_dir = Path(project_dir)
    # Before any work: the project folder (a file? someone else's? writable?) and the input file.
    project.check_out_dir(project_dir)
    arrays = load_arrays(input_path, "input file") if input_path is not None else None
    with tempfile.TemporaryDirectory(prefix="microcompile-") as tmp:
        qgraph = None
        if quantize is not None:
            qgraph = _quantize_for_deploy(model_path, quantize, calibration, progress, input_shapes, activations)
        progress(f"[compile] {model_path}" + (f" ({qgraph.name})" if qgraph is not None else ""))
        try:
            compiled = (compile_graph(qgraph, board, Path(tmp), dump_ir, flash_budget, tuned) if qgraph is not None
                        else compile_model(model_path, board, Path(tmp), dump_ir, input_shapes=input_shapes,
                                           flash_budget=flash_budget, tuned=tuned))
        except ScheduleError as e:
            if selection is None:
                raise
            raise UserError(f"a record of {records} does not replay on this model: {e}",
                            hint="records are tied to microcompile's loop and buffer names; tune again with this "
                                 "version") from None
        if selection is not None:
            progress(f"[records] {records}: {tuned_summary(compiled, selection)}")
        inputs = load_inputs(compiled.graph, input_path, arrays)
        progress(f"[compile] {len(compiled.kernels)} kernels, arena {compiled.plan.arena_bytes} bytes "
                 f"(lower bound {compiled.plan.lower_bound})")
        check_arena(compiled, arena_budget)
        if not board.is_host:
            project.check_manifest_fits(compiled.manifest, board, where, widened_weight_bytes(compiled))
        test_inputs = None if agent else [inputs[n] for n in compiled.graph.inputs]
        project.generate(Path(tmp), board, project_dir, test_inputs, emulated=emulate, trace=trace, agent=agent,
                         arena_region=arena_region, weights_region=weights_region)
        if qgraph is not None:   # keep the quantized model the firmware was built from, next to it
            model_path = _save_quantized(qgraph, project_dir, Path(model_path), progress) or model_path
    sizes = _build_with_bar(project_dir, progress)
    if flash_budget is not None and not board.is_host and sizes.flash > flash_budget:
        progress(f"[build] note: flash {sizes.flash} B is over --flash-budget {flash_budget} B "
                 f"({len(compiled.widened)} kernel(s) with int16 weights, chosen against an estimate of the "
                 f"code)")
    if agent:
        progress(f"[build] agent firmware, build id {project.read_marker(project_dir)['build_id']}")
    fit = None
    if not board.is_host:
        platform = "twin" if emulate else "board"
        fit = project.fit_report(project_dir / "firmware.elf", board, where, project_dir / "build" / platform,
                                 widened_weight_bytes(compiled))
        if not fit.fits:
            raise project.FitError(fit, compiled.manifest["model"])
    return Built(board, compiled, inputs, sizes, fit, project_dir, Path(model_path))


def check_arena(compiled: Compiled, budget: int | None) -> None:
    """ArenaBudgetError when `compiled` plans a larger arena than `budget` bytes (None: no bound)."""
    if budget is not None and compiled.plan.arena_bytes > budget:
        raise ArenaBudgetError(f"arena {compiled.plan.arena_bytes:,} bytes is over the arena budget of "
                               f"{budget:,} bytes", hint="--arena-budget BYTES (or none) allows more")


def deploy(model_path: str | Path, board_name: str | Board, project_dir: str | Path, *, emulate: bool = False,
           input_path=None, progress: Progress = print,
           dump_ir: Callable[[str, Graph], None] | None = None, trace: bool = False,
           quantize: str | None = None, calibration=None, input_shapes: dict | None = None,
           arena_region: str | None = None, weights_region: str | None = None, probe: str | None = None,
           agent: bool = False, port: str | None = None, timeout: float = 10.0,
           flash_budget: int | None = None, activations: str = "int8",
           records=None) -> DeployResult:
    """Compile, build, check the fit, run once (QEMU twin, host) or flash (real board) and compare
    the outputs with the reference interpreter.
    `trace` builds the trace firmware, which also prints every kernel's outputs
    (see verify_layers). `quantize="int8"` first quantizes the float model on the
    `calibration` samples (see build_firmware; activations="int16" for 16x8). `agent` builds
    the agent firmware instead of the self-test and runs the input over the serial protocol
    (QEMU socket, or `port`). `flash_budget`: see build_firmware."""
    board = load_board(board_name) if isinstance(board_name, str) else board_name
    _check_target(board, emulate, port, agent)
    built = build_firmware(model_path, board, project_dir, emulate=emulate, input_path=input_path,
                           progress=progress, dump_ir=dump_ir, trace=trace, quantize=quantize,
                           calibration=calibration, input_shapes=input_shapes, arena_region=arena_region,
                           weights_region=weights_region, agent=agent, flash_budget=flash_budget,
                           activations=activations, records=records)
    compiled, inputs, project_dir = built.compiled, built.inputs, built.project_dir
    if agent:
        with open_session(project_dir, board, emulate=emulate, port=port, timeout=timeout, probe=probe,
                          progress=progress) as session:
            outs = session.run([inputs[n] for n in compiled.graph.inputs])
            run = _agent_run_result(session, [o.numpy() for o in outs])
        return _deploy_result(built, emulate, run, inputs)
    if board.is_host:
        run = project.run_host(project_dir)
    elif emulate:
        progress(f"[run] {board.name} on QEMU {board.emulator.machine}")
        run = project.run_emulated(project_dir, board)
        built.fit.stack_measured = run.stack_bytes
    else:
        project.flash(project_dir, board, probe=probe, progress=progress)
        raise DeviceError("flashed the self-test firmware, which prints its result on the console UART "
                          f"({board.console.get('uart', 'console')}) as MC-OUTPUT lines",
                          hint="to read results back from the host, deploy with --agent (or use "
                               "`microcompile run`), which talks to the board over its serial port")
    return _deploy_result(built, emulate, run, inputs)


def _deploy_result(built: Built, emulate: bool, run, inputs) -> DeployResult:
    compiled, board, sizes, project_dir = built.compiled, built.board, built.sizes, built.project_dir
    model_path = built.model_path
    reference = interp.run(compiled.graph, inputs)
    outputs = {name: run.outputs[i] for i, name in enumerate(compiled.graph.outputs)}
    comparisons = {name: compare(outputs[name], reference[name]) for name in compiled.graph.outputs}
    report = {
        "model": Path(model_path).stem,
        "board": board.name,
        "emulated": bool(emulate),
        "verified": all(c.equal for c in comparisons.values()),
        "arena_bytes": compiled.plan.arena_bytes,
        "state_bytes": compiled.plan.state_bytes,
        "weights_bytes": compiled.manifest["weights_bytes"],
        "flash_bytes": sizes.flash,
        "ram_bytes": sizes.ram,
        "sections": sizes.sections,
        **memory_report.report_keys(compiled, sizes, project_dir, built.fit),
        "instructions": run.instructions,
        **({"cycles": run.ticks} if getattr(run, "unit", None) == "cycles" else {}),
        "macs": sum(k["macs"] for k in compiled.manifest["kernels"]),
        "layers": _layers(compiled, run),
        "outputs": {name: c.to_json() for name, c in comparisons.items()},
        "project_dir": str(project_dir),
        "fit": built.fit.to_json() if built.fit is not None else None,
    }
    return DeployResult(report, outputs, comparisons, project_dir, compiled, inputs, run, built.fit)


@dataclass
class VerifyResult:
    report: dict           # "verified", "layers" (LayerRow.to_json), "tflite_compared", ...
    rows: list             # verify_layers.LayerRow, one per compiled layer output
    table: str             # the text table the CLI prints
    deploy: DeployResult


def verify_layers(model_path: str | Path, board_name: str, project_dir: str | Path, *, emulate: bool = False,
                  input_path=None, progress: Progress = print, port: str | None = None,
                  timeout: float = 10.0) -> VerifyResult:
    """Compare every layer's device tensor with our reference interpreter and with LiteRT's
    reference kernels (when installed). `verified` is True only when every layer (and so every
    output) matches both. On a board (QEMU twin or `port`) the tensors are read over the agent;
    the host board runs a trace build once, which prints them."""
    board = load_board(board_name)
    _check_target(board, emulate, port)
    if not board.is_host:
        return _verify_over_agent(model_path, board, Path(project_dir), emulate=emulate, port=port,
                                  input_path=input_path, timeout=timeout, progress=progress)

    result = deploy(model_path, board_name, project_dir, emulate=emulate, input_path=input_path,
                    progress=progress, trace=True)
    manifest = project.load_manifest(result.project_dir)
    traced = [(e.kernel, e.output, a) for e, a in zip(project.trace_entries(manifest),
                                                      project.parse_trace(result.run.console, manifest))]
    return _verify_result(model_path, result, traced, emulate, progress)


def _verify_result(model_path, result: DeployResult, traced: list, emulate: bool, progress: Progress) -> VerifyResult:
    """Compare the device's kernel outputs `traced` [(kernel, output, array)] layer by layer."""
    from . import verify_layers as vl
    from .ir.summary import format_pass_effects, pass_effects

    compiled, inputs = result.compiled, result.inputs
    kernel_nodes = [n for n, _, _ in compiled.kernels]
    device = vl.device_tensors(compiled.graph, kernel_nodes, traced, inputs)
    progress("[verify] comparing every layer with the reference interpreter and LiteRT BUILTIN_REF")
    tflite = vl.tflite_tensors(model_path, inputs)
    rows = vl.compare_layers(compiled.graph, kernel_nodes, device, inputs, tflite)
    source = load_model(model_path)
    effects = format_pass_effects(pass_effects(source, compiled.graph), len(source.nodes), len(compiled.graph.nodes))
    table = vl.format_layer_table(rows, tflite is not None) + ("\n" + effects if effects else "")
    verified = result.report["verified"] and all(r.equal for r in rows)
    report = {"model": result.report["model"], "board": result.report["board"], "emulated": bool(emulate),
              "verified": verified, "tflite_compared": tflite is not None,
              "layers": [r.to_json() for r in rows], "outputs": result.report["outputs"],
              "project_dir": str(result.project_dir)}
    return VerifyResult(report, rows, table, result)


def _layers(compiled: Compiled, run) -> list[dict]:
    """Report rows per layer; "instructions" is the layer's kernel (MC-KERNEL lines; 0 for view
    ops, which have no kernel; None natively, where ticks are not instructions)."""
    per_kernel = run.kernel_instructions
    by_node = ({n.name: per_kernel[k] for k, (n, _, _) in enumerate(compiled.kernels)}
               if per_kernel and len(per_kernel) == len(compiled.kernels) else None)
    return [{"name": r["name"], "op": r["op"], "macs": r["macs"],
             "instructions": by_node.get(r["name"], 0) if by_node is not None else None}
            for r in layer_table(compiled.graph)]


def write_report(report: dict, path: str | Path) -> None:
    """Write the JSON report atomically (missing parent directories are created)."""
    write_file(path, (json.dumps(report, indent=2, sort_keys=True) + "\n").encode(), "report")


@dataclass
class QuantizeResult:
    quantized: object      # quantize.Quantized: the int8 graph, the float graph, per-layer SQNR
    method: str
    output_path: Path | None


def quantize_model(model_path: str | Path, calibration_path: str | Path, output_path: str | Path | None = None, *,
                   method: str | None = None, io: str = "float32", keep_float=(), report: bool = True,
                   progress: bool = True, input_shapes: dict | None = None,
                   activations: str = "int8") -> QuantizeResult:
    """Post-training quantization of a float32 .tflite/.onnx model to int8 (16x8 with
    activations="int16"), calibrated on the samples in `calibration_path`; writes a .tflite
    (our writer) when `output_path` is given."""
    from . import quantize as qz
    from .frontend.tflite.writer import write_tflite

    if output_path is not None:
        check_output_file(output_path, "output model")
        if Path(output_path).suffix.lower() != ".tflite":
            raise UserError(f"cannot write {output_path}: quantized models are saved as .tflite",
                            hint="name the output model_int8.tflite (it reloads in microcompile and opens in Netron)")
    # Fuse activations, fold batch-norm and constants first: TFLite quantizes the fused graph.
    graph = pipeline.run(load_model(model_path, input_shapes=input_shapes), passes=pipeline.BEFORE_QUANTIZE)
    samples = qz.load_calibration(calibration_path, graph)
    method = method or qz.DEFAULT_METHOD
    result = qz.quantize(graph, samples, method=method, io=io, keep_float=tuple(keep_float), report=report,
                         progress=progress, activations=activations)
    if output_path is not None:
        scheme = "16x8" if activations == "int16" else "int8"
        try:
            data = write_tflite(result.graph, description=f"microcompile PTQ {scheme} ({method})")
        except ValueError as e:
            raise UserError(f"cannot save the quantized model as .tflite: {e}",
                            hint="the model needs an op or padding TFLite cannot express") from None
        write_file(output_path, data, "output model")
    return QuantizeResult(result, method, Path(output_path) if output_path else None)


def _quantize_for_deploy(model_path, scheme: str, calibration, progress: Progress,
                         input_shapes: dict | None = None, activations: str = "int8") -> Graph:
    """The quantized graph, in memory: no round trip through a .tflite that may not hold it."""
    if scheme != "int8":
        raise UserError(f"unknown --quantize {scheme!r}", hint="the only scheme is int8 (with --activations int16: 16x8)")
    if calibration is None:
        raise UserError("--quantize int8 needs --calibration", hint="pass a .npz/.npy of input samples or a directory")
    progress(f"[quantize] {model_path} ({'16x8' if activations == 'int16' else 'int8'})")
    result = quantize_model(model_path, calibration, None, report=False, input_shapes=input_shapes,
                            activations=activations)
    return result.quantized.graph


def _save_quantized(qgraph: Graph, project_dir: Path, model_path: Path, progress: Progress) -> Path | None:
    """Write the quantized graph as .tflite next to the project; None (and a note) when the
    TFLite format cannot express it: the firmware is built from the graph either way."""
    from .frontend.tflite.writer import write_tflite

    suffix = "16x8" if any(t.dtype == "int16" and not t.is_const for t in qgraph.tensors.values()) else "int8"
    out = project_dir / f"{model_path.stem}_{suffix}.tflite"
    try:
        data = write_tflite(qgraph, description=f"microcompile PTQ {suffix}")
    except ValueError as e:
        progress(f"[quantize] not saved as .tflite ({e}); the firmware was compiled from the quantized graph")
        return None
    return write_file(out, data, "quantized model")


# ---- the host agent: run, profile and verify over the serial protocol ----------------------

def _check_target(board: Board, emulate: bool, port: str | None, agent: bool = True) -> None:
    """Refuse impossible targets before anything is built; on a real board, find its serial
    port first (a missing board is reported before a minute of compiling)."""
    if emulate and port:
        raise UserError("--emulate and --port exclude each other", hint="use --emulate for QEMU, --port for a board")
    if emulate and board.emulator is None and not board.is_host:
        raise UserError(f"board {board.name} has no emulated twin",
                        hint="drop --emulate to flash it, or pick a board listed by `microcompile boards` with a twin")
    if port and board.is_host:
        raise UserError("the host board has no serial port", hint="drop --port")
    if agent and not emulate and not board.is_host:
        _serial_port(board, port)


def _bar(total, desc: str, unit: str = "it"):
    """A tqdm progress bar on stderr; silent when stderr is not a terminal."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=None, leave=False, file=sys.stderr)


def _build_with_bar(project_dir: Path, progress: Progress, platform: str | None = None):
    sources = len([p for p in project_dir.rglob("*.c") if "build" not in p.relative_to(project_dir).parts])
    with _bar(sources, "build", "file") as bar:
        def step(line: str) -> None:
            if line.startswith("[build] CC"):
                bar.update(1)
            elif bar.disable:
                progress(line)
            else:
                bar.write(line, file=sys.stderr)
        sizes = project.build(project_dir, progress=step, platform=platform)
        bar.update(bar.total - bar.n)
    return sizes


def _serial_port(board: Board, port: str | None) -> str:
    from .device import UsbId, find_serial_ports

    if port:
        # A device path that is not there is found now, not after a minute of building
        # (pyserial URLs such as socket://host:port or rfc2217://... are left to pyserial).
        if "://" not in port and not Path(port).exists():
            raise DeviceError(f"serial port {shown(port, 200)} does not exist",
                              hint="check the name (`python -m serial.tools.list_ports` lists the ports), "
                                   "or drop --port to find the board by its USB id")
        return port
    probe = board.probe
    ids = [UsbId(probe.usb_vid, probe.usb_pid)] if probe and probe.usb_vid is not None else []
    if not ids:
        raise DeviceError(f"board {board.name} lists no USB id to find its serial port by",
                          hint="pass --port (e.g. /dev/ttyACM0), or --emulate for its QEMU twin")
    found = find_serial_ports(ids)
    if not found:
        raise DeviceError(f"no serial port with USB id {', '.join(map(str, ids))} ({board.name}) is connected",
                          hint="plug the board in (its ST-LINK USB port), or pass --port; --emulate runs its twin")
    if len(found) > 1:
        raise DeviceError(f"several {board.name} boards are connected: {', '.join(found)}",
                          hint="choose one with --port")
    return found[0]


@contextmanager
def open_session(project_dir: str | Path, board: Board | str, *, emulate: bool = False, port: str | None = None,
                 timeout: float = 10.0, probe: str | None = None, progress: Progress = print):
    """A device.Session with the project's agent firmware running: a host process, the QEMU twin
    (always stopped on leaving), or the board on its serial port, flashed first when it does
    not run this build. The session checks the build id."""
    from .device import BuildIdMismatch, DeviceTimeout, PipeTransport, SerialTransport, Session, SocketTransport

    board = load_board(board) if isinstance(board, str) else board
    project_dir = Path(project_dir)
    build_id = project.read_marker(project_dir).get("build_id")
    if board.is_host:
        with project.host_agent(project_dir) as proc:
            with Session(PipeTransport(proc.stdin, proc.stdout), timeout=timeout, expect_build_id=build_id) as s:
                s.open()
                yield s
        return
    if emulate:
        progress(f"[run] {board.name} on QEMU {board.emulator.machine} (agent on a socket)")
        with project.qemu_agent(project_dir, board) as sock:
            with Session(SocketTransport(sock, f"QEMU {board.emulator.machine}"), timeout=timeout,
                         expect_build_id=build_id) as s:
                s.open()
                yield s
        return
    port = _serial_port(board, port)
    baud = int(board.console.get("baud", 115200))
    session = Session(SerialTransport(port, baud), timeout=min(timeout, 3.0), expect_build_id=build_id)
    try:
        try:
            session.open()
            progress(f"[run] {board.name} on {port} already runs build {build_id}")
        except (BuildIdMismatch, DeviceTimeout) as e:
            session.close()
            progress(f"[flash] {board.name} on {port}: {e.message.split(':')[0]}; flashing")
            with _bar(None, "flash", "step"):
                project.flash(project_dir, board, probe=probe, progress=progress)
            session = Session(SerialTransport(port, baud), timeout=timeout, expect_build_id=build_id)
            session.open()
        session.timeout = timeout
        yield session
    finally:
        session.close()


@dataclass
class AgentRun:
    """What deploy reports of one inference over the agent (the fields of project.RunResult it reads)."""

    outputs: list[np.ndarray]
    ticks: int
    unit: str
    instructions: int | None
    kernel_instructions: list[int] | None = None


def _agent_run_result(session, outputs: list[np.ndarray]) -> AgentRun:
    info = session.info()
    count = info.to_units(session.last_ticks)
    return AgentRun(outputs, count, info.unit, count if info.unit == "instructions" else None)


def _batch(graph: Graph, input_path, repeat: int | None) -> list[dict[str, np.ndarray]]:
    """One input dict per sample: the single input of load_inputs, or the first `repeat` samples of
    a batch file ([N, ...] with the model's shape, or with its leading 1 replaced by N)."""
    if not repeat:
        return [load_inputs(graph, input_path)]
    if input_path is None:
        raise UserError("--repeat needs --input with a batch of samples", hint="np.save('x.npy', batch)")
    path = Path(input_path)
    loaded = load_arrays(path, "input file")
    names = list(graph.inputs)
    arrays = {names[0]: loaded} if isinstance(loaded, np.ndarray) and len(names) == 1 else \
        (loaded if not isinstance(loaded, np.ndarray) else None)
    if arrays is None:
        raise UserError(f"{path} holds one array but the model has {len(names)} inputs",
                        hint="pass a .npz with one batch per input name: " + ", ".join(names))
    samples = [dict() for _ in range(repeat)]
    for name in names:
        t = graph.tensors[name]
        if name not in arrays:
            raise UserError(f"{path} has no array named {name!r}",
                            hint=f"arrays found: {', '.join(shown(k) for k in arrays)}")
        a = arrays[name]
        want = np.dtype(NP_DTYPES[t.dtype])
        shape = tuple(t.shape)
        if a.ndim == len(shape) + 1 and tuple(a.shape[1:]) == shape:
            batch = a
        elif shape and shape[0] == 1 and tuple(a.shape[1:]) == shape[1:]:
            batch = a.reshape((a.shape[0],) + shape)
        else:
            raise UserError(f"input {name!r} in {path} is {list(a.shape)}; --repeat wants a batch "
                            f"[N, {', '.join(map(str, shape[1:] if shape and shape[0] == 1 else shape))}]")
        if a.dtype != want:
            raise UserError(f"input {name!r} in {path} is {a.dtype}, the model takes {want}")
        if batch.shape[0] < repeat:
            raise UserError(f"--repeat {repeat} but {path} holds {batch.shape[0]} samples of {name!r}",
                            hint=f"use --repeat {batch.shape[0]} or fewer")
        for k in range(repeat):
            samples[k][name] = batch[k]
    for sample in samples:
        check_finite_inputs(sample, path)
    return samples


@dataclass
class RunModelResult:
    report: dict
    outputs: dict[str, np.ndarray]      # stacked over the samples when repeat is given
    project_dir: Path


def run_model(model_path: str | Path, board_name: str, project_dir: str | Path, *, emulate: bool = False,
              port: str | None = None, input_path=None, repeat: int | None = None, labels_path=None,
              timeout: float = 10.0, progress: Progress = print, records=None) -> RunModelResult:
    """Build (or reuse) the agent firmware, start the twin or flash the board, run one input or
    `repeat` inputs of a batch over one session, and compare each with the reference interpreter.
    With `labels_path` (class indices, or one-hot rows) the report has the top-1 accuracy."""
    board = load_board(board_name)
    _check_target(board, emulate, port)
    if repeat and input_path is None:      # before a minute of building
        raise UserError("--repeat needs --input with a batch of samples", hint="np.save('x.npy', batch)")
    project_dir = Path(project_dir)
    built = build_firmware(model_path, board, project_dir, emulate=emulate, progress=progress, agent=True,
                           records=records)
    compiled, sizes, model_path = built.compiled, built.sizes, built.model_path
    samples = _batch(compiled.graph, input_path, repeat)
    labels = _labels(labels_path, len(samples)) if labels_path is not None else None
    names = list(compiled.graph.outputs)
    got: dict[str, list] = {n: [] for n in names}
    agree, top1_agree, correct, ticks = 0, 0, 0, []
    comparisons = {}
    with open_session(project_dir, board, emulate=emulate, port=port, timeout=timeout, progress=progress) as session:
        info = session.info()
        for k, sample in enumerate(_iter_bar(samples, "run", "inference")):
            outs = session.run([sample[n] for n in compiled.graph.inputs])
            ticks.append(info.to_units(session.last_ticks))
            reference = interp.run(compiled.graph, sample)
            comparisons = {n: compare(outs[i].numpy(), reference[n]) for i, n in enumerate(names)}
            agree += all(c.equal for c in comparisons.values())
            first = outs[0].numpy()
            top1_agree += int(np.argmax(first) == np.argmax(reference[names[0]]))
            if labels is not None:
                correct += int(np.argmax(first) == labels[k])
            for i, n in enumerate(names):
                got[n].append(outs[i].numpy())
    n = len(samples)
    outputs = {name: (np.stack(v) if repeat else v[0]) for name, v in got.items()}
    report = {"model": Path(model_path).stem, "board": board.name, "emulated": bool(emulate),
              "samples": n, "verified": agree == n, "agreement": agree / n, "top1_agreement": top1_agree / n,
              "unit": info.unit, "count_per_inference": int(np.median(ticks)),
              "build_id": info.build_id, "arena_bytes": compiled.plan.arena_bytes,
              "flash_bytes": sizes.flash, "ram_bytes": sizes.ram, "project_dir": str(project_dir)}
    if n == 1:
        report["outputs"] = {name: c.to_json() for name, c in comparisons.items()}
    if labels is not None:
        report["top1_accuracy"] = correct / n
    return RunModelResult(report, outputs, project_dir)


def _iter_bar(items, desc: str, unit: str):
    with _bar(len(items), desc, unit) as bar:
        for item in items:
            yield item
            bar.update(1)


def _labels(path, n: int) -> np.ndarray:
    y = load_arrays(path, "labels file")
    if not isinstance(y, np.ndarray) or y.ndim not in (1, 2) or y.shape[0] < n:
        raise UserError(f"labels {path} must hold at least {n} class indices [N] or one-hot rows [N, C]",
                        hint="np.save('y.npy', np.array(labels))")
    return (np.argmax(y, axis=1) if y.ndim == 2 else y)[:n].astype(np.int64)


@dataclass
class ProfileResult:
    report: dict            # exactly {"unit", "total", "layers": [{"name", "op", "macs", "count"}]}
    rows: list              # profile_report.ProfileRow, one per kernel
    unit: str
    total: int              # the profiled run (hooks included)
    plain_total: int        # the same input without the hooks: comparable with deploy's instructions
    sizes: object
    arena_bytes: int
    project_dir: Path


def profile_model(model_path: str | Path, board_name: str, project_dir: str | Path, *, emulate: bool = False,
                  port: str | None = None, input_path=None, timeout: float = 10.0,
                  progress: Progress = print, records=None) -> ProfileResult:
    """Per-kernel counts of one inference over the agent: one run without the hooks (the total
    `deploy` reports), one with them (per kernel), on the same input."""
    from . import profile_report

    board = load_board(board_name)
    _check_target(board, emulate, port)
    project_dir = Path(project_dir)
    built = build_firmware(model_path, board, project_dir, emulate=emulate, progress=progress, agent=True,
                           records=records)
    compiled, sizes = built.compiled, built.sizes
    inputs = load_inputs(compiled.graph, input_path)
    ordered = [inputs[n] for n in compiled.graph.inputs]
    with open_session(project_dir, board, emulate=emulate, port=port, timeout=timeout, progress=progress) as session:
        info = session.info()
        session.run(ordered)
        plain = info.to_units(session.last_ticks)
        prof = session.profile(ordered)
    rows = profile_report.rows(compiled, prof.counts)
    report = profile_report.to_json(prof.unit, prof.total, rows)
    return ProfileResult(report, rows, prof.unit, prof.total, plain, sizes, compiled.plan.arena_bytes, project_dir)


def _verify_over_agent(model_path, board: Board, project_dir: Path, *, emulate: bool, port: str | None,
                       input_path, timeout: float, progress: Progress) -> VerifyResult:
    """verify_layers on the agent firmware: every kernel's outputs read with GET_TENSOR."""
    built = build_firmware(model_path, board, project_dir, emulate=emulate, progress=progress, agent=True)
    compiled = built.compiled
    inputs = load_inputs(compiled.graph, input_path)
    ordered = [inputs[n] for n in compiled.graph.inputs]
    traced = []
    with open_session(project_dir, board, emulate=emulate, port=port, timeout=timeout, progress=progress) as session:
        outs = session.run(ordered)
        run = _agent_run_result(session, [o.numpy() for o in outs])
        entries = project.trace_entries(project.load_manifest(project_dir))
        for e in _iter_bar(entries, "read tensors", "tensor"):
            traced.append((e.kernel, e.output, session.tensor(e.spec["name"], ordered).numpy()))
    result = _deploy_result(built, emulate, run, inputs)
    return _verify_result(built.model_path, result, traced, emulate, progress)
