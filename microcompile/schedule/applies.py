"""Which kernels the hand-written knob families take (schedule/spaces.py registers them in
this order, after f32_fpu's own test); every other kernel is the sketch family's
(schedule/sketch.py), for the default schedule (schedule/default.py) as for the tuner."""

from __future__ import annotations

from ..tir.nodes import Call, walk
from .gemm_f32 import f32_gemm_applies
from .tabulate import schedule_softmax_table


def conv_applies(func, target) -> bool:
    w = next((b for b in func.buffers if b.name == "w"), None)
    return func.attrs.get("op") == "conv2d" and not func.attrs.get("hybrid") and w is not None and w.dtype == "int8"


def fc_applies(func, target) -> bool:
    return func.attrs.get("op") == "fully_connected"


def dw_applies(func, target) -> bool:
    # int8 only: the other depthwise kernels (float32, int16) are loops, searched as sketches
    x = next((b for b in func.buffers if b.name == "x"), None)
    return func.attrs.get("op") == "depthwise_conv2d" and x is not None and x.dtype == "int8"


def add_applies(func, target) -> bool:
    # the quantized form (its rescale helper): float adds are loops, searched as sketches
    return func.attrs.get("op") in ("add", "sub") and any(
        isinstance(n, Call) and n.name == "mc_mul_by_qm_smaller_than_one_exp" for n in walk(func.body))


def softmax_applies(func, target) -> bool:
    return func.attrs.get("op") == "softmax" and schedule_softmax_table(func, target) is not None


HAND_WRITTEN = (conv_applies, f32_gemm_applies, fc_applies, dw_applies, add_applies, softmax_applies)


def sketch_family(func, target) -> bool:
    """True when no hand-written family takes `func`: its space is derived from its loop nest."""
    return not any(applies(func, target) for applies in HAND_WRITTEN)
