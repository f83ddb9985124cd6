"""Intrinsics the loop IR may `Call`: pure scalar helpers and extern micro-kernels.

Each entry gives the C symbol's signature, the header that defines it, and a Python
implementation that the loop-IR interpreter runs. Pure helpers mirror `fixedpoint.py`
(which mirrors the TFLite reference kernels) and are defined in C as `static inline`
functions in runtime_c/include/mc_fixedpoint.h; extern micro-kernels live in
runtime_c/kernels/ and take pointers (`Address` arguments).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np


@dataclass(frozen=True)
class Intrinsic:
    name: str
    arg_dtypes: tuple[str, ...]     # "handle" for a pointer argument
    dtype: str                      # result dtype; "void" for extern kernels
    header: str
    impl: Callable                  # Python semantics; pointers arrive as (flat ndarray, offset)
    extern: bool = False            # an extern micro-kernel (used under Evaluate), not a pure helper
    writes: tuple[int, ...] = ()    # indices of the pointer arguments an extern kernel writes


REGISTRY: dict[str, Intrinsic] = {}


def register(i: Intrinsic) -> Intrinsic:
    assert i.name not in REGISTRY, f"intrinsic {i.name} registered twice"
    REGISTRY[i.name] = i
    return i


def get(name: str) -> Intrinsic:
    return REGISTRY[name]


def _fp():
    # Imported on use so the loop IR does not depend on the fixed-point module at import time.
    from . import fixedpoint
    return fixedpoint


_FP_H = "mc_fixedpoint.h"

register(Intrinsic("mc_mul_by_qm", ("int32", "int32", "int32"), "int32", _FP_H,
                   lambda x, m, s: int(_fp().multiply_by_quantized_multiplier(x, m, s))))
register(Intrinsic("mc_mul_by_qm_single_round", ("int32", "int32", "int32"), "int32", _FP_H,
                   lambda x, m, s: int(_fp().multiply_by_quantized_multiplier_single_round(x, m, s))))
register(Intrinsic("mc_mul_by_qm_single_round_away", ("int32", "int32", "int32"), "int32", _FP_H,
                   lambda x, m, s: int(_fp().multiply_by_quantized_multiplier_single_round_away(x, m, s))))
register(Intrinsic("mc_mul_by_qm_smaller_than_one_exp", ("int32", "int32", "int32"), "int32", _FP_H,
                   lambda x, m, s: int(_fp().multiply_by_quantized_multiplier_smaller_than_one_exp(x, m, s))))
# expf as the C library computes it in float32; numpy's float32 exp agrees to within an ulp,
# which the float32 tests' tolerance covers.
register(Intrinsic("expf", ("float32",), "float32", "math.h",
                   lambda x: np.float32(math.exp(float(x)))))


def _softmax_s8(x_ptr, y_ptr, rows, depth, mult, left_shift, diff_min):
    """Python twin of runtime_c/kernels/mc_softmax.c (TFLite reference_ops::Softmax, int8)."""
    fp = _fp()
    (xa, xo), (ya, yo) = x_ptr, y_ptr
    x = xa[xo:xo + rows * depth].reshape(rows, depth).astype(np.int64)
    diff = x - x.max(axis=-1, keepdims=True)
    live = diff >= diff_min
    scaled = fp.multiply_by_quantized_multiplier_greater_than_one(np.where(live, diff, 0), mult, left_shift)
    exps = fp.exp_on_negative_values(scaled, 5)                       # Q5.26 in, Q0.31 out
    sums = np.where(live, fp.rescale(exps, 0, 12), 0).sum(axis=-1, keepdims=True)   # Q12.19
    recip, bits = fp.get_reciprocal(sums, 12)
    unsat = fp.rounding_divide_by_pot(fp.saturating_rounding_doubling_high_mul(recip, exps), bits + 31 - 8)
    out = np.where(live, np.clip(unsat - 128, -128, 127), -128)
    ya[yo:yo + rows * depth] = out.reshape(-1).astype(np.int8)


register(Intrinsic("mc_softmax_s8", ("handle", "handle", "int32", "int32", "int32", "int32", "int32"),
                   "void", "mc_softmax.h", _softmax_s8, extern=True, writes=(1,)))


# roundf: half away from zero (std::round), exact on float32 inputs.
register(Intrinsic("roundf", ("float32",), "float32", "math.h",
                   lambda x: np.float32(_fp().tflite_round(np.float64(x)))))


# Bit-identical cheaper forms of mc_mul_by_qm for multipliers >= 0 (runtime_c/include/mc_requant.h
# derives why). The lowering only emits them for multipliers it has checked are >= 0.
def _qm_pos(x, m, s):
    assert m >= 0, f"mc_mul_by_qm_pos needs a multiplier >= 0, got {m}"
    return int(_fp().multiply_by_quantized_multiplier(x, m, s))


register(Intrinsic("mc_mul_by_qm_pos", ("int32", "int32", "int32"), "int32", "mc_requant.h", _qm_pos))
register(Intrinsic("mc_mul_by_qm_pos_right", ("int32", "int32", "int32"), "int32", "mc_requant.h",
                   lambda x, m, r: _qm_pos(x, m, -r)))


def _qm_pos_rshift(x, m, r):
    assert r >= 1 and abs(int(x)) < 2**30, f"mc_mul_by_qm_pos_rshift: right {r}, x {x} out of its domain"
    return _qm_pos(x, m, -r)


register(Intrinsic("mc_mul_by_qm_pos_rshift", ("int32", "int32", "int32"), "int32", "mc_requant.h", _qm_pos_rshift))
# SSAT #8 (runtime_c/include/mc_ssat.h); emitted only for Armv7-M and later cores.
register(Intrinsic("mc_ssat8", ("int32",), "int32", "mc_ssat.h", lambda x: int(min(max(int(x), -128), 127))))
