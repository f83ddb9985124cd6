"""Larger im2col blocks where the arena has room for them (issue 10's tuning finding), more
channels per pass for the whole-layer depthwise kernel's ring (depthwise_intrin.py), and a
fully connected layer's input row widened to int16 in scratch (fc_input=int16).

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
from .depthwise_intrin import ROWS_BLOCK_DOMAIN
from .gemm_schedule import COL_BYTES_DOMAIN
from .spaces import InvalidConfig, apply_config, default_config, family_of
from .trace import Schedule, Trace


def col_bytes_max(trace: Trace) -> int | None:
    """The im2col cap a conv2d schedule was made with (None: not a conv2d GEMM schedule)."""
    caps = [d.args[1] for d in trace.decisions if d.primitive == "knob" and d.args[0] == "col_bytes_max"]
    return caps[-1] if caps else None


def _knob(trace: Trace, name: str):
    values = [d.args[1] for d in trace.decisions if d.primitive == "knob" and d.args[0] == name]
    return values[-1] if values else None


def _larger_rows_block(func: PrimFunc, target, wide: bool, scheduled: PrimFunc, trace: Trace,
                       slack: int) -> tuple[PrimFunc, Trace] | None:
    """The same for the whole-layer depthwise kernel's ring: the most channels per pass
    (ROWS_BLOCK_DOMAIN, 0 = all) above the current block whose scratch fits the slack; a layer
    whose ring fits no default block (it runs the per-pixel kernels) takes one here if it can."""
    block = _knob(trace, "depthwise_rows_block")
    if block == 0 or _knob(trace, "depthwise_kernel") != "rows":
        return None
    base = default_config(func, target, wide)
    for bigger in (b for b in ROWS_BLOCK_DOMAIN if block is None or b == 0 or b > block):   # most first
        f, t = apply_config(func, target, {**base, "depthwise_kernel": "rows", "depthwise_rows_block": bigger})
        extra = f.scratch_bytes - scheduled.scratch_bytes
        if extra <= 0:      # the most channels add nothing (or no ring on this core): nor will fewer
            return None
        if extra <= slack:
            return f, t
    return None


def larger_block(func: PrimFunc, target, wide: bool, scheduled: PrimFunc, trace: Trace,
                 slack: int) -> tuple[PrimFunc, Trace] | None:
    """The default schedule of conv2d `func` (`wide`: int16 weights) with the largest im2col cap
    above its current one whose scratch grows by at most `slack` bytes, or None when no larger
    cap changes the block within the slack (a depthwise layer on the whole-layer kernel: its
    ring's channels per pass likewise). `scheduled`, `trace`: its current schedule."""
    if "scratch_union" in func.attrs:
        return _larger_part_blocks(func, target, wide, scheduled, trace, slack)
    if slack > 0 and family_of(func, target).name == "depthwise_conv2d":
        return _larger_rows_block(func, target, wide, scheduled, trace, slack)
    if family_of(func, target).name == "fully_connected":
        return _widened_input(func, target, wide, scheduled, trace, slack)
    cap = col_bytes_max(trace)
    if cap is None or slack <= 0 or family_of(func, target).name != "conv2d":
        return None
    base = default_config(func, target, wide)
    for bigger in sorted((c for c in COL_BYTES_DOMAIN if c > cap), reverse=True):
        f, t = apply_config(func, target, {**base, "col_bytes_max": bigger})
        extra = f.scratch_bytes - scheduled.scratch_bytes
        if extra <= 0:      # the largest cap's block is the current one: every cap between gives it too
            return None
        if extra <= slack:
            return f, t
    return None


def _widened_input(func: PrimFunc, target, wide: bool, scheduled: PrimFunc, trace: Trace,
                   slack: int) -> tuple[PrimFunc, Trace] | None:
    """A fully connected layer with int16 weights that reads its int8 input row in place (the
    default, no scratch for the row, an int32 tile of acc_rows units): its input widened into
    scratch instead (fc_input=int16: the requantizing kernel with no tile, 11 instructions per
    16 MACs, or the int16 panel kernel's aligned 32-k loop, 90 per 128, against the mixed
    kernel's 106) where the scratch it adds fits the slack (the fused kernel often needs less)."""
    if not wide or _knob(trace, "wide_weights") != 1 or _knob(trace, "fc_input") is not None:
        return None
    base = default_config(func, target, wide)
    try:
        f, t = apply_config(func, target, {**base, "fc_input": "int16"})
    except InvalidConfig:
        return None
    extra = f.scratch_bytes - scheduled.scratch_bytes
    return (f, t) if extra <= slack and _knob(t, "fc_input") == "int16" else None


def _larger_part_blocks(func: PrimFunc, target, wide: bool, scheduled: PrimFunc, trace: Trace,
                        slack: int) -> tuple[PrimFunc, Trace] | None:
    """A patch stage (lower/patch.py): each part's block grown as a layer's is, within the
    region the parts share (its largest part's scratch, free for the others) plus `slack`."""
    decision = next((d for d in trace.decisions if d.primitive == "schedule_parts"), None)
    if decision is None:
        return None
    parts = func.attrs["row_parts"].parts
    traces = [Trace.from_json(t) for t in decision.args[0]]
    done = [t.apply(p) for p, t in zip(parts, traces)]
    region = max((f.scratch_bytes for f in done), default=0)
    grown, changed = [], False
    for p, f, t in zip(parts, done, traces):
        knob = _knob(t, "wide_weights")      # each part as it was scheduled (no int16 on MVE)
        bigger = larger_block(p, target, wide if knob is None else bool(knob), f, t, region + slack - f.scratch_bytes)
        grown.append((bigger or (f, t))[1])
        changed = changed or bigger is not None
    if not changed:
        return None
    sch = Schedule(func)
    sch._apply("schedule_parts", [t.to_json() for t in grown])
    if sch.func.scratch_bytes - scheduled.scratch_bytes > slack:
        return None
    return sch.func, sch.trace
