"""Traces: a schedule as a replayable, JSON-serializable list of named decisions.

A `Decision` is one primitive application, `{"primitive": "split", "args": ["oc", 4]}`.
`Schedule` applies primitives and records them; `Trace.apply` replays them on the
unscheduled PrimFunc, giving an identical PrimFunc (and so identical C).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..tir.nodes import PrimFunc
from .primitives import PRIMITIVES, ScheduleError


@dataclass(frozen=True)
class Decision:
    primitive: str
    args: tuple

    def to_json(self) -> dict:
        return {"primitive": self.primitive, "args": list(self.args)}

    @staticmethod
    def from_json(d: dict) -> Decision:
        if d["primitive"] not in PRIMITIVES:
            raise ScheduleError(f"unknown schedule primitive {d['primitive']!r}")
        return Decision(d["primitive"], tuple(d["args"]))


@dataclass(frozen=True)
class Trace:
    decisions: tuple[Decision, ...] = ()

    def apply(self, f: PrimFunc) -> PrimFunc:
        for d in self.decisions:
            f = PRIMITIVES[d.primitive](f, *d.args)
        return f

    def to_json(self) -> list[dict]:
        return [d.to_json() for d in self.decisions]

    def dumps(self) -> str:
        return json.dumps(self.to_json(), sort_keys=True)

    @staticmethod
    def from_json(items: list[dict]) -> Trace:
        return Trace(tuple(Decision.from_json(d) for d in items))

    @staticmethod
    def loads(text: str) -> Trace:
        return Trace.from_json(json.loads(text))


class Schedule:
    """A PrimFunc being scheduled, with the trace of what was done to it.

        sch = Schedule(func)
        sch.split("oc", 4)
        sch.unroll("oc_i")
        func2, trace = sch.func, sch.trace
    """

    def __init__(self, func: PrimFunc):
        self.func = func
        self._decisions: list[Decision] = []

    @property
    def trace(self) -> Trace:
        return Trace(tuple(self._decisions))

    def _apply(self, primitive: str, *args):
        self.func = PRIMITIVES[primitive](self.func, *args)
        self._decisions.append(Decision(primitive, tuple(args)))
        return self

    def split(self, loop: str, factor: int) -> Schedule:
        return self._apply("split", loop, factor)

    def reorder(self, *loops: str) -> Schedule:
        return self._apply("reorder", *loops)

    def unroll(self, loop: str) -> Schedule:
        return self._apply("unroll", loop)

    def apply(self, primitive: str, *args) -> Schedule:
        """Any registered primitive by name (fuse, cache_read, tensorize, ...)."""
        if primitive not in PRIMITIVES:
            raise ScheduleError(f"unknown schedule primitive {primitive!r}")
        return self._apply(primitive, *args)

    def knob(self, name: str, value) -> Schedule:
        return self._apply("knob", name, value)

    def unswitch(self, loop: str) -> Schedule:
        return self._apply("unswitch", loop)

    def fuse(self, outer: str, inner: str) -> Schedule:
        return self._apply("fuse", outer, inner)

    def cache_write(self, local: str, at: str, scope: str = "scratch") -> Schedule:
        if scope == "scratch":       # (traces from before the local placement replay unchanged)
            return self._apply("cache_write", local, at)
        return self._apply("cache_write", local, at, scope)

    def cache_read(self, let_var: str, at: str, dtype: str | None = None, even_rows: str | None = None) -> Schedule:
        return self._apply("cache_read", let_var, at, dtype, *((even_rows,) if even_rows else ()))

    def pack_constant(self, buffer: str, dtype: str) -> Schedule:
        return self._apply("pack_constant", buffer, dtype)

    def store_int4(self, buffer: str, mode: str = "unpack") -> Schedule:
        return self._apply("store_int4", buffer, mode)

    def tensorize(self, loop: str, intrin: str) -> Schedule:
        return self._apply("tensorize", loop, intrin)
