"""The copy micro-kernels of runtime_c/include/mc_copy.h.

    mc_widen_dsp_s8_s16(dst, src, n):   dst[i] = i16(src[i]) for i < n
    mc_unpack_s4_s8(dst, src, n):       dst[i] = the i-th int4 value packed in src, for i < n
    mc_unpack_s4_s16(dst, src, n):      the same into int16 (the depthwise kernels' weights)
                                        (every core: runtime_c/kernels/mc_copy.c)
    mc_move_bytes(dst, src, n):         memmove of n bytes (a patch stage's kept window rows)
    mc_copy_mve_s8(dst, src, n):        dst[i] = src[i] for i < n, int8 (Helium: the im2col copy,
                                        runtime_c/kernels/mve/mc_copy_mve.c)
"""

from __future__ import annotations

import numpy as np

from .intrinsics import intrinsic

WIDEN_KERNEL = "mc_widen_dsp_s8_s16"


@intrinsic(WIDEN_KERNEL, ("handle", "handle", "int32"), "void", "mc_copy.h", extern=True, writes=(0,))
def _widen_impl(dst_ptr, src_ptr, n):
    (da, do), (sa, so) = dst_ptr, src_ptr
    da[do:do + n] = sa[so:so + n].astype(np.int16)


UNPACK_S4_KERNELS = {"int8": "mc_unpack_s4_s8", "int16": "mc_unpack_s4_s16"}


def _unpack_s4_impl(dst_ptr, src_ptr, n):
    # The interpreter holds a packed int4 constant as its values (tir/nodes.py PACKED_INT4):
    # the packing itself is tested on the C kernel (tests/lower/test_int4_weights.py).
    (da, do), (sa, so) = dst_ptr, src_ptr
    assert so == 0, "an int4 constant is unpacked from its start"
    da[do:do + n] = sa[:n].astype(da.dtype)


for _name in UNPACK_S4_KERNELS.values():
    intrinsic(_name, ("handle", "handle", "int32"), "void", "mc_copy.h", extern=True, writes=(0,))(_unpack_s4_impl)


MOVE_KERNEL = "mc_move_bytes"


@intrinsic(MOVE_KERNEL, ("handle", "handle", "int32"), "void", "mc_copy.h", extern=True, writes=(0,))
def _move_impl(dst_ptr, src_ptr, n):
    (da, do), (sa, so) = dst_ptr, src_ptr
    items = n // da.itemsize
    da[do:do + items] = sa[so:so + items].copy()


COPY_MVE_KERNEL = "mc_copy_mve_s8"


@intrinsic(COPY_MVE_KERNEL, ("handle", "handle", "int32"), "void", "mc_copy.h", extern=True, writes=(0,))
def _copy_mve_impl(dst_ptr, src_ptr, n):
    (da, do), (sa, so) = dst_ptr, src_ptr
    da[do:do + n] = sa[so:so + n]
