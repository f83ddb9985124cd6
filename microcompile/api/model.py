"""`compile` and the compiled model it returns: everything a user does with one model on one
board, from Python or (through the CLI, which calls nothing else) from a shell."""

from __future__ import annotations

import os
import shutil
import tempfile
import weakref
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .. import deploy, project
from ..compiler import CompileOptions, compile_model
from ..deploy import Artifact, BuildOptions, Link
from ..deploy.inputs import model_inputs, model_samples
from ..errors import UserError
from ..frontend import is_torch_object, load_model
from ..ir import Graph
from ..ir.summary import format_pass_effects, format_table, layer_table, pass_effects
from ..memory import MemoryPlan
from ..reference import interp
from ..schedule import ScheduleError
from ..target import Board
from .boards import board as board_named
from .cache import project_cache_dir
from .common import ProgressArg, as_progress, name_of
from .device import Device
from .firmware import Firmware
from .quantize import Quantized
from .tensors import TensorSpec, dequantized, specs
from .tune import selection_for

def compile(model, board: str | Board, *, example_inputs=None, input_shapes: dict | None = None,  # noqa: A001
            records=None, name: str | None = None, progress: ProgressArg = False,
            options: CompileOptions | None = None) -> CompiledModel:
    """Compile a model for a board.

    Parameters
    ----------
    model : str, os.PathLike, bytes, onnx.ModelProto, torch.export.ExportedProgram, torch.nn.Module, Quantized or Graph
        A ``.tflite``, ``.onnx`` or ``.pt2`` (``torch.export.save``) file, its bytes, an ONNX
        model in memory, a ``torch.export`` program (float or PT2E-quantized), a PyTorch
        module with `example_inputs`, or what :func:`microcompile.quantize` returns.
    board : str or Board
        A board name or alias (``"stm32"``, ``"mps2-an386"``, ``"host"``; see :func:`boards`).
    example_inputs : tuple of tensors, optional
        For a ``torch.nn.Module``: the inputs ``torch.export.export`` traces it with.
    input_shapes : dict, optional
        ``{input name: shape}`` pinning dynamic dimensions of an ONNX model.
    records : str, os.PathLike or Records, optional
        Tuning records (:func:`microcompile.autotune`): the fastest valid schedule per workload for
        this board's core and toolchain replaces the default; other kernels keep the default.
    name : str, optional
        The model's name in reports and generated code (default: the file's stem).
    progress : bool or callable
        Print progress lines (default: quiet).
    options : CompileOptions, optional
        The rest: ``input_layout="nhwc"`` (an ONNX or PyTorch model's 4-D inputs and outputs
        in the kernels' layout instead of NCHW), ``flash_budget`` (bytes of flash the firmware
        may use when choosing which kernels get int16 weights; default: the board's flash),
        ``dump_ir`` (called with ``(pass name, Graph)`` after every graph pass).

    Returns
    -------
    CompiledModel

    Raises
    ------
    ModelError
        The file is malformed or uses unsupported ops (all named at once).
    BoardError
        An unknown board.

    Examples
    --------
    >>> import microcompile as mc
    >>> cm = mc.compile("examples/digits/digits_mlp.tflite", board="host")   # doctest: +SKIP
    >>> cm.memory.arena_bytes                                                 # doctest: +SKIP
    384
    """
    progress = as_progress(progress)
    b = board_named(board) if isinstance(board, str) else board
    source = model.graph if isinstance(model, Quantized) else model
    name = name or name_of(model)
    options = options or CompileOptions()
    if input_shapes:
        options = replace(options, input_shapes=input_shapes)
    if example_inputs is not None or is_torch_object(source):
        # A module or an in-memory program is read once here: later steps (verify, tune) read
        # the source again, and a module would be exported again.
        source = load_model(source, input_shapes=dict(options.input_shapes) or None,
                            input_layout=options.input_layout, example_inputs=example_inputs)
    summary = None
    if records is not None:
        selection = selection_for(records, b, progress)
        options, summary = replace(options, tuned=selection.traces()), selection
    progress(f"[compile] {name} for {b.name}")
    directory = tempfile.mkdtemp(prefix="microcompile-artifact-")
    try:
        compiled = compile_model(source, b, Path(directory), options)
    except ScheduleError as e:
        shutil.rmtree(directory, ignore_errors=True)
        if not options.tuned:
            raise
        raise UserError(f"a record of {records} does not replay on this model: {e}",
                        hint="records are tied to microcompile's loop and buffer names; tune again with this "
                             "version") from None
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    cm = CompiledModel(Artifact(compiled, Path(directory), b, name, options, source))
    if summary is not None:
        from ..autotune.records import tuned_summary
        progress(f"[records] {records}: {tuned_summary(compiled, summary)}")
    progress(f"[compile] {len(compiled.kernels)} kernels, arena {compiled.plan.arena_bytes} bytes "
             f"(lower bound {compiled.plan.lower_bound})")
    return cm


