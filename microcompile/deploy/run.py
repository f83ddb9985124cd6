"""Running a built firmware and checking it: the self-test (once, on the host, the QEMU twin,
or flashed), inferences and profiles over the agent, and verify's layer-by-layer comparison.
Every result carries the report dict the CLI writes with --report."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .. import project
from ..errors import DeviceError
from ..escape import say
from ..progress import progress_bar
from ..ir.compare import Comparison, compare
from ..ir.summary import layer_table
from ..reference import interp
from ..report import memory as memory_report
from .build import Built
from .options import Link
from .session import open_session

Progress = Callable[[str], None]


@dataclass
class AgentRun:
    """One inference over the agent, with the fields of project.RunResult a report reads."""

    outputs: list[np.ndarray]
    ticks: int
    unit: str
    instructions: int | None
    kernel_instructions: list[int] | None = None


def agent_run(session, outputs: list[np.ndarray]) -> AgentRun:
    info = session.info()
    count = info.to_units(session.last_ticks)
    return AgentRun(outputs, count, info.unit, count if info.unit == "instructions" else None)


@dataclass
class DeployResult:
    """One inference of a built firmware compared with the reference interpreter."""

    report: dict
    outputs: dict[str, np.ndarray]
    comparisons: dict[str, Comparison]
    built: Built
    run: object = None                    # project.RunResult or AgentRun
    inputs: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def verified(self) -> bool:
        return self.report["verified"]

    @property
    def fit(self):
        return self.built.fit

    @property
    def compiled(self):
        return self.built.compiled

    @property
    def project_dir(self) -> Path:
        return self.built.project_dir


def selftest(built: Built, link: Link, progress: Progress = say) -> DeployResult:
    """Run the self-test firmware once: natively (host board), on the QEMU twin, or flash it
    (a real board prints its result on its console UART: DeviceError says so)."""
    board = built.board
    if board.is_host:
        run = project.run_host(built.project_dir)
    elif link.emulate:
        progress(f"[run] {board.name} on QEMU {board.emulator.machine}")
        run, cycles = _run_twin(built, progress)
        built.fit.stack_measured = run.stack_bytes
        if cycles is not None:
            result = deploy_result(built, link, run, built.inputs)
            _add_estimate(result.report, built.compiled, cycles)
            return result
    else:
        project.flash(built.project_dir, board, probe=link.probe, progress=progress)
        raise DeviceError("flashed the self-test firmware, which prints its result on the console UART "
                          f"({board.console.get('uart', 'console')}) as MC-OUTPUT lines",
                          hint="to read results back from the host, deploy with --agent (or use "
                               "`microcompile run`), which talks to the board over its serial port")
    return deploy_result(built, link, run, built.inputs)


def _run_twin(built: Built, progress: Progress):
    """The self-test on the QEMU twin, with the cycle estimate where the core has a model and
    the profile plugin builds; (RunResult, CycleEstimate or None)."""
    from ..target.cycles import CORES
    from .estimate import run_estimated

    board = built.board
    if board.target.core not in CORES:
        return project.run_emulated(built.project_dir, board), None
    return run_estimated(built.project_dir, board, len(built.compiled.kernels), progress=progress)


def _add_estimate(report: dict, compiled, cycles) -> None:
    report.update(cycles.report_keys())
    if len(cycles.kernel_cycles) != len(compiled.kernels):
        return
    by_node = {n.name: c for (n, _, _), c in zip(compiled.kernels, cycles.kernel_cycles)}
    for row in report["layers"]:
        row["estimated_cycles"] = by_node.get(row["name"], 0)


def agent_once(built: Built, link: Link, progress: Progress = say) -> DeployResult:
    """Run the agent firmware once with the built inputs over a session."""
    with open_session(built.project_dir, built.board, link, progress) as session:
        outs = session.run([built.inputs[n] for n in built.compiled.graph.inputs])
        run = agent_run(session, [o.numpy() for o in outs])
    return deploy_result(built, link, run, built.inputs)


def deploy_result(built: Built, link: Link, run, inputs: dict[str, np.ndarray]) -> DeployResult:
    """Compare a run's outputs with the reference interpreter; the deploy report."""
    compiled, board, sizes = built.compiled, built.board, built.sizes
    reference = interp.run(compiled.graph, inputs)
    outputs = {name: run.outputs[i] for i, name in enumerate(compiled.graph.outputs)}
    comparisons = {name: compare(outputs[name], reference[name]) for name in compiled.graph.outputs}
    report = {
        "model": built.artifact.name,
        "board": board.name,
        "emulated": bool(link.emulate),
        "verified": all(c.equal for c in comparisons.values()),
        "arena_bytes": compiled.plan.arena_bytes,
        # a multi-bank arena's other banks (memory/banks.py); arena_bytes is then the primary's
        **({"arena_banks": dict(compiled.plan.bank_bytes)} if compiled.plan.bank_bytes else {}),
        "state_bytes": compiled.plan.state_bytes,
        "weights_bytes": compiled.manifest["weights_bytes"],
        "flash_bytes": sizes.flash,
        "ram_bytes": sizes.ram,
        "sections": sizes.sections,
        **memory_report.report_keys(compiled, sizes, built.project_dir, built.fit),
        "instructions": run.instructions,
        **({"cycles": run.ticks} if getattr(run, "unit", None) == "cycles" else {}),
        "macs": sum(k["macs"] for k in compiled.manifest["kernels"]),
        "layers": _layers(compiled, run),
        "outputs": {name: c.to_json() for name, c in comparisons.items()},
        "project_dir": str(built.project_dir),
        "fit": built.fit.to_json() if built.fit is not None else None,
    }
    return DeployResult(report, outputs, comparisons, built, run, inputs)


