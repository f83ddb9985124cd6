"""Intrinsics the loop IR may `Call`: pure scalar helpers and extern micro-kernels.

Each entry gives the C symbol's signature, the header that defines it, and a Python
implementation that the loop-IR interpreter runs. Pure helpers mirror `ir/fixedpoint.py`
(which mirrors the TFLite reference kernels) and are defined in C as `static inline`
functions in runtime_c/include/mc_fixedpoint.h; extern micro-kernels live in
runtime_c/kernels/ and take pointers (`Address` arguments).

This module holds the table, its decorator and the scalar helpers; the micro-kernels are
declared by family in intrinsics_*.py. The C emitter, the verifier and the interpreter
need nothing else: a kernel's declaration is complete without the schedule that reaches it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from ..ir import fixedpoint as fp
from .nodes import ParamStruct


@dataclass(frozen=True)
class StructType:
    """A C parameter struct of int32 fields that a micro-kernel takes by const pointer."""

    ctype: str
    fields: tuple[str, ...]

    @property
    def dtype(self) -> str:
        return f"struct {self.ctype}"

    def __call__(self, **values: int) -> ParamStruct:
        """The ParamStruct with these field values (every field, in declaration order)."""
        assert set(values) == set(self.fields), f"{self.ctype}: fields {sorted(values)} != {sorted(self.fields)}"
        return ParamStruct(self.ctype, tuple((f, int(values[f])) for f in self.fields))


@dataclass(frozen=True)
class Intrinsic:
    name: str
    arg_dtypes: tuple              # dtype strings; "handle" for a pointer; a StructType for a params struct
    dtype: str                      # result dtype; "void" for extern kernels
    header: str
    impl: Callable                  # Python semantics; pointers arrive as (flat ndarray, offset)
    extern: bool = False            # an extern micro-kernel (used under Evaluate), not a pure helper
    writes: tuple[int, ...] = ()    # indices of the pointer arguments an extern kernel writes


REGISTRY: dict[str, Intrinsic] = {}


def intrinsic(name: str, arg_dtypes: tuple[str, ...], dtype: str, header: str, *, extern: bool = False,
              writes: tuple[int, ...] = ()):
    """Declare the intrinsic `name` (its C signature and header) with the decorated function
    as its Python semantics."""
    def register(impl: Callable) -> Callable:
        assert name not in REGISTRY, f"intrinsic {name} registered twice"
        REGISTRY[name] = Intrinsic(name, tuple(arg_dtypes), dtype, header, impl, extern, tuple(writes))
        return impl
    return register


def get(name: str) -> Intrinsic:
    return REGISTRY[name]


def pointer_view(ptr, n: int) -> np.ndarray:
    """The n elements at a pointer argument, (flat array, offset): a view, so that an extern
    kernel's semantics can update state in place."""
    a, o = ptr
    return a[o:o + n]


def requantized(acc, mult, rshift, p: dict) -> np.ndarray:
    """int8 clamp(mc_mul_by_qm_pos_rshift(acc, mult, rshift) + p["out_offset"], p["act_min"],
    p["act_max"]) (mult and rshift broadcast against acc), checking the cheap form's domain
    (|acc| < 2^30, rshift >= 1, mult >= 0), which the micro-kernels' vector rounding needs."""
    acc, mult, rshift = (np.asarray(a, np.int64) for a in (acc, mult, rshift))
    assert np.all(np.abs(acc) < 2**30) and np.all(rshift >= 1) and np.all(mult >= 0), \
        "outside mc_mul_by_qm_pos_rshift's domain"
    v = np.asarray(fp.multiply_by_quantized_multiplier(acc, mult, -rshift), np.int64) + p["out_offset"]
    return np.clip(v, p["act_min"], p["act_max"]).astype(np.int8)


