"""The only module that wires the stages together.

    compile_model: file -> Graph -> passes -> lowered + scheduled kernels -> memory plan -> C artifact
    deploy:        compile_model -> project -> build -> run (QEMU / host) or flash -> verify -> report
"""

from __future__ import annotations

import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from . import project
from .codegen import emit_artifact
from .errors import DeviceError, UserError
from .frontend import load_model
from .ir import Graph, NP_DTYPES, ops
from .reference import interp
from .ir.compare import Comparison, compare
from .ir.summary import layer_table
from .lower import lower_node
from .memory import MemoryPlan, plan_memory
from .schedule import default_schedule
from .target import Board, load_board
from .transform import pipeline

Progress = Callable[[str], None]


@dataclass
class Compiled:
    graph: Graph
    plan: MemoryPlan
    manifest: dict
    kernels: list = field(default_factory=list)   # (node, scheduled PrimFunc, trace)


def compile_model(model_path: str | Path, board: Board, artifact_dir: Path,
                  dump_ir: Callable[[str, Graph], None] | None = None, input_shapes: dict | None = None) -> Compiled:
    """Import, optimize, lower, schedule, plan and emit C for `model_path` into `artifact_dir`.
    `input_shapes` pins dynamic ONNX input dimensions (--input-shape)."""
    graph = pipeline.run(load_model(model_path, input_shapes=input_shapes), dump=dump_ir)
    kernels = []
    for node in graph.nodes:
        if ops.get(node.op).is_view:
            continue   # reshape: the memory plan aliases its buffer, no code at all
        func, trace = default_schedule(lower_node(graph, node, board.target), board.target)
        kernels.append((node, func, trace))
    plan = plan_memory(graph, scratch={n.name: f.scratch_bytes for n, f, _ in kernels if f.scratch_bytes})
    manifest = emit_artifact(graph, [(n, f) for n, f, _ in kernels], plan, artifact_dir,
                             traces=[t for _, _, t in kernels])
    return Compiled(graph, plan, manifest, kernels)


def deterministic_input(shape, dtype: str) -> np.ndarray:
    """BENCHMARK.md's input: int8 x[i] = (i*7 + 3) % 256 - 128; float models use the same / 128."""
    i = np.arange(int(np.prod(shape)), dtype=np.int64)
    x = ((i * 7 + 3) % 256 - 128).astype(np.int8)
    return (x.astype(np.float32) / 128 if dtype == "float32" else x.astype(NP_DTYPES[dtype])).reshape(shape)


