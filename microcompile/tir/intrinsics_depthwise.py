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


def _depthwise(y, x, w, bias, mult, rshift, p: dict):
    """Python semantics of every variant (they differ only in speed); bias, mult and rshift
    are int64 arrays over the channels."""
    channels, kh, kw, x_row, x_col, w_row, w_group, out_offset, lo, hi = (p[f] for f in DEPTHWISE_PARAMS.fields)
    (ya, yo), (xa, xo), (wa, wo) = y, x, w
    c = np.arange(channels)
    acc = bias.copy()
    wc = wo + (c // 4) * w_group + np.array(ORDER)[c % 4]
    for i in range(kh):
        for j in range(kw):
            acc += xa[xo + i * x_row + j * x_col + c].astype(np.int64) * wa[wc + i * w_row + j * 4]
    assert np.all(np.abs(acc) < 2**30) and np.all(rshift >= 1), "outside mc_mul_by_qm_pos_rshift's domain"
    v = multiply_by_quantized_multiplier(acc, mult, -rshift)
    ya[yo + c] = np.clip(np.asarray(v, np.int64) + out_offset, lo, hi).astype(np.int8)


def _impl(y, x, w, bias, mult, rshift, p: dict):
    c = np.arange(p["channels"])
    (ba, bo), (ma, mo), (sa, so) = bias, mult, rshift
    _depthwise(y, x, w, ba[bo + c].astype(np.int64), ma[mo + c].astype(np.int64), sa[so + c].astype(np.int64), p)


for _v in DEPTHWISE_VARIANTS:
    for _name in sorted({kernel_name(_v, 0, 0), *(kernel_name(_v, *k) for k in FIXED_WINDOWS[_v])}):
        intrinsic(_name, ("handle",) * 6 + (DEPTHWISE_PARAMS,), "void", "mc_depthwise.h", extern=True,
                  writes=(0,))(_impl)


# ---------------------------------------------------------------- requantization records
# The DSP fixed-window kernels read each group of four channels' output arithmetic as one
# record of RQ_RECORD int32 (three LDM): bias[4], mult[4] and rshift[4] - 1 (the shift their
# rounding takes, mc_requant_dsp.h). A partial last group is zero-padded.
RQ_RECORD = 12
RQ_WINDOWS = FIXED_WINDOWS["dsp"]


def rq_kernel_name(kh: int, kw: int) -> str:
    return f"mc_depthwise_{kh}x{kw}_dsp_rq_s8"


def requant_records(bias: np.ndarray, mult: np.ndarray, rshift: np.ndarray) -> np.ndarray:
    """[C] bias, mult, rshift -> the flat int32 records (groups of four channels)."""
    c = len(bias)
    groups = -(-c // 4)
    rec = np.zeros((groups, 3, 4), np.int64)
    for k, (arr, delta) in enumerate(((bias, 0), (mult, 0), (rshift, -1))):
        flat = np.zeros(groups * 4, np.int64)
        flat[:c] = np.asarray(arr[:c], np.int64) + delta
        rec[:, k, :] = flat.reshape(groups, 4)
    return rec.reshape(-1).astype(np.int32)


def _impl_rq(y, x, w, rq, p: dict):
    c = np.arange(p["channels"])
    ra, ro = rq
    at = ro + (c // 4) * RQ_RECORD + c % 4
    _depthwise(y, x, w, ra[at].astype(np.int64), ra[at + 4].astype(np.int64), ra[at + 8].astype(np.int64) + 1, p)


for _kh, _kw in RQ_WINDOWS:
    intrinsic(rq_kernel_name(_kh, _kw), ("handle",) * 4 + (DEPTHWISE_PARAMS,), "void", "mc_depthwise.h",
              extern=True, writes=(0,))(_impl_rq)
