"""The float32 GEMM micro-kernels of runtime_c/include/mc_gemm_f32.h: their declarations and
Python semantics.

    mc_gemm_p4_<clamp>fpu_f32(y, a_packed, b, bias, act_min, act_max, &{m, n, k, ldb, ldy}):
        for j < n, i < m:
            acc = bias[i] + sum_{p < k} a[i][p] * b[j*ldb + p]        (p in increasing order)
            y[j*ldy + i] = acc                               mc_gemm_p4_fpu_f32
                           max(acc, act_min)                 mc_gemm_p4_min_fpu_f32
                           min(max(acc, act_min), act_max)   mc_gemm_p4_minmax_fpu_f32

    mc_gemm_p4_<clamp>mve_f32(...): the same on Helium's float vectors (the same semantics)

    mc_copy_f32(dst, src, n):   dst[i] = src[i] for i < n   (a run of the im2col copy)
    mc_copy_mve_f32(dst, src, n): the same by 16-byte vectors (Helium)

A is packed in panels of four rows with groups of one k (intrinsics_gemm.pack_panels4 with
group 1: a[(P*k + p)*4 + r] = A[4P + r][p]). The C sums each product into the running sum
with one rounding (fmaf, one VFMA.F32); the semantics here take the same steps in the same
order, each product exact in float64 and the sum rounded to float32 (equal to fmaf except in
the rare case of a double rounding). Against the lowered loops (a float32 multiply, then an
add) the results differ by the products' roundings, which the float tests' tolerance
(ir/compare) covers. The tensor intrinsic that reaches the kernels is in schedule/gemm_f32.py.
"""

from __future__ import annotations

import numpy as np

from .intrinsics import StructType, intrinsic
from .intrinsics_gemm import unpack_panels4

GEMM_F32_PARAMS = StructType("mc_gemm_f32_params_t", ("m", "n", "k", "ldb", "ldy"))
# which clamp bounds apply: 1 the lower (act_min), 2 the upper (act_max)
ACT_MIN, ACT_MAX = 1, 2
# the kernel of each clamp (an upper bound alone is no TFLite activation: no kernel)
GEMM_F32_KERNELS = {0: "mc_gemm_p4_fpu_f32", ACT_MIN: "mc_gemm_p4_min_fpu_f32",
                    ACT_MIN | ACT_MAX: "mc_gemm_p4_minmax_fpu_f32"}
# the same on Helium's float vectors (kernels/mve/mc_gemm_f32_mve.c): the same sums, in the same
# order, each product fused with one rounding, so the same semantics, except that Helium flushes
# subnormals to zero (differences under 1.2e-38, within ir/compare's tolerance)
GEMM_F32_MVE_KERNELS = {act: name.replace("_fpu_", "_mve_") for act, name in GEMM_F32_KERNELS.items()}
# the register tile's columns (mc_gemm_f32.h): blocks of output pixels are best a multiple
TILE_COLS = 4


def _gemm_f32(act: int):
    def impl(y_ptr, a_ptr, b_ptr, bias_ptr, act_min, act_max, p: dict):
        m, n, k, ldb, ldy = (p[f] for f in GEMM_F32_PARAMS.fields)
        (ya, yo), (aa, ao), (ba, bo), (za, zo) = y_ptr, a_ptr, b_ptr, bias_ptr
        a = unpack_panels4(aa[ao:], m, k, 1).astype(np.float64)
        b = ba[bo + np.arange(n)[:, None] * ldb + np.arange(k)[None, :]].astype(np.float64)
        acc = np.broadcast_to(za[zo:zo + m].astype(np.float32), (n, m))   # [n, m]
        for q in range(k):
            acc = (acc + b[:, q:q + 1] * a[None, :, q]).astype(np.float32)
        if act & ACT_MIN:
            acc = np.maximum(acc, np.float32(act_min))
        if act & ACT_MAX:
            acc = np.minimum(acc, np.float32(act_max))
        ya[yo + np.arange(n)[:, None] * ldy + np.arange(m)[None, :]] = acc
    return impl


for _act, _name in [*GEMM_F32_KERNELS.items(), *GEMM_F32_MVE_KERNELS.items()]:
    intrinsic(_name, ("handle", "handle", "handle", "handle", "float32", "float32", GEMM_F32_PARAMS), "void",
              "mc_gemm_f32.h", extern=True, writes=(0,))(_gemm_f32(_act))


# The im2col copy of a run of float32 channels (schedule/gemm_f32.py): dst[i] = src[i], i < n;
# on Helium cores by vectors.
COPY_F32_KERNEL = "mc_copy_f32"
COPY_F32_MVE_KERNEL = "mc_copy_mve_f32"


def _copy_f32(dst_ptr, src_ptr, n):
    (da, do), (sa, so) = dst_ptr, src_ptr
    da[do:do + n] = sa[so:so + n]


for _name in (COPY_F32_KERNEL, COPY_F32_MVE_KERNEL):
    intrinsic(_name, ("handle", "handle", "int32"), "void", "mc_gemm_f32.h", extern=True, writes=(0,))(_copy_f32)