def _layers(compiled, run) -> list[dict]:
    """Report rows per layer; "instructions" is the layer's kernel (MC-KERNEL lines; 0 for view
    ops, which have no kernel; None natively, where ticks are not instructions)."""
    per_kernel = run.kernel_instructions
    by_node = ({n.name: per_kernel[k] for k, (n, _, _) in enumerate(compiled.kernels)}
               if per_kernel and len(per_kernel) == len(compiled.kernels) else None)
    return [{"name": r["name"], "op": r["op"], "macs": r["macs"],
             "instructions": by_node.get(r["name"], 0) if by_node is not None else None}
            for r in layer_table(compiled.graph)]


@dataclass
class SamplesResult:
    """`run` over one session: each sample's outputs and its comparison with the reference."""

    report: dict
    outputs: dict[str, np.ndarray]      # stacked over the samples when there are several
    comparisons: list[dict[str, Comparison]]
    counts: list[int]                   # per inference, in `report["unit"]`


def run_samples_on(session, built: Built, link: Link, samples: list[dict[str, np.ndarray]],
                   labels: np.ndarray | None = None, progress: Progress = say, stack: bool | None = None
                   ) -> SamplesResult:
    """Run `samples` over an open agent session, comparing each with the reference interpreter
    (`microcompile run`). With `labels` (class indices) the report has the top-1 accuracy;
    `stack` (default: more than one sample) stacks each output over the samples."""
    compiled, sizes = built.compiled, built.sizes
    names = list(compiled.graph.outputs)
    got: dict[str, list] = {n: [] for n in names}
    agree, top1_agree, correct, ticks, all_comparisons = 0, 0, 0, [], []
    info = session.info()
    for k, sample in enumerate(iter_bar(samples, "run", "inference", progress)):
        outs = session.run([sample[n] for n in compiled.graph.inputs])
        ticks.append(info.to_units(session.last_ticks))
        reference = interp.run(compiled.graph, sample)
        comparisons = {n: compare(outs[i].numpy(), reference[n]) for i, n in enumerate(names)}
        all_comparisons.append(comparisons)
        agree += all(c.equal for c in comparisons.values())
        first = outs[0].numpy()
        top1_agree += int(np.argmax(first) == np.argmax(reference[names[0]]))
        if labels is not None:
            correct += int(np.argmax(first) == labels[k])
        for i, n in enumerate(names):
            got[n].append(outs[i].numpy())
    n = len(samples)
    stack = n > 1 if stack is None else stack
    outputs = {name: (np.stack(v) if stack else v[0]) for name, v in got.items()}
    report = {"model": built.artifact.name, "board": built.board.name, "emulated": bool(link.emulate),
              "samples": n, "verified": agree == n, "agreement": agree / n, "top1_agreement": top1_agree / n,
              "unit": info.unit, "count_per_inference": int(np.median(ticks)),
              "count_resolution": info.resolution(),
              "build_id": info.build_id, "arena_bytes": compiled.plan.arena_bytes,
              "flash_bytes": sizes.flash, "ram_bytes": sizes.ram, "project_dir": str(built.project_dir)}
    if n == 1:
        report["outputs"] = {name: c.to_json() for name, c in all_comparisons[0].items()}
    if labels is not None:
        report["top1_accuracy"] = correct / n
    return SamplesResult(report, outputs, all_comparisons, ticks)


