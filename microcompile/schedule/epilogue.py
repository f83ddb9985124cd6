"""The requantizing store that ends an int8 convolution's accumulation, recognised in the
loop IR so that a micro-kernel can take it over (schedule/depthwise_intrin.py, and the
GEMM kernels of schedule/gemm_intrin.py):

    y[Y + oc] = int8(clamp(mc_mul_by_qm_pos_rshift(acc, mult[oc], rshift[oc]) + off, lo, hi))

and, for LiteRT's int8 fully connected layers, the single rounding with ties away from zero:

    y[Y + u] = int8(clamp(mc_mul_by_qm_single_round_away(acc, M, S) + off, lo, hi))

with M and S compile-time integers or constant arrays read at u.
"""

from __future__ import annotations

import numpy as np

from ..tir.interp import compile_expr
from ..tir.nodes import Buffer, BinOp, Call, Cast, IntImm, Load, add, simplify, walk
from .tensorize import affine


def eval_int(e, env: dict) -> int:
    return int(compile_expr(e)(env, {}))


def unit_load(e, var: str) -> tuple[Buffer, object] | None:
    """(buffer, base) of a Load whose index is base + var."""
    if not isinstance(e, Load):
        return None
    a = affine(e.index, {var})
    return (e.buffer, a[1]) if a is not None and a[0] == {var: 1} else None


def _to_int8(e, lo: int, hi: int, ssat: bool):
    """The store epilogues lower/saturate.py's to_int8 makes (schedule/ may not import lower/):
    int8(min(max(e, lo), hi)), or with SSAT int8(mc_ssat8(max(e, lo))) when hi is 127."""
    if not ssat:
        return Cast("int8", BinOp("min", BinOp("max", e, IntImm(lo)), IntImm(hi)))
    if hi != 127:
        return None
    return Cast("int8", Call("mc_ssat8", (BinOp("max", e, IntImm(lo)) if lo > -128 else e,), "int32"))


def requant_epilogue(e, acc: Buffer, ic: str) -> dict | None:
    """The parameters of int8(clamp(mc_mul_by_qm_pos_rshift(acc, mult[ic], r[ic]) + off, lo, hi)),
    found loosely and then checked by rebuilding the expression as the lowering makes it."""
    # Only the rshift form: the lowering emits it where it proved |acc| < 2^30 and right >= 1,
    # the domain in which the kernels' cheap rounding is exact.
    call = next((n for n in walk(e) if isinstance(n, Call) and n.name == "mc_mul_by_qm_pos_rshift"), None)
    if call is None or not (isinstance(call.args[0], Load) and call.args[0].buffer is acc):
        return None
    mult, shift = unit_load(call.args[1], ic), unit_load(call.args[2], ic)
    if mult is None or shift is None or eval_int(mult[1], {}) != 0 or eval_int(shift[1], {}) != 0:
        return None
    out = output_stage(e, call)
    return None if out is None else {"mult": mult[0], "rshift": shift[0], **out}


def output_stage(e, call: Call) -> dict | None:
    """{off, lo, hi} when `e` is int8(clamp(call + off, lo, hi)) as the lowering writes it (the
    clamp by min/max or SSAT), found loosely outside `call`'s own operands and then checked by
    rebuilding the expression; else None."""
    inside = {id(n) for n in walk(call)}       # an index's constant inside the call is not the offset
    outer = [n for n in walk(e) if id(n) not in inside]
    adds = [(n.b.value if n.op == "add" else -n.b.value) for n in outer
            if isinstance(n, BinOp) and n.op in ("add", "sub") and isinstance(n.b, IntImm)]
    lo = next((n.b.value for n in outer if isinstance(n, BinOp) and n.op == "max" and isinstance(n.b, IntImm)), -128)
    hi = next((n.b.value for n in outer if isinstance(n, BinOp) and n.op == "min" and isinstance(n.b, IntImm)), 127)
    off = (adds[:1] or [0])[0]
    inner = add(call, IntImm(off))
    for ssat in (False, True):
        rebuilt = _to_int8(inner, lo, hi, ssat)
        if rebuilt is not None and simplify(rebuilt) == simplify(e):
            return {"off": off, "lo": lo, "hi": hi}
    return None


def away_epilogue(e, acc: Buffer, ic: str, rows: int) -> dict | None:
    """{"mult_v", "shift_v" (one value per row of `rows`), off, lo, hi} of
    int8(clamp(mc_mul_by_qm_single_round_away(acc, M, S) + off, lo, hi)), M and S integers or
    constant arrays indexed by `ic`; else None."""
    call = next((n for n in walk(e) if isinstance(n, Call) and n.name == "mc_mul_by_qm_single_round_away"), None)
    if call is None or not (isinstance(call.args[0], Load) and call.args[0].buffer is acc):
        return None
    values = []
    for arg in call.args[1:]:
        if isinstance(arg, IntImm):
            values.append(np.full(rows, arg.value, np.int64))
            continue
        got = unit_load(arg, ic)
        if got is None or got[0].scope != "const" or got[0].data is None or eval_int(got[1], {}) != 0:
            return None
        values.append(np.asarray(got[0].data, np.int64).reshape(-1)[:rows])
    out = output_stage(e, call)
    return None if out is None else {"mult_v": values[0], "shift_v": values[1], **out}