def load_inputs(graph: Graph, input_path: str | Path | None) -> dict[str, np.ndarray]:
    """The model inputs: from a .npy (one input) / .npz (by name), or the deterministic pattern."""
    specs = [graph.tensors[name] for name in graph.inputs]
    if input_path is None:
        return {t.name: deterministic_input(t.shape, t.dtype) for t in specs}
    path = Path(input_path)
    try:
        loaded = np.load(path, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise UserError(f"cannot read input file {path}: {e}", hint="save the input with numpy.save(path, array)") from None
    if isinstance(loaded, np.ndarray):
        if len(specs) != 1:
            raise UserError(f"{path} holds one array but the model has {len(specs)} inputs",
                            hint="pass a .npz with one array per input name: " + ", ".join(t.name for t in specs))
        arrays = {specs[0].name: loaded}
    else:
        arrays = {k: loaded[k] for k in loaded.files}
    out = {}
    for t in specs:
        if t.name not in arrays:
            raise UserError(f"{path} has no array named {t.name!r}", hint=f"arrays found: {', '.join(arrays)}")
        a = arrays[t.name]
        want = np.dtype(NP_DTYPES[t.dtype])
        if tuple(a.shape) != tuple(t.shape) or a.dtype != want:
            raise UserError(f"input {t.name!r} in {path} is {a.dtype}{list(a.shape)}, "
                            f"but the model expects {want}{list(t.shape)}",
                            hint=f"convert it, e.g. np.save(path, x.reshape({tuple(t.shape)}).astype(np.{want}))")
        out[t.name] = a
    return out


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
                   arena_region: str | None = None, weights_region: str | None = None) -> Built:
    """Compile `model_path` for `board`, write and build its project, and check that it fits
    (project.FitError, with what does not fit and what would help, when it does not).
    `arena_region` / `weights_region` move the arena / the weights to another memory bank."""
    board = load_board(board) if isinstance(board, str) else board
    if emulate and board.emulator is None and not board.is_host:
        raise UserError(f"board {board.name} has no emulated twin",
                        hint="drop --emulate to flash it, or pick a board listed by `microcompile boards` with a twin")
    where = project.placement(board, arena_region, weights_region, emulated=emulate)
    project_dir = Path(project_dir)
    with tempfile.TemporaryDirectory(prefix="microcompile-") as tmp:
        if quantize is not None:
            model_path = _quantize_for_deploy(model_path, quantize, calibration, Path(tmp) / "quantized", progress,
                                              input_shapes)
            input_shapes = None   # pinned in the quantized .tflite
        progress(f"[compile] {model_path}")
        compiled = compile_model(model_path, board, Path(tmp), dump_ir, input_shapes=input_shapes)
        inputs = load_inputs(compiled.graph, input_path)
        progress(f"[compile] {len(compiled.kernels)} kernels, arena {compiled.plan.arena_bytes} bytes")
        if not board.is_host:
            project.check_manifest_fits(compiled.manifest, board, where, widened_weight_bytes(compiled))
        project.generate(Path(tmp), board, project_dir, [inputs[n] for n in compiled.graph.inputs],
                         emulated=emulate, trace=trace, arena_region=arena_region, weights_region=weights_region)
        if quantize is not None:   # keep the int8 model the firmware was built from, next to it
            model_path = Path(shutil.copy(model_path, project_dir / Path(model_path).name))
    sizes = project.build(project_dir, progress=progress)
    fit = None
    if not board.is_host:
        platform = "twin" if emulate else "board"
        fit = project.fit_report(project_dir / "firmware.elf", board, where, project_dir / "build" / platform,
                                 widened_weight_bytes(compiled))
        if not fit.fits:
            raise project.FitError(fit, compiled.manifest["model"])
    return Built(board, compiled, inputs, sizes, fit, project_dir, Path(model_path))


def deploy(model_path: str | Path, board_name: str | Board, project_dir: str | Path, *, emulate: bool = False,
           input_path=None, progress: Progress = print,
           dump_ir: Callable[[str, Graph], None] | None = None, trace: bool = False,
           quantize: str | None = None, calibration=None, input_shapes: dict | None = None,
           arena_region: str | None = None, weights_region: str | None = None,
           probe: str | None = None) -> DeployResult:
    """Compile, build, check the fit, run once (QEMU twin, host) or flash (real board) and compare
    the outputs with the reference interpreter.
    `trace` builds the trace firmware, which also prints every kernel's outputs
    (see verify_layers). `quantize="int8"` first quantizes the float model on the
    `calibration` samples (see quantize_model), deploys that int8 model and leaves it in
    project_dir/<model>_int8.tflite."""
    built = build_firmware(model_path, board_name, project_dir, emulate=emulate, input_path=input_path,
                           progress=progress, dump_ir=dump_ir, trace=trace, quantize=quantize,
                           calibration=calibration, input_shapes=input_shapes, arena_region=arena_region,
                           weights_region=weights_region)
    board, compiled, inputs, sizes, project_dir = built.board, built.compiled, built.inputs, built.sizes, built.project_dir
    model_path = built.model_path
    if board.is_host:
        run = project.run_host(project_dir)
    elif emulate:
        progress(f"[run] {board.name} on QEMU {board.emulator.machine}")
        run = project.run_emulated(project_dir, board)
        built.fit.stack_measured = run.stack_bytes
    else:
        project.flash(project_dir, board, probe=probe, progress=progress)
        raise DeviceError("flashed, but reading results back from a real board needs the serial host agent, "
                          "which is not implemented yet",
                          hint=f"watch the board's console UART ({board.console.get('uart', 'console')}) "
                               "for the MC-OUTPUT lines, or use --emulate")
    reference = interp.run(compiled.graph, inputs)
    outputs = {name: run.outputs[i] for i, name in enumerate(compiled.graph.outputs)}
    comparisons = {name: compare(outputs[name], reference[name]) for name in compiled.graph.outputs}
    report = {
        "model": Path(model_path).stem,
        "board": board.name,
        "emulated": bool(emulate),
        "verified": all(c.equal for c in comparisons.values()),
        "arena_bytes": compiled.plan.arena_bytes,
        "weights_bytes": compiled.manifest["weights_bytes"],
        "flash_bytes": sizes.flash,
        "ram_bytes": sizes.ram,
        "sections": sizes.sections,
        "instructions": run.instructions,
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
                  input_path=None, progress: Progress = print) -> VerifyResult:
    """Run a trace build once and compare every layer's device tensor with our reference
    interpreter and with LiteRT's reference kernels (when installed). `verified` is True
    only when every layer (and so every output) matches both."""
    from . import verify_layers as vl
    from .ir.summary import format_pass_effects, pass_effects

    result = deploy(model_path, board_name, project_dir, emulate=emulate, input_path=input_path,
                    progress=progress, trace=True)
    compiled, inputs = result.compiled, result.inputs
    manifest = project.load_manifest(result.project_dir)
    traced = [(e.kernel, e.output, a) for e, a in zip(project.trace_entries(manifest),
                                                      project.parse_trace(result.run.console, manifest))]
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
    Path(path).write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")


