"""Unrolling shared by the default schedule, the knob spaces and the sketches: the
unroll_max_extent knob's domain, each op's default, and the rule that unrolls short innermost
loops."""

from __future__ import annotations

from ..tir.nodes import For, PrimFunc, walk
from .trace import Schedule

UNROLL_MAX_EXTENT_DOMAIN = (0, 2, 3, 4, 8)   # 0 = never unroll
UNROLL_MAX_EXTENT = 4
# Tuned (issue 10): a pooling window row up to 8 wide unrolled. kws's 25x5 average pool took
# 39,760 instructions with 4 and takes 22,120 with 8 (tune, mps2-an386); the other kernels the
# tuner measured gained nothing from 8.
UNROLL_MAX_EXTENT_BY_OP = {"average_pool2d": 8, "max_pool2d": 8}


def default_unroll(func: PrimFunc | None) -> int:
    """The default's unroll_max_extent for `func` (None: the general one)."""
    return UNROLL_MAX_EXTENT_BY_OP.get(func.attrs.get("op") if func is not None else None, UNROLL_MAX_EXTENT)


def unroll_short_loops(sch: Schedule, max_extent: int) -> None:
    """Unroll every innermost loop (one that holds no further loop) of extent 2..max_extent."""
    for loop in [n for n in walk(sch.func.body) if isinstance(n, For)]:
        innermost = not any(isinstance(c, For) for c in walk(loop.body))
        if innermost and 1 < loop.extent <= max_extent:
            sch.unroll(loop.var.name)
