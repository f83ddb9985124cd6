"""The float32 depthwise micro-kernels of runtime_c/include/mc_depthwise_f32.h (Helium only):
their declaration and Python semantics.

    mc_depthwise_<clamp>mve_f32(y, x, w, bias, act_min, act_max, &{channels, kh, kw, x_row, x_col,
                                w_row, w_col}):
        one output pixel: for c < channels
            acc = bias[c]; for i < kh, j < kw: acc += x[i*x_row + j*x_col + c] * w[i*w_row + j*w_col + c]
            y[c] = acc | max(acc, act_min) | min(max(acc, act_min), act_max)

Each product fused into the sum with one rounding (VFMA.F32), taps in (i, j) order: the sums
here take the same steps, each product exact in float64 and the sum rounded to float32 (as
intrinsics_gemm_f32.py: equal to fmaf but for a rare double rounding; and Helium flushes
subnormals to zero, which this does not model: differences under 1.2e-38). The kernel reads a block's taps before it writes the block's outputs,
blocks of 16 channels and then of 4 in increasing order, and so do the semantics, so that an
output planned over its input (memory/inplace.py) is interpreted as the C runs it. The tensor
intrinsic that reaches it is in schedule/depthwise_f32.py.
"""

from __future__ import annotations

import numpy as np

from .intrinsics import StructType, intrinsic
from .intrinsics_gemm_f32 import ACT_MAX, ACT_MIN

DEPTHWISE_F32_PARAMS = StructType("mc_depthwise_f32_params_t",
                                  ("channels", "kh", "kw", "x_row", "x_col", "w_row", "w_col"))
DEPTHWISE_F32_MVE_KERNELS = {0: "mc_depthwise_mve_f32", ACT_MIN: "mc_depthwise_min_mve_f32",
                             ACT_MIN | ACT_MAX: "mc_depthwise_minmax_mve_f32"}
# the kernel's channel blocks: whole vectors of BLOCK channels, then GROUP at a time
BLOCK, GROUP = 16, 4


def channel_blocks(channels: int) -> list[tuple[int, int]]:
    """(first, count) of each block the kernel computes and stores, in order."""
    whole = channels // BLOCK * BLOCK
    return ([(c, BLOCK) for c in range(0, whole, BLOCK)]
            + [(c, min(GROUP, channels - c)) for c in range(whole, channels, GROUP)])


def _depthwise_f32(act: int):
    def impl(y_ptr, x_ptr, w_ptr, bias_ptr, act_min, act_max, p: dict):
        channels, kh, kw, x_row, x_col, w_row, w_col = (p[f] for f in DEPTHWISE_F32_PARAMS.fields)
        (ya, yo), (xa, xo), (wa, wo), (za, zo) = y_ptr, x_ptr, w_ptr, bias_ptr
        taps = [(i * x_row + j * x_col, i * w_row + j * w_col) for i in range(kh) for j in range(kw)]
        for c0, n in channel_blocks(channels):
            c = np.arange(c0, c0 + n)
            acc = za[zo + c].astype(np.float32)
            for xd, wd in taps:
                acc = (acc + xa[xo + xd + c].astype(np.float64) * wa[wo + wd + c].astype(np.float64)
                       ).astype(np.float32)
            if act & ACT_MIN:
                acc = np.where(acc < np.float32(act_min), np.float32(act_min), acc)
            if act & ACT_MAX:
                acc = np.where(acc > np.float32(act_max), np.float32(act_max), acc)
            ya[yo + c] = acc
    return impl


for _act, _name in DEPTHWISE_F32_MVE_KERNELS.items():
    intrinsic(_name, ("handle", "handle", "handle", "handle", "float32", "float32", DEPTHWISE_F32_PARAMS), "void",
              "mc_depthwise_f32.h", extern=True, writes=(0,))(_depthwise_f32(_act))