@dataclass(frozen=True)
class Inspection:
    """What `inspect` prints of a model: its layers, the reader's notes, and what the graph
    passes fused, folded or removed."""

    graph: Graph
    optimized: Graph

    @property
    def rows(self) -> list[dict]:
        return layer_table(self.graph)

    @property
    def notes(self) -> tuple[str, ...]:
        return tuple(self.graph.notes)

    def text(self) -> str:
        from ..escape import terminal

        out = [format_table(self.rows)]
        if self.notes:
            out.append("\nnotes from the reader:\n" + "\n".join(f"  {terminal(n)}" for n in self.notes))
        effects = format_pass_effects(pass_effects(self.graph, self.optimized), len(self.graph.nodes),
                                      len(self.optimized.nodes))
        if effects:
            out.append("\n" + effects)
        return "\n".join(out)


def inspect(model, *, input_shapes: dict | None = None, input_layout: str = "nchw",
            example_inputs=None) -> Inspection:
    """Read a model without compiling it: its layers (op, shapes, dtypes, quantization, MACs,
    parameters) and what the graph passes would do. The model and the keywords are as for
    :func:`compile`.

    Raises UnsupportedOpError (listing every unsupported op) like :func:`compile`; see
    :func:`list_ops` for a listing that works on such models."""
    from ..transform import pipeline

    graph = load_model(model.graph if hasattr(model, "float_graph") else model, input_shapes=input_shapes,
                       input_layout=input_layout, example_inputs=example_inputs)
    return Inspection(graph, pipeline.run(graph))


def list_ops(model) -> list[tuple[int, str, str, bool]]:
    """(index, op, output name, supported) for every op of a .tflite, .onnx or .pt2 file (the
    ATen ops of its core-ATen program), also when some are unsupported."""
    from ..frontend import list_tflite_ops
    from ..frontend.onnx import list_onnx_ops

    ext = Path(os.fspath(model)).suffix.lower()
    if ext == ".pt2":
        from ..frontend.pytorch import list_pt2_ops
        return list_pt2_ops(model)
    lister = list_onnx_ops if ext == ".onnx" else list_tflite_ops
    return lister(model)


