"""int8 log_softmax: TFLite's fixed-point log and reference_integer_ops::LogSoftmax, in numpy.

`log_x_for_x_ge_1` mirrors TFLite's log_x_for_x_greater_than_or_equal_to_1 (internal/
common.h): a raw Q(in_bits) value >= 1 in, log of it as raw Q(out_bits) out. The C twin is
runtime_c/kernels/mc_log_softmax.c; both are checked against LiteRT BUILTIN_REF.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import fixedpoint as fp

_i64 = fp._i64
_mul = fp.saturating_rounding_doubling_high_mul   # FixedPoint * FixedPoint (raw)
_wrap = fp.wrap32                                 # FixedPoint + FixedPoint (raw, wraps)


@dataclass(frozen=True)
class LogSoftmaxParams:
    input_multiplier: int
    input_left_shift: int
    reverse_multiplier: int
    reverse_shift: int
    diff_min: int


# Q0.31 constants of the log approximation (TFLite's GEMMLOWP_CHECKED_FIXEDPOINT_CONSTANTs).
LOG_2 = 1488522236            # log(2)
SQRT_SQRT_HALF = 1805811301   # 0.5^(1/4)
SQRT_HALF = 1518500250        # sqrt(0.5)
ONE_QUARTER = 536870912       # 1/4
ALPHA_N = 117049297           # 11/240 * 2^(1/4)
ALPHA_D = 127690142           # 1/20 * 2^(1/4)
ALPHA_I = 1057819769          # 2 / 2^(1/4) - 2^(1/4)
ALPHA_F = 638450708           # 1/4 * 2^(1/4)


def _saturate32(x):
    return np.clip(_i64(x), fp.INT32_MIN, fp.INT32_MAX)


def _mul_by_pot(x, exponent):
    """SaturatingRoundingMultiplyByPOTParam for exponent >= 0 (a saturating left shift)."""
    x, exponent = _i64(x), _i64(exponent)
    threshold = (np.int64(1) << (31 - exponent)) - 1
    return np.where(x > threshold, fp.INT32_MAX, np.where(x < -threshold, fp.INT32_MIN, x << exponent))


def _rounding_half_sum(a, b):
    s = _i64(a) + _i64(b)
    sign = np.where(s >= 0, 1, -1)
    t = s + sign
    return np.where(t >= 0, t // 2, -((-t) // 2))   # C division truncates


def log_x_for_x_ge_1(x, in_bits: int, out_bits: int) -> np.ndarray:
    """log(x) for x >= 1; raw Q(in_bits) in, raw Q(out_bits) out."""
    accum_bits = out_bits + 1
    shifted_quarter = fp.rescale(ONE_QUARTER, 0, accum_bits)
    z_a = _i64(x)
    z_a_headroom_plus_1 = fp.count_leading_zeros_u32(z_a)
    r_a_tmp = _mul_by_pot(z_a, z_a_headroom_plus_1 - 1)
    r_a = _mul_by_pot(_mul(r_a_tmp, SQRT_HALF), 1)
    z_a_pow_2_adj = _saturate32(_mul_by_pot(in_bits - z_a_headroom_plus_1, 31 - accum_bits) + shifted_quarter)
    z_b = _mul(z_a, SQRT_HALF)
    z_b_headroom = fp.count_leading_zeros_u32(z_b) - 1
    r_b = _mul_by_pot(z_a, z_b_headroom)
    z_b_pow_2_adj = _saturate32(_mul_by_pot(in_bits - z_b_headroom, 31 - accum_bits) - shifted_quarter)
    r = np.minimum(r_a, r_b)
    z_pow_2_adj = np.maximum(z_a_pow_2_adj, z_b_pow_2_adj)

    p = _rounding_half_sum(r, SQRT_SQRT_HALF)
    q = _wrap(r - SQRT_SQRT_HALF)
    q = _wrap(q + q)
    common_sq = _mul(q, q)
    num = _wrap(_mul(q, r) + _mul(_mul(q, common_sq), ALPHA_N))
    denom_minus_one = _wrap(_mul(p, _wrap(_wrap(ALPHA_I + q) + _mul(ALPHA_D, common_sq))) + _mul(ALPHA_F, q))
    recip_denom = fp.one_over_one_plus_x_for_x_in_0_1(denom_minus_one)
    num_scaled = fp.rescale(num, 0, accum_bits)
    total = _wrap(_mul(z_pow_2_adj, LOG_2) + _mul(num_scaled, recip_denom))
    return fp.rescale(total, accum_bits, out_bits)


INPUT_BITS, ACCUM_BITS, OUTPUT_BITS, OUTPUT_ZERO_POINT = 5, 12, 4, 127


def exp_q12(diff, p) -> np.ndarray:
    """exp(diff * input_scale) of an int8 difference diff <= 0, as a raw Q12.19 summand."""
    scaled = fp.multiply_by_quantized_multiplier(diff, p.input_multiplier, p.input_left_shift)
    return fp.rescale(fp.exp_on_negative_values(scaled, INPUT_BITS), 0, ACCUM_BITS)


def log_softmax_int8(x: np.ndarray, p) -> np.ndarray:
    """reference_integer_ops::LogSoftmax over the last axis; `p` is a LogSoftmaxParams."""
    xi = x.astype(np.int64)
    diff = xi - xi.max(axis=-1, keepdims=True)
    live = diff >= p.diff_min
    sums = np.where(live, exp_q12(np.where(live, diff, 0), p), 0).sum(axis=-1, keepdims=True)
    log_sum = log_x_for_x_ge_1(sums, ACCUM_BITS, INPUT_BITS)
    cutoff = np.maximum(p.diff_min - 1, fp.multiply_by_quantized_multiplier(
        log_sum + fp.INT32_MIN, p.reverse_multiplier, -p.reverse_shift))
    scaled = fp.multiply_by_quantized_multiplier(diff, p.input_multiplier, p.input_left_shift)
    out = fp.rounding_divide_by_pot(_wrap(scaled - log_sum), 31 - INPUT_BITS - OUTPUT_BITS) + OUTPUT_ZERO_POINT
    return np.where(diff > cutoff, np.clip(out, -128, 127), -128).astype(np.int8)
