"""The copy micro-kernels of runtime_c/include/mc_copy.h.

    mc_widen_dsp_s8_s16(dst, src, n):   dst[i] = i16(src[i]) for i < n
"""

from __future__ import annotations

import numpy as np

from .intrinsics import intrinsic

WIDEN_KERNEL = "mc_widen_dsp_s8_s16"


@intrinsic(WIDEN_KERNEL, ("handle", "handle", "int32"), "void", "mc_copy.h", extern=True, writes=(0,))
def _widen_impl(dst_ptr, src_ptr, n):
    (da, do), (sa, so) = dst_ptr, src_ptr
    da[do:do + n] = sa[so:so + n].astype(np.int16)