def window_taps(x: np.ndarray, p: dict, kh: int, kw: int):
    """Each tap (t, u) of an NHWC window kernel and what every output pixel reads there,
    [n, out_h, out_w, c] int64, a padded tap reading p["zp_in"]. `x`: the input [n, h, w, c];
    p: pad_top, pad_left, stride_h, stride_w, out_h, out_w, zp_in, and dil_h, dil_w (default 1)."""
    n, ih, iw, c = x.shape
    oh, ow, sh, sw = p["out_h"], p["out_w"], p["stride_h"], p["stride_w"]
    pt, pl, dh, dw = p["pad_top"], p["pad_left"], p.get("dil_h", 1), p.get("dil_w", 1)
    hp, wp = max(ih + pt, (oh - 1) * sh + (kh - 1) * dh + 1), max(iw + pl, (ow - 1) * sw + (kw - 1) * dw + 1)
    xp = np.full((n, hp, wp, c), p["zp_in"], np.int64)
    xp[:, pt:pt + ih, pl:pl + iw] = x
    for t in range(kh):
        for u in range(kw):
            yield t, u, xp[:, t * dh:t * dh + (oh - 1) * sh + 1:sh, u * dw:u * dw + (ow - 1) * sw + 1:sw]


def pointer_store(ptr, value) -> None:
    """Write `value` (any shape, flattened) at a pointer argument, in the buffer's dtype."""
    a, o = ptr
    value = np.asarray(value).reshape(-1)
    a[o:o + value.size] = value.astype(a.dtype)


_FP_H = "mc_fixedpoint.h"
_I32x3 = ("int32", "int32", "int32")


@intrinsic("mc_mul_by_qm", _I32x3, "int32", _FP_H)
def _mul_by_qm(x, m, s):
    return int(fp.multiply_by_quantized_multiplier(x, m, s))


@intrinsic("mc_mul_by_qm_single_round", _I32x3, "int32", _FP_H)
def _mul_by_qm_single_round(x, m, s):
    return int(fp.multiply_by_quantized_multiplier_single_round(x, m, s))


@intrinsic("mc_mul_by_qm_single_round_away", _I32x3, "int32", _FP_H)
def _mul_by_qm_single_round_away(x, m, s):
    return int(fp.multiply_by_quantized_multiplier_single_round_away(x, m, s))


@intrinsic("mc_mul_by_qm_single_round_even", _I32x3, "int32", _FP_H)
def _mul_by_qm_single_round_even(x, m, s):
    return int(fp.multiply_by_quantized_multiplier_single_round_even(x, m, s))


@intrinsic("mc_mul_by_qm_smaller_than_one_exp", _I32x3, "int32", _FP_H)
def _mul_by_qm_smaller_than_one_exp(x, m, s):
    return int(fp.multiply_by_quantized_multiplier_smaller_than_one_exp(x, m, s))


# expf as the C library computes it in float32; numpy's float32 exp agrees to within an ulp,
# which the float32 tests' tolerance covers.
@intrinsic("expf", ("float32",), "float32", "math.h")
def _expf(x):
    return np.float32(math.exp(float(x)))


# roundf: half away from zero (std::round), exact on float32 inputs.
@intrinsic("roundf", ("float32",), "float32", "math.h")
def _roundf(x):
    return np.float32(fp.tflite_round(np.float64(x)))


# rintf: half to even in the default rounding mode (ONNX's QuantizeLinear), exact on float32.
@intrinsic("rintf", ("float32",), "float32", "math.h")
def _rintf(x):
    return np.float32(np.rint(np.float64(x)))


SOFTMAX_PARAMS = StructType("mc_softmax_params_t", ("rows", "depth", "input_multiplier", "input_left_shift",
                                                     "diff_min"))


def _softmax_s8_rows(x_ptr, y_ptr, p, out_bits: int, out_dtype):
    """Python twin of runtime_c/kernels/mc_softmax.c (TFLite reference_ops::Softmax, int8 in,
    `out_bits` bits out)."""
    (xa, xo), (ya, yo) = x_ptr, y_ptr
    rows, depth, mult, left_shift, diff_min = (p[k] for k in SOFTMAX_PARAMS.fields)
    x = xa[xo:xo + rows * depth].reshape(rows, depth).astype(np.int64)
    diff = x - x.max(axis=-1, keepdims=True)
    live = diff >= diff_min
    scaled = fp.multiply_by_quantized_multiplier_greater_than_one(np.where(live, diff, 0), mult, left_shift)
    exps = fp.exp_on_negative_values(scaled, 5)                       # Q5.26 in, Q0.31 out
    sums = np.where(live, fp.rescale(exps, 0, 12), 0).sum(axis=-1, keepdims=True)   # Q12.19
    recip, bits = fp.get_reciprocal(sums, 12)
    unsat = fp.rounding_divide_by_pot(fp.saturating_rounding_doubling_high_mul(recip, exps), bits + 31 - out_bits)
    lo, hi = -(1 << (out_bits - 1)), (1 << (out_bits - 1)) - 1
    out = np.where(live, np.clip(unsat + lo, lo, hi), lo)
    ya[yo:yo + rows * depth] = out.reshape(-1).astype(out_dtype)