class CompiledModel:
    """A model compiled for a board: its graph, kernels and arena plan, and the C in a
    directory of its own. Build it into a project, run it on the board's QEMU twin or the
    board itself, and compare with the reference interpreter.

    Made by :func:`compile`; never constructed directly."""

    def __init__(self, artifact: Artifact):
        self._artifact = artifact
        self._finalizer = weakref.finalize(self, shutil.rmtree, str(artifact.directory), True)

    # --- what it is --------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._artifact.name

    @property
    def board(self) -> Board:
        return self._artifact.board

    @property
    def graph(self) -> Graph:
        """The optimized graph, nodes in execution order."""
        return self._artifact.compiled.graph

    @property
    def memory(self) -> MemoryPlan:
        """The arena plan: buffers, offsets, lifetimes (`timeline()`), `arena_bytes`, `lower_bound`."""
        return self._artifact.compiled.plan

    @property
    def inputs(self) -> list[TensorSpec]:
        return specs(self.graph, self.graph.inputs)

    @property
    def outputs(self) -> list[TensorSpec]:
        return specs(self.graph, self.graph.outputs)

    @property
    def kernels(self) -> list[dict]:
        """One dict per kernel, in order: name, layer, op, MACs, schedule trace."""
        return [dict(k) for k in self._artifact.compiled.manifest["kernels"]]

    @property
    def manifest(self) -> dict:
        return self._artifact.compiled.manifest

    @property
    def artifact(self) -> Artifact:
        return self._artifact

    @property
    def report(self) -> dict:
        """What is known before building: arena, state, weights, MACs, kernels, inputs, outputs."""
        c = self._artifact.compiled
        return {"model": self.name, "board": self.board.name, "arena_bytes": c.plan.arena_bytes,
                "arena_lower_bound_bytes": c.plan.lower_bound, "arena_planner": c.plan.planner,
                "state_bytes": c.plan.state_bytes, "weights_bytes": c.manifest["weights_bytes"],
                "macs": sum(k["macs"] for k in c.manifest["kernels"]), "kernels": len(c.kernels),
                "tuned_kernels": len(c.tuned), "widened_kernels": len(c.widened),
                "int4_kernels": len(c.stored_int4),
                "inputs": [s.to_json() for s in self.inputs], "outputs": [s.to_json() for s in self.outputs],
                "layers": [{"name": r["name"], "op": r["op"], "macs": r["macs"]} for r in layer_table(self.graph)]}

    def summary(self) -> str:
        """The table `inspect` prints for the model as compiled (its optimized graph)."""
        return format_table(layer_table(self.graph))

    def memory_report(self, top: int = 3) -> str:
        """The text of `inspect --memory`: the arena, its lower bound, the timeline."""
        from ..report import memory as memory_report
        return memory_report.format_memory(self._artifact.compiled, top)

    def plot_memory(self, path) -> Path:
        """The arena timeline as a picture (.png/.svg/.pdf; needs matplotlib)."""
        from ..report import memory as memory_report
        memory_report.plot_memory(self._artifact.compiled, path)
        return Path(path)

    # --- the reference --------------------------------------------------------------------------
    def reference(self, inputs=None, *, dequantize: bool = False) -> list[np.ndarray]:
        """The reference interpreter's outputs (bit-exact with TFLite's reference kernels), in
        output order. `inputs`: an array, a list in input order, a {name: array} dict, a
        .npy/.npz path, or None (the deterministic benchmark input); float values for an int8
        input are quantized. A batch (each input with one more leading axis, or its leading 1
        replaced by N) gives each output stacked, as Device.run does. `dequantize` gives
        int8/int16 outputs as float."""
        samples, batch = model_samples(self.graph, inputs)
        got = [interp.run(self.graph, x) for x in samples]
        out = [np.stack([g[n] for g in got]) if batch else got[0][n] for n in self.graph.outputs]
        return [dequantized(self.graph, n, a) if dequantize else a for n, a in zip(self.graph.outputs, out)]

    # --- building and running -------------------------------------------------------------------
    def build(self, directory=None, *, agent: bool = False, emulate: bool = False, trace: bool = False,
              inputs=None, options: BuildOptions | None = None, progress: ProgressArg = False) -> Firmware:
        """Write and build the standalone Makefile project.

        `directory` (default: a per-user cache directory keyed by the build) is created, or
        updated when it holds a microcompile project. `agent` builds the agent firmware (runs
        what the host sends) instead of the self-test (runs `inputs` once); `emulate` makes the
        QEMU twin the Makefile's default platform; `trace` makes a trace self-test (every
        kernel's outputs printed). `options` sets the memory regions and an arena budget.
        Raises DoesNotFit (with what would help) when the firmware does not fit the board."""
        progress = as_progress(progress)
        opts = BuildOptions(emulate=emulate, agent=agent, trace=trace,
                            arena_region=options.arena_region if options else None,
                            weights_region=options.weights_region if options else None,
                            arena_budget=options.arena_budget if options else None)
        directory = Path(directory) if directory is not None else project_cache_dir(self._artifact, opts)
        project.check_out_dir(directory)
        x = model_inputs(self.graph, inputs, note=progress)
        return Firmware(deploy.build(self._artifact, directory, opts, x, progress))

    def export(self, directory, *, format: str = "cmake", bsp: bool = False, emulate: bool = False,  # noqa: A002
               name: str | None = None, progress: ProgressArg = False):
        """This model as a library for your own firmware (see :func:`microcompile.export`):
        `format` cmake, make, lib, arduino, zephyr or cmsis-pack; `name` its C name (default:
        the model's name made a C identifier)."""
        from .export import export
        return export([self], directory, format=format, bsp=bsp, emulate=emulate,
                      names=[name] if name is not None else None, progress=progress)

    def deploy(self, directory=None, *, inputs=None, emulate: bool = False, agent: bool = False,
               link: Link | None = None, options: BuildOptions | None = None,
               progress: ProgressArg = False) -> deploy.DeployResult:
        """Build, run one inference (host, QEMU twin with `emulate`, or the board of `link`) and
        compare it with the reference interpreter: `microcompile deploy`. The result has the
        outputs, their comparison and the report dict (`--report`); `.verified` says whether
        every output equals the reference."""
        progress = as_progress(progress)
        link = link or Link(emulate=emulate)
        agent = agent or link.port is not None
        deploy.check_target(self.board, link, agent)
        fw = self.build(directory, agent=agent, emulate=link.emulate, inputs=inputs, options=options,
                        progress=progress)
        if agent:
            return deploy.agent_once(fw.built, link, progress)
        return deploy.selftest(fw.built, link, progress)

    def verify(self, directory=None, *, inputs=None, emulate: bool = False, link: Link | None = None,
               options: BuildOptions | None = None, progress: ProgressArg = False) -> deploy.VerifyResult:
        """Compare every layer's device tensor with the reference interpreter and, for a .tflite
        model with ai-edge-litert installed, LiteRT's reference kernels: `microcompile verify`.
        `options` sets the memory regions, as for build."""
        progress = as_progress(progress)
        link = link or Link(emulate=emulate)
        deploy.check_target(self.board, link)
        if self.board.is_host:
            fw = self.build(directory, trace=True, inputs=inputs, options=options, progress=progress)
            return deploy.verify_traced(fw.built, link, progress)
        fw = self.build(directory, agent=True, emulate=link.emulate, inputs=inputs, options=options,
                        progress=progress)
        return deploy.verify_over_agent(fw.built, link, progress)

    def emulate(self, directory=None, *, timeout: float = 10.0, options: BuildOptions | None = None,
                progress: ProgressArg = False) -> Device:
        """The board's QEMU twin (or, for the host board, a native process) running the agent
        firmware, as a Device to use in a ``with`` block. `options` sets the memory regions."""
        return self._device(directory, Link(emulate=True, timeout=timeout), progress, options)

    def connect(self, port: str | None = None, probe: str | None = None, *, directory=None,
                timeout: float = 10.0, options: BuildOptions | None = None, progress: ProgressArg = False) -> Device:
        """The real board on serial `port` (found by its USB id when None), flashed with
        `probe` when it does not run this build, as a Device to use in a ``with`` block.
        `options` sets the memory regions."""
        return self._device(directory, Link(port=port, probe=probe, timeout=timeout), progress, options)

    def _device(self, directory, link: Link, progress: ProgressArg, options: BuildOptions | None = None) -> Device:
        progress = as_progress(progress)
        deploy.check_target(self.board, link)
        fw = self.build(directory, agent=True, emulate=link.emulate, options=options, progress=progress)
        return Device(fw.built, link, progress)

    def __repr__(self) -> str:
        c = self._artifact.compiled
        return (f"<CompiledModel {self.name!r} for {self.board.name}: {len(c.kernels)} kernels, "
                f"arena {c.plan.arena_bytes:,} bytes, weights {c.manifest['weights_bytes']:,} bytes>")