@dataclass
class QuantizeResult:
    quantized: object      # quantize.Quantized: the int8 graph, the float graph, per-layer SQNR
    method: str
    output_path: Path | None


def quantize_model(model_path: str | Path, calibration_path: str | Path, output_path: str | Path | None = None, *,
                   method: str | None = None, io: str = "float32", keep_float=(), report: bool = True,
                   progress: bool = True, input_shapes: dict | None = None) -> QuantizeResult:
    """Post-training quantization of a float32 .tflite/.onnx model to int8, calibrated on the
    samples in `calibration_path`; writes a .tflite (our writer) when `output_path` is given."""
    from . import quantize as qz
    from .frontend.tflite.writer import write_tflite

    if output_path is not None and Path(output_path).suffix.lower() != ".tflite":
        raise UserError(f"cannot write {output_path}: quantized models are saved as .tflite",
                        hint="name the output model_int8.tflite (it reloads in microcompile and opens in Netron)")
    # Fuse activations, fold batch-norm and constants first: TFLite quantizes the fused graph.
    graph = pipeline.run(load_model(model_path, input_shapes=input_shapes))
    samples = qz.load_calibration(calibration_path, graph)
    method = method or qz.DEFAULT_METHOD
    result = qz.quantize(graph, samples, method=method, io=io, keep_float=tuple(keep_float), report=report,
                         progress=progress)
    if output_path is not None:
        try:
            data = write_tflite(result.graph, description=f"microcompile PTQ int8 ({method})")
        except ValueError as e:
            raise UserError(f"cannot save the quantized model as .tflite: {e}",
                            hint="the model needs an op or padding TFLite cannot express") from None
        Path(output_path).parent.mkdir(parents=True, exist_ok=True)
        Path(output_path).write_bytes(data)
    return QuantizeResult(result, method, Path(output_path) if output_path else None)


def _quantize_for_deploy(model_path, scheme: str, calibration, out_dir: Path, progress: Progress,
                         input_shapes: dict | None = None) -> Path:
    if scheme != "int8":
        raise UserError(f"unknown --quantize {scheme!r}", hint="the only scheme is int8")
    if calibration is None:
        raise UserError("--quantize int8 needs --calibration", hint="pass a .npz/.npy of input samples or a directory")
    out = out_dir / f"{Path(model_path).stem}_int8.tflite"
    progress(f"[quantize] {model_path} -> {out}")
    quantize_model(model_path, calibration, out, report=False, input_shapes=input_shapes)
    return out
