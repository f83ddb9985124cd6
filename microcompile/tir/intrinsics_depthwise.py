"""The depthwise micro-kernels of runtime_c/include/mc_depthwise.h: declarations, Python
semantics, and the packed weight layout they read (int16, groups of four channels in the
order c, c+2, c+1, c+3 per tap: ORDER). The tensor intrinsic that reaches them and the
packing primitive are in schedule/depthwise_intrin.py.
"""

from __future__ import annotations

import numpy as np

from ..ir.fixedpoint import multiply_by_quantized_multiplier
from .intrinsics import StructType, intrinsic

DEPTHWISE_PARAMS = StructType("mc_depthwise_params_t", ("channels", "kh", "kw", "x_row", "x_col", "w_row", "w_group",
                                                         "out_offset", "act_min", "act_max"))

DEPTHWISE_VARIANTS = ("c", "dsp", "mve")
# Windows with a variant of their own (the sub-windows of a 3x3 filter at padding 1).
FIXED_WINDOWS = {"dsp": ((3, 3), (2, 3), (3, 2), (2, 2)), "c": (), "mve": ((3, 3), (2, 3), (3, 2), (2, 2))}
FIXED_W_ROW = 12              # int16 elements from one filter row to the next: 3 taps * 4 lanes
ORDER = (0, 2, 1, 3)          # packed position of channel c % 4 (mc_depthwise.h); its own inverse


def kernel_name(variant: str, kh: int, kw: int, w_row: int = FIXED_W_ROW) -> str:
    """The variant for a kh x kw window; the fixed-window ones also fix the filter's width."""
    fixed = f"{kh}x{kw}_" if (kh, kw) in FIXED_WINDOWS[variant] and w_row == FIXED_W_ROW else ""
    return f"mc_depthwise_{fixed}{variant}_s8"


def _impl(y, x, w, bias, mult, rshift, p: dict):
    """Python semantics of every variant (they differ only in speed)."""
    channels, kh, kw, x_row, x_col, w_row, w_group, out_offset, lo, hi = (p[f] for f in DEPTHWISE_PARAMS.fields)
    (ya, yo), (xa, xo), (wa, wo), (ba, bo), (ma, mo), (sa, so) = y, x, w, bias, mult, rshift
    c = np.arange(channels)
    acc = ba[bo + c].astype(np.int64)
    wc = wo + (c // 4) * w_group + np.array(ORDER)[c % 4]
    for i in range(kh):
        for j in range(kw):
            acc += xa[xo + i * x_row + j * x_col + c].astype(np.int64) * wa[wc + i * w_row + j * 4]
    assert np.all(np.abs(acc) < 2**30) and np.all(sa[so + c] >= 1), "outside mc_mul_by_qm_pos_rshift's domain"
    v = multiply_by_quantized_multiplier(acc, ma[mo + c].astype(np.int64), -sa[so + c].astype(np.int64))
    ya[yo + c] = np.clip(np.asarray(v, np.int64) + out_offset, lo, hi).astype(np.int8)


for _v in DEPTHWISE_VARIANTS:
    for _name in sorted({kernel_name(_v, 0, 0), *(kernel_name(_v, *k) for k in FIXED_WINDOWS[_v])}):
        intrinsic(_name, ("handle",) * 6 + (DEPTHWISE_PARAMS,), "void", "mc_depthwise.h", extern=True,
                  writes=(0,))(_impl)
