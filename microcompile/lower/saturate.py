"""The int8 store epilogue: offset already added, clamp to the activation range, narrow.

On cores with SSAT (the `ssat` fact of boards/cores/*.toml: Armv7-M and later) the clamp to
[-128, 127] is one instruction, and a RELU-style lower bound above -128 one more max;
elsewhere (Armv6-M, the host) it is the plain min/max pair. The target decides, the C never
branches on the core.
"""

from __future__ import annotations

from ..tir.nodes import BinOp, Call, Expr, IntImm
from .common import clamp, i8

def has_ssat(target) -> bool:
    return target is not None and target.ssat


def to_int8(e: Expr, lo: int, hi: int, target) -> Expr:
    """(int8)clamp(e, lo, hi) for an int32 `e`, with SSAT where the target has it."""
    if not (has_ssat(target) and hi == 127):
        return i8(clamp(e, lo, hi))
    if lo > -128:
        e = BinOp("max", e, IntImm(int(lo)))
    return i8(Call("mc_ssat8", (e,), "int32"))
