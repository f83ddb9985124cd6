"""The tensor intrinsics of the copy micro-kernels of runtime_c/include/mc_copy.h (the widening
copies, inline on DSP cores) and runtime_c/kernels/mve/mc_copy_mve.c (declared in
tir/intrinsics_copy.py).

    mc_widen_dsp_s8_s16(dst, src, n):   dst[i] = i16(src[i]) for i < n

matches a single loop (lets inside it are read in place) whose body is

    for i in 0..n { dst[d + i] = int16(src[s + i]) }        (dst int16, src int8)

e.g. the widening im2col copy of a conv's run of input channels once `unswitch` has taken
the padding test out of it:

    for ic_c in 0..16 { xv_cache[p*144 + kh*48 + kw*16 + ic_c] = int16(x[ih*512 + iw*16 + ic_c]) }
    --tensorize(ic_c, "mc_widen_dsp_s8_s16")-->
    mc_widen_dsp_s8_s16(&xv_cache[p*144 + kh*48 + kw*16], &x[ih*512 + iw*16], 16)

    mc_copy_mve_s8(dst, src, n):        dst[i] = src[i] for i < n (int8, Helium)

matches the same loop without the cast (the int8 im2col copy of Helium cores).
"""

from __future__ import annotations

from ..tir.intrinsics_copy import COPY_MVE_KERNEL, WIDEN_KERNEL
from ..tir.nodes import Address, Call, Cast, Evaluate, For, IntImm, LetStmt, Load, Store, substitute
from .tensorize import affine, tensor_intrin

def copy_run(loop: For, dst_dtype: str, src_dtype: str) -> dict | None:
    """for i in 0..n { dst[d + i] = [dst_dtype](src[s + i]) } (a cast where the dtypes differ),
    src another buffer than dst; lets inside read in place."""
    body = loop.body
    while isinstance(body, LetStmt):
        body = substitute(body.body, {body.var: body.value})
    if not isinstance(body, Store) or body.buffer.dtype != dst_dtype:
        return None
    load = body.value
    if dst_dtype != src_dtype:
        if not (isinstance(load, Cast) and load.dtype == dst_dtype):
            return None
        load = load.value
    if not (isinstance(load, Load) and load.buffer.dtype == src_dtype and load.buffer is not body.buffer):
        return None
    v = loop.var.name
    d, s = affine(body.index, {v}), affine(load.index, {v})
    if d is None or s is None or d[0] != {v: 1} or s[0] != {v: 1}:
        return None
    return {"dst": body.buffer, "dbase": d[1], "src": load.buffer, "sbase": s[1], "n": loop.extent}


def copy_emitter(kernel: str):
    """The call kernel(&dst[d], &src[s], n) of a run copy_run matched."""
    def emit(b: dict):
        return Evaluate(Call(kernel, (Address(b["dst"], b["dbase"]), Address(b["src"], b["sbase"]),
                                      IntImm(int(b["n"]))), "void"))
    return emit


tensor_intrin(WIDEN_KERNEL, copy_emitter(WIDEN_KERNEL), doc="int16 dst = int8 src (dsp)")(
    lambda loop: copy_run(loop, "int16", "int8"))
tensor_intrin(COPY_MVE_KERNEL, copy_emitter(COPY_MVE_KERNEL), doc="int8 dst = int8 src, a run (mve: the im2col copy)")(
    lambda loop: copy_run(loop, "int8", "int8"))
