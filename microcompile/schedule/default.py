"""The default schedule for every op family: first the op family's own schedule when one
applies (int8 conv2d and fully_connected become GEMM micro-kernel calls, gemm_schedule.py;
int8 depthwise_conv2d calls of mc_depthwise_*, depthwise_intrin.py; float32 conv2d and
fully_connected calls of the FPU GEMM kernel on cores with an FPU, gemm_f32.py; an int8 ADD's input
rescales as 256-entry tables, tabulate.py),
then every innermost loop that is short and holds no further loop is unrolled (small kernel
windows such as a 3-wide filter row). Knobs: `unroll_max_extent`, domain
UNROLL_MAX_EXTENT_DOMAIN; `wide` (int16 weights or not, chosen per kernel against the
board's flash by schedule/widening.py)."""

from __future__ import annotations

from ..tir.nodes import PrimFunc
from ..tir.verify import verify_primfunc
from .depthwise_intrin import DEPTHWISE_SCHEDULES
from .gemm_f32 import F32_GEMM_SCHEDULES
from .gemm_schedule import GEMM_SCHEDULES
from .tabulate import TABLE_SCHEDULES
from .applies import sketch_family
from .primitives import ScheduleError, primitive
from .sketch import apply_sketch, default_sketch
from .trace import Schedule, Trace
from .unrolling import UNROLL_MAX_EXTENT_DOMAIN, default_unroll, unroll_short_loops


def default_schedule(func: PrimFunc, target=None, unroll_max_extent: int | None = None,
                     wide: bool | None = None, sketch: bool = True) -> tuple[PrimFunc, Trace]:
    """Schedule `func` for `target` (a microcompile.target.Target or None: no DSP). `wide`:
    int16 weights where a kernel has that choice (schedule/widening.py decides per kernel),
    int8 ones, or None for each op family's own default. `unroll_max_extent` (None: the op's
    default, default_unroll). A kernel of no hand-written family takes its default sketch
    (schedule/sketch.py's default_sketch) unless `sketch` is False (the parts of fused row
    groups and patch stages, which tir/compose.py joins as lowered)."""
    if "row_parts" in func.attrs:
        return _schedule_parts_by_default(func, target, unroll_max_extent, wide)
    if unroll_max_extent is None:
        unroll_max_extent = default_unroll(func)
    assert unroll_max_extent in UNROLL_MAX_EXTENT_DOMAIN, unroll_max_extent
    options = {} if wide is None else {"wide": wide}
    schedules = F32_GEMM_SCHEDULES + GEMM_SCHEDULES + DEPTHWISE_SCHEDULES + TABLE_SCHEDULES
    sch = next((s for s in (fn(func, target, **options) for fn in schedules) if s is not None), None) \
        or (_default_sketch(func, target, unroll_max_extent) if sketch else Schedule(func))
    unroll_short_loops(sch, unroll_max_extent)
    return sch.func, sch.trace


def _schedule_parts_by_default(func: PrimFunc, target, unroll_max_extent: int | None, wide: bool | None):
    """A fused row group (lower/fused.py): each part gets its op's default schedule, recorded as
    one decision that replays every part's trace (schedule_parts)."""
    traces = [default_schedule(p, target, unroll_max_extent, wide, sketch=False)[1].to_json()
              for p in func.attrs["row_parts"].parts]
    sch = Schedule(func)
    sch._apply("schedule_parts", traces)
    return sch.func, sch.trace


@primitive("schedule_parts")
def schedule_parts(f: PrimFunc, traces: list) -> PrimFunc:
    """Replay `traces` (one per part, as JSON) on the parts of fused row group or patch stage
    `f` and compose them again (tir/compose.py)."""
    rp = f.attrs["row_parts"]
    if len(traces) != len(rp.parts):
        raise ScheduleError(f"schedule_parts: {len(traces)} traces for {len(rp.parts)} parts")
    body, buffers = rp.compose([Trace.from_json(t).apply(p) for p, t in zip(rp.parts, traces)])
    attrs = dict(f.attrs)
    if "scratch_union" in attrs:
        attrs["scratch_union"] = rp.scratch_union(buffers)
    return verify_primfunc(PrimFunc(f.name, buffers, body, attrs))


def _default_sketch(func: PrimFunc, target, unroll_max_extent: int) -> Schedule:
    if not sketch_family(func, target):
        return Schedule(func)
    return apply_sketch(func, target, default_sketch(func, target), unroll_max_extent)
