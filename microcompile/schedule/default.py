"""The default schedule for every op family: first the op family's own schedule when one
applies (int8 conv2d and fully_connected become GEMM micro-kernel calls, gemm_schedule.py;
int8 depthwise_conv2d calls of mc_depthwise_*, depthwise_intrin.py; an int8 ADD's input
rescales as 256-entry tables, tabulate.py),
then every innermost loop that is short and holds no further loop is unrolled (small kernel
windows such as a 3-wide filter row). Knobs: `unroll_max_extent`, domain
UNROLL_MAX_EXTENT_DOMAIN; `wide` (int16 weights or not, chosen per kernel against the
board's flash by schedule/widening.py)."""

from __future__ import annotations

from ..tir.nodes import For, PrimFunc, walk
from .depthwise_intrin import DEPTHWISE_SCHEDULES
from .gemm_schedule import GEMM_SCHEDULES
from .tabulate import TABLE_SCHEDULES
from .trace import Schedule, Trace

UNROLL_MAX_EXTENT_DOMAIN = (0, 2, 3, 4, 8)   # 0 = never unroll
UNROLL_MAX_EXTENT = 4
# Tuned (issue 10): a pooling window row up to 8 wide unrolled. kws's 25x5 average pool took
# 39,760 instructions with 4 and takes 22,120 with 8 (tune, mps2-an386); the other kernels the
# tuner measured gained nothing from 8.
UNROLL_MAX_EXTENT_BY_OP = {"average_pool2d": 8, "max_pool2d": 8}


def default_unroll(func: PrimFunc | None) -> int:
    """The default's unroll_max_extent for `func` (None: the general one)."""
    return UNROLL_MAX_EXTENT_BY_OP.get(func.attrs.get("op") if func is not None else None, UNROLL_MAX_EXTENT)


def default_schedule(func: PrimFunc, target=None, unroll_max_extent: int | None = None,
                     wide: bool | None = None) -> tuple[PrimFunc, Trace]:
    """Schedule `func` for `target` (a microcompile.target.Target or None: no DSP). `wide`:
    int16 weights where a kernel has that choice (schedule/widening.py decides per kernel),
    int8 ones, or None for each op family's own default. `unroll_max_extent` (None: the op's
    default, default_unroll)."""
    if unroll_max_extent is None:
        unroll_max_extent = default_unroll(func)
    assert unroll_max_extent in UNROLL_MAX_EXTENT_DOMAIN, unroll_max_extent
    options = {} if wide is None else {"wide": wide}
    schedules = GEMM_SCHEDULES + DEPTHWISE_SCHEDULES + TABLE_SCHEDULES
    sch = next((s for s in (fn(func, target, **options) for fn in schedules) if s is not None), None) or Schedule(func)
    unroll_short_loops(sch, unroll_max_extent)
    return sch.func, sch.trace


def unroll_short_loops(sch: Schedule, max_extent: int) -> None:
    """Unroll every innermost loop (one that holds no further loop) of extent 2..max_extent."""
    for loop in [n for n in walk(sch.func.body) if isinstance(n, For)]:
        innermost = not any(isinstance(c, For) for c in walk(loop.body))
        if innermost and 1 < loop.extent <= max_extent:
            sch.unroll(loop.var.name)
