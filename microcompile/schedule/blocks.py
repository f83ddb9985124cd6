"""Larger im2col blocks where the arena has room for them (issue 10's tuning finding).

A conv2d's im2col block is scratch in the arena: its default cap (COL_BYTES_MAX, 1 KiB on DSP
cores) keeps the arena small, but a larger block is faster (fewer micro-kernel calls, longer
panel runs: 2-5% of a conv's instructions on kws_ref_model and ResNet, from the tuning records).
The arena is (at least) the peak of the bytes live over the steps, so a kernel off the peak
has slack: that peak less the bytes live during its step. `larger_block` re-schedules such a kernel with
the largest cap of COL_BYTES_DOMAIN whose extra scratch fits that slack; the compiler re-plans
and keeps the result only when the arena does not grow (compiler/plan.py schedule_and_plan).
"""

from __future__ import annotations

from ..tir.nodes import PrimFunc
from .gemm_schedule import COL_BYTES_DOMAIN
from .spaces import apply_config, default_config, family_of
from .trace import Trace


def col_bytes_max(trace: Trace) -> int | None:
    """The im2col cap a conv2d schedule was made with (None: not a conv2d GEMM schedule)."""
    caps = [d.args[1] for d in trace.decisions if d.primitive == "knob" and d.args[0] == "col_bytes_max"]
    return caps[-1] if caps else None


def larger_block(func: PrimFunc, target, wide: bool, scheduled: PrimFunc, trace: Trace,
                 slack: int) -> tuple[PrimFunc, Trace] | None:
    """The default schedule of conv2d `func` (`wide`: int16 weights) with the largest im2col cap
    above its current one whose scratch grows by at most `slack` bytes, or None when no larger
    cap changes the block within the slack. `scheduled`, `trace`: its current schedule."""
    cap = col_bytes_max(trace)
    if cap is None or slack <= 0 or family_of(func, target).name != "conv2d":
        return None
    base = default_config(func, target, wide)
    for bigger in sorted((c for c in COL_BYTES_DOMAIN if c > cap), reverse=True):
        f, t = apply_config(func, target, {**base, "col_bytes_max": bigger})
        extra = f.scratch_bytes - scheduled.scratch_bytes
        if 0 < extra <= slack:
            return f, t
    return None