def iter_bar(items: list, desc: str, unit: str, progress: Progress = say) -> Iterable:
    with progress_bar(progress, len(items), desc, unit) as b:
        for item in items:
            yield item
            b.update(1)


@dataclass
class VerifyResult:
    report: dict           # "verified", "layers" (LayerRow.to_json), "tflite_compared", ...
    rows: list             # report.layers.LayerRow, one per compiled layer output
    table: str             # the text table the CLI prints
    deploy: DeployResult


def verify_traced(built: Built, link: Link, progress: Progress = say) -> VerifyResult:
    """verify on a trace build (the host board): the self-test prints every kernel's outputs."""
    result = selftest(built, link, progress)
    manifest = project.load_manifest(built.project_dir)
    traced = [(e.kernel, e.output, a) for e, a in zip(project.trace_entries(manifest),
                                                      project.parse_trace(result.run.console, manifest))]
    return compare_layers(result, traced, progress)


def verify_over_agent(built: Built, link: Link, progress: Progress = say) -> VerifyResult:
    """verify on the agent firmware: every kernel's outputs read with GET_TENSOR."""
    inputs = built.inputs
    ordered = [inputs[n] for n in built.compiled.graph.inputs]
    traced = []
    with open_session(built.project_dir, built.board, link, progress) as session:
        outs = session.run(ordered)
        run = agent_run(session, [o.numpy() for o in outs])
        entries = project.trace_entries(project.load_manifest(built.project_dir))
        for e in iter_bar(entries, "read tensors", "tensor", progress):
            traced.append((e.kernel, e.output, session.tensor(e.spec["name"], ordered).numpy()))
    return compare_layers(deploy_result(built, link, run, inputs), traced, progress)


def compare_layers(result: DeployResult, traced: list, progress: Progress) -> VerifyResult:
    """Compare the device's kernel outputs `traced` [(kernel, output, array)] layer by layer
    with the reference interpreter and, for a .tflite source, LiteRT's reference kernels."""
    from ..compiler.compile import read_model
    from ..ir.summary import format_pass_effects, pass_effects
    from ..report import layers as vl

    built, inputs = result.built, result.inputs
    compiled = built.compiled
    kernel_nodes = [n for n, _, _ in compiled.kernels]
    device = vl.device_tensors(compiled.graph, kernel_nodes, traced, inputs)
    progress("[verify] comparing every layer with the reference interpreter and LiteRT BUILTIN_REF")
    source = built.artifact.source
    tflite = vl.tflite_tensors(source, inputs)
    rows = vl.compare_layers(compiled.graph, kernel_nodes, device, inputs, tflite)
    original = read_model(source, built.artifact.options)
    effects = format_pass_effects(pass_effects(original, compiled.graph), len(original.nodes),
                                  len(compiled.graph.nodes))
    table = vl.format_layer_table(rows, tflite is not None) + ("\n" + effects if effects else "")
    verified = result.report["verified"] and all(r.equal for r in rows)
    report = {"model": result.report["model"], "board": result.report["board"],
              "emulated": result.report["emulated"], "verified": verified, "tflite_compared": tflite is not None,
              "layers": [r.to_json() for r in rows], "outputs": result.report["outputs"],
              "project_dir": str(built.project_dir)}
    return VerifyResult(report, rows, table, result)
