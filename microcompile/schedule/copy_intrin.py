"""The tensor intrinsic of the copy micro-kernels of runtime_c/kernels/dsp/mc_copy_dsp.c
(declared in tir/intrinsics_copy.py).

    mc_widen_dsp_s8_s16(dst, src, n):   dst[i] = i16(src[i]) for i < n

matches a single loop (lets inside it are read in place) whose body is

    for i in 0..n { dst[d + i] = int16(src[s + i]) }        (dst int16, src int8)

e.g. the widening im2col copy of a conv's run of input channels once `unswitch` has taken
the padding test out of it:

    for ic_c in 0..16 { xv_cache[p*144 + kh*48 + kw*16 + ic_c] = int16(x[ih*512 + iw*16 + ic_c]) }
    --tensorize(ic_c, "mc_widen_dsp_s8_s16")-->
    mc_widen_dsp_s8_s16(&xv_cache[p*144 + kh*48 + kw*16], &x[ih*512 + iw*16], 16)
"""

from __future__ import annotations

from ..tir.intrinsics_copy import WIDEN_KERNEL
from ..tir.nodes import Address, Call, Cast, Evaluate, For, IntImm, LetStmt, Load, Store, substitute
from .tensorize import affine, tensor_intrin

def _match_widen(loop: For) -> dict | None:
    body = loop.body
    while isinstance(body, LetStmt):
        body = substitute(body.body, {body.var: body.value})
    if not (isinstance(body, Store) and body.buffer.dtype == "int16" and isinstance(body.value, Cast)
            and body.value.dtype == "int16" and isinstance(body.value.value, Load)
            and body.value.value.buffer.dtype == "int8"):
        return None
    v = loop.var.name
    d, s = affine(body.index, {v}), affine(body.value.value.index, {v})
    if d is None or s is None or d[0] != {v: 1} or s[0] != {v: 1}:
        return None
    return {"dst": body.buffer, "dbase": d[1], "src": body.value.value.buffer, "sbase": s[1], "n": loop.extent}


def _emit_widen(b: dict):
    return Evaluate(Call(WIDEN_KERNEL, (Address(b["dst"], b["dbase"]), Address(b["src"], b["sbase"]),
                                        IntImm(int(b["n"]))), "void"))


tensor_intrin(WIDEN_KERNEL, _emit_widen, doc="int16 dst = int8 src (dsp)")(_match_widen)
