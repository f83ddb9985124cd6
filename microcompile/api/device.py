"""A device running a model's agent firmware: the QEMU twin, a host process, or a real board."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import deploy
from ..deploy import Built, Link
from ..deploy.inputs import model_inputs, model_samples
from ..errors import UserError
from ..files import load_arrays
from ..report import profile as profile_report
from .tensors import dequantized


@dataclass(frozen=True)
class Profile:
    """Per-kernel counts of one inference: `rows` (name, layers, op, shape, MACs, count),
    `total` (the profiled run, hooks included), `plain_total` (the same inference without
    the hooks: what `deploy` reports), `unit` ("instructions" on QEMU, "cycles" on a board,
    "ns" on the host). On a QEMU twin each row also has the cycle model's `estimated_cycles`
    at `clock_hz`, the board's clock (an estimate, not a measurement: docs/cycles.md)."""

    rows: list
    total: int
    plain_total: int
    unit: str
    title: str = ""
    clock_hz: int | None = None

    @property
    def report(self) -> dict:
        """The `profile --json` dict."""
        return profile_report.to_json(self.unit, self.total, self.rows)

    def table(self, footer: list[str] = ()) -> str:
        """The text table `microcompile profile` prints."""
        return profile_report.format_table(self.rows, self.unit, self.total, self.plain_total, list(footer),
                                           self.clock_hz)

    def plot(self, path, title: str | None = None) -> Path:
        """A bar chart per kernel (.png/.svg/.pdf; needs matplotlib)."""
        profile_report.write_plot(self.rows, self.unit, path, title or self.title)
        return Path(path)

    def to_csv(self, path) -> Path:
        profile_report.write_csv(self.rows, self.unit, path)
        return Path(path)


class Device:
    """The agent firmware of a compiled model, running and reachable: use it in a ``with``
    block (the QEMU twin or host process is stopped, the serial port closed, when it ends).

    >>> with cm.emulate() as dev:                      # doctest: +SKIP
    ...     y = dev.run(x)
    ...     prof = dev.profile()
    """

    def __init__(self, built: Built, link: Link, progress: Callable[[str], None]):
        self.built, self.link, self._progress = built, link, progress
        self._stack: contextlib.ExitStack | None = None
        self._session = None
        self._last: list[np.ndarray] | None = None     # the inputs of the last run, in input order
        self._trace = None                              # deploy.estimate.AgentTrace on a QEMU twin

    def __enter__(self) -> Device:
        from ..deploy.estimate import agent_trace

        self._stack = contextlib.ExitStack()
        try:
            self._trace = agent_trace(self.built, self._progress) if self.link.emulate else None
            if self._trace is not None:
                self._stack.callback(self._trace.close)
            self._session = self._open()
        except BaseException:
            self._stack.close()
            self._stack = None
            raise
        return self

    def _open(self):
        """The session, entered on the stack (with the profile plugin when there is a trace)."""
        extra = tuple(self._trace.qemu_args) if self._trace is not None else ()
        return self._stack.enter_context(
            deploy.open_session(self.built.project_dir, self.built.board, self.link, self._progress, extra))

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Stop the twin (or close the port); the Device cannot be used again."""
        if self._stack is not None:
            self._stack.close()
            self._stack, self._session = None, None

    @property
    def session(self):
        """The device.Session underneath (the framed protocol)."""
        if self._session is None:
            raise UserError("the device is not open", hint="use it in a `with cm.emulate() as dev:` block")
        return self._session

    @property
    def info(self):
        """What the firmware says of itself: model, build id, inputs, outputs, counter unit."""
        return self.session.info()

    @property
    def _graph(self):
        return self.built.compiled.graph

    def run(self, inputs=None, *, dequantize: bool = False) -> list[np.ndarray]:
        """Run the model on `inputs` and return its outputs (a list, in output order).

        `inputs` is as for CompiledModel.reference; a batch (each input with one more leading
        axis, or its leading 1 replaced by N) runs the N samples over this session and returns
        each output stacked. Float values for an int8/int16 input are quantized with its scale
        and zero point. `dequantize` gives int8/int16 outputs as float."""
        samples, batch = self._samples(inputs)
        names = list(self._graph.outputs)
        got = [[] for _ in names]
        for sample in samples:
            self._last = [sample[n] for n in self._graph.inputs]
            for i, o in enumerate(self.session.run(self._last)):
                got[i].append(o.numpy())
        out = [np.stack(v) if batch else v[0] for v in got]
        return [dequantized(self._graph, n, a) if dequantize else a for n, a in zip(names, out)]

    def check(self, inputs=None, labels=None, *, count: int | None = None) -> deploy.SamplesResult:
        """Run one input or a batch (its first `count` samples) and compare each sample with
        the reference interpreter: `microcompile run`. The report has the agreement, the top-1
        agreement and, with `labels` (class indices or one-hot rows), the top-1 accuracy."""
        samples, batch = self._samples(inputs, count)
        y = None
        if labels is not None:
            y = load_arrays(labels, "labels file") if isinstance(labels, (str, os.PathLike)) else np.asarray(labels)
            if not isinstance(y, np.ndarray) or y.ndim not in (1, 2) or y.shape[0] < len(samples):
                raise UserError(f"labels must hold at least {len(samples)} class indices [N] or one-hot rows [N, C]",
                                hint="np.save('y.npy', np.array(labels))")
            y = (np.argmax(y, axis=1) if y.ndim == 2 else y)[:len(samples)].astype(np.int64)
        result = deploy.run_samples_on(self.session, self.built, self.link, samples, y, self._progress, stack=batch)
        self._last = [samples[-1][n] for n in self._graph.inputs]
        return result

    def profile(self, inputs=None) -> Profile:
        """Per-kernel counts of one inference on `inputs` (default: the last run's, else the
        deterministic input): `microcompile profile`."""
        ordered = self._inputs(inputs)
        self.session.run(ordered)
        plain = self.session.info().to_units(self.session.last_ticks)
        prof = self.session.profile(ordered)
        estimated = (self._trace.kernel_cycles(prof.counts)
                     if self._trace is not None and prof.unit == "instructions" else None)
        rows = profile_report.rows(self.built.compiled, prof.counts, estimated)
        return Profile(rows, prof.total, plain, prof.unit,
                       f"{self.built.artifact.name} on {self.built.board.name}: {prof.unit} per layer",
                       self.built.board.target.clock_hz if estimated else None)

    def tensor(self, name: str, inputs=None, *, dequantize: bool = False) -> np.ndarray:
        """The planned tensor `name` (a kernel's output, or a model input) right after its
        kernel ran, for `inputs` (default: the last run's, else the deterministic input)."""
        a = self.session.tensor(name, self._inputs(inputs)).numpy()
        return dequantized(self._graph, name, a) if dequantize and name in self._graph.tensors else a

    def _inputs(self, inputs) -> list[np.ndarray]:
        """One sample's inputs in input order: `inputs`, else the last run's, else the pattern."""
        if inputs is None and self._last is not None:
            return self._last
        x = model_inputs(self._graph, inputs, note=self._progress)
        self._last = [x[n] for n in self._graph.inputs]
        return self._last

    def _samples(self, inputs, count: int | None = None) -> tuple[list[dict[str, np.ndarray]], bool]:
        return model_samples(self._graph, inputs, count, note=self._progress)

    def __repr__(self) -> str:
        state = "open" if self._session is not None else "closed"
        return f"<Device {self.built.board.name} ({'QEMU' if self.link.emulate else 'board'}), {state}>"