@intrinsic("mc_softmax_s8", ("handle", "handle", SOFTMAX_PARAMS), "void", "mc_softmax.h", extern=True, writes=(1,))
def _softmax_s8(x_ptr, y_ptr, p):
    _softmax_s8_rows(x_ptr, y_ptr, p, 8, np.int8)


@intrinsic("mc_softmax_s8_s16", ("handle", "handle", SOFTMAX_PARAMS), "void", "mc_softmax.h", extern=True,
           writes=(1,))
def _softmax_s8_s16(x_ptr, y_ptr, p):
    _softmax_s8_rows(x_ptr, y_ptr, p, 16, np.int16)


def softmax_exp_table(input_multiplier: int, input_left_shift: int) -> np.ndarray:
    """The Q0.31 exp of the scaled difference -d for d = 0..255 (int32 [256]): what mc_softmax_s8
    computes per element, for the _table kernels to look up."""
    diffs = -np.arange(256, dtype=np.int64)
    scaled = fp.multiply_by_quantized_multiplier_greater_than_one(diffs, input_multiplier, input_left_shift)
    return fp.exp_on_negative_values(scaled, 5).astype(np.int32)


def _checked_table(t_ptr, p) -> None:
    ta, to = t_ptr
    want = softmax_exp_table(p["input_multiplier"], p["input_left_shift"])
    assert np.array_equal(ta[to:to + 256], want), "mc_softmax_s8_table: the exp table does not fit the parameters"


@intrinsic("mc_softmax_s8_table", ("handle", "handle", "handle", SOFTMAX_PARAMS), "void", "mc_softmax.h",
           extern=True, writes=(1,))
def _softmax_s8_table(x_ptr, y_ptr, t_ptr, p):
    _checked_table(t_ptr, p)
    _softmax_s8_rows(x_ptr, y_ptr, p, 8, np.int8)


@intrinsic("mc_softmax_s8_s16_table", ("handle", "handle", "handle", SOFTMAX_PARAMS), "void", "mc_softmax.h",
           extern=True, writes=(1,))
def _softmax_s8_s16_table(x_ptr, y_ptr, t_ptr, p):
    _checked_table(t_ptr, p)
    _softmax_s8_rows(x_ptr, y_ptr, p, 16, np.int16)


# Bit-identical cheaper forms of mc_mul_by_qm for multipliers >= 0 (runtime_c/include/mc_requant.h
# derives why). The lowering only emits them for multipliers it has checked are >= 0.
@intrinsic("mc_mul_by_qm_pos", _I32x3, "int32", "mc_requant.h")
def _qm_pos(x, m, s):
    assert m >= 0, f"mc_mul_by_qm_pos needs a multiplier >= 0, got {m}"
    return int(fp.multiply_by_quantized_multiplier(x, m, s))


@intrinsic("mc_mul_by_qm_pos_right", _I32x3, "int32", "mc_requant.h")
def _qm_pos_right(x, m, r):
    return _qm_pos(x, m, -r)


@intrinsic("mc_mul_by_qm_pos_rshift", _I32x3, "int32", "mc_requant.h")
def _qm_pos_rshift(x, m, r):
    assert r >= 1 and abs(int(x)) < 2**30, f"mc_mul_by_qm_pos_rshift: right {r}, x {x} out of its domain"
    return _qm_pos(x, m, -r)


# SSAT #8 (runtime_c/include/mc_ssat.h); emitted only for cores with the SSAT instruction.
@intrinsic("mc_ssat8", ("int32",), "int32", "mc_ssat.h")
def _ssat8(x):
    return int(min(max(int(x), -128), 127))
