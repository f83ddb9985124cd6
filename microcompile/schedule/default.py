"""The default schedule for every op family: the plain loop nest, with the innermost loop
unrolled when it is short and holds no further loop (small kernel windows such as a 3-wide
filter row). Knob: `unroll_max_extent`, domain UNROLL_MAX_EXTENT_DOMAIN."""

from __future__ import annotations

from ..ir.tir import For, PrimFunc, walk
from .trace import Schedule, Trace

UNROLL_MAX_EXTENT_DOMAIN = (0, 2, 3, 4, 8)   # 0 = never unroll


def default_schedule(func: PrimFunc, target=None, unroll_max_extent: int = 4) -> tuple[PrimFunc, Trace]:
    """Schedule `func` for `target` (a microcompile.target.Target or None; not used yet)."""
    assert unroll_max_extent in UNROLL_MAX_EXTENT_DOMAIN, unroll_max_extent
    sch = Schedule(func)
    for loop in [n for n in walk(func.body) if isinstance(n, For)]:
        innermost = not any(isinstance(c, For) for c in walk(loop.body))
        if innermost and 1 < loop.extent <= unroll_max_extent:
            sch.unroll(loop.var.name)
    return sch.func, sch.trace
