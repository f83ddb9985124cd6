"""TFLite's fixed-point arithmetic, in numpy int64, vectorized over arrays.

Every function mirrors one in TFLite's `kernels/internal/common.h`,
`quantization_util.cc`, `kernel_util.cc` or gemmlowp's `fixedpoint.h`, bit for bit.
Integer helpers take int scalars or numpy arrays (any integer dtype) and return int64
arrays holding int32-range values; callers cast at the store. Shifts may be arrays too
(per-channel requantization).

Rounding measured in LiteRT 2.x BUILTIN_REF (`ai_edge_litert`, OpResolverType.BUILTIN_REF).
Method: the same single-op models run with each candidate scheme; power-of-two scales
make the multiplier exactly 2^k so that exact ties are frequent and the schemes
disagree (tests/ir/test_interp_ops.py keeps these "tie" cases in its plans):

  op                    requantization (function here)                 multiplier from
  conv2d                DOUBLE: multiply_by_quantized_multiplier        double(in_s)*double(w_s[c])/double(out_s)
  depthwise_conv2d      DOUBLE, as conv2d, one per output channel       as conv2d
  fully_connected       SINGLE, TIES AWAY FROM ZERO:                    per-tensor: double(float(in_s*w_s))/double(out_s)
                        multiply_by_quantized_multiplier_single_round_away   per-channel: as conv2d
                        = sign(acc) * ((|acc|*M + 2^(30-shift)) >> (31-shift))
  add                   DOUBLE, smaller-than-one-exp path, left_shift 20
  average_pool2d        no multiplier: (sum +/- count/2) / count, C truncation
  softmax               gemmlowp fixed-point exp (reference_ops::Softmax, not the LUT),
                        input multiplier from PreprocessSoftmaxScaling (double rounding)
  relu/relu6/n1_to_1    DOUBLE (ReluX requantizes in->out even when the scales match)
  16x8 conv/depthwise/  INT64: multiply_by_quantized_multiplier_int64, a 16-bit multiplier
  transpose_conv/FC     on the int64 accumulator, one rounding (reference/s16.py)

Note: the half-up form (acc*M + 2^(30-shift)) >> (31-shift) quoted in BENCHMARK.md
agrees with LiteRT's FC except on negative exact ties, where LiteRT rounds away from zero
(e.g. -31.5 -> -32). Conv/depthwise do NOT use single rounding. TFLM and CMSIS-NN use
DOUBLE for FC, hence their 1-LSB misses on ad01.
"""

from __future__ import annotations

import math

import numpy as np

from .int4 import INT4_RANGE

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
# The largest left shift of a requantization: the kernels shift an int32 left before the
# high multiply, and TFLite's single-rounding kernels saturate at 30 as well.
MAX_LEFT_SHIFT = 30


class KernelParamsError(ValueError):
    """A model's quantization asks for kernel parameters the int8 kernels cannot represent
    (TFLite's Prepare refuses such a model too). At import this means a bad model file and
    the frontends report it with the layer's name; raised later, it is a bug."""

QRANGE = {"int4": INT4_RANGE, "int8": (-128, 127), "int16": (-32768, 32767), "int32": (INT32_MIN, INT32_MAX)}


def _i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def tflite_round(x):
    """std::round / TfLiteRound: half away from zero (numpy's round is half to even)."""
    x = np.asarray(x)
    return np.sign(x) * np.floor(np.abs(x) + x.dtype.type(0.5))


# ---------------------------------------------------------------------------------------
# Multiplier computation (Prepare time; pure Python floats are C doubles)
# ---------------------------------------------------------------------------------------

def quantize_multiplier(real: float) -> tuple[int, int]:
    """TFLite QuantizeMultiplier: real ~= mult * 2^(shift-31), mult in [2^30, 2^31).

    The q == 2^31 carry bumps the shift; a shift below -31 flushes to (0, 0). A non-finite
    `real`, or one of 2^30 and more, is a KernelParamsError (the model's scales are corrupt).
    """
    real = float(real)
    if not math.isfinite(real):
        raise KernelParamsError(f"the requantization multiplier (a ratio of the scales) is {real}")
    if real == 0.0:
        return 0, 0
    q, shift = math.frexp(real)
    q_fixed = int(tflite_round(np.float64(q) * float(1 << 31)))
    assert q_fixed <= (1 << 31)
    if q_fixed == (1 << 31):
        q_fixed //= 2
        shift += 1
    assert q_fixed <= INT32_MAX
    if shift < -31:
        return 0, 0
    if shift > MAX_LEFT_SHIFT:
        raise KernelParamsError(f"the requantization multiplier (a ratio of the scales) is {real:g}, "
                                f"beyond the 2^{MAX_LEFT_SHIFT} the fixed-point kernels can scale by")
    return q_fixed, shift


def quantize_multiplier_smaller_than_one_exp(real: float) -> tuple[int, int]:
    """QuantizeMultiplierSmallerThanOneExp: 0 < real < 1, returns (mult, left_shift <= 0)."""
    if not 0.0 < real < 1.0:
        raise KernelParamsError(f"the requantization multiplier (a ratio of the scales) is {real:g}; "
                                "this kernel needs it between 0 and 1")
    mult, shift = quantize_multiplier(real)
    assert shift <= 0
    return mult, shift


def quantize_multiplier_greater_than_one(real: float) -> tuple[int, int]:
    """QuantizeMultiplierGreaterThanOne: real > 1, returns (mult, left_shift >= 0)."""
    if not real > 1.0:
        raise KernelParamsError(f"the input multiplier (a scale times beta) is {real:g}; this kernel "
                                "needs it above 1")
    mult, shift = quantize_multiplier(real)
    assert shift >= 0
    return mult, shift


def quantize_multipliers(reals) -> tuple[np.ndarray, np.ndarray]:
    """`quantize_multiplier` over a sequence: (int32 mults, int32 shifts) arrays."""
    pairs = [quantize_multiplier(r) for r in np.asarray(reals, dtype=np.float64).ravel()]
    return (np.array([p[0] for p in pairs], dtype=np.int32),
            np.array([p[1] for p in pairs], dtype=np.int32))


# ---------------------------------------------------------------------------------------
# Requantization (Eval time)
# ---------------------------------------------------------------------------------------

def saturating_rounding_doubling_high_mul(a, b) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul: round(a*b / 2^31), half away from zero."""
    a, b = _i64(a), _i64(b)
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    num = ab + nudge
    # C integer division truncates toward zero.
    high = np.where(num >= 0, num >> 31, -((-num) >> 31))
    return np.where(overflow, INT32_MAX, high)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """gemmlowp RoundingDivideByPOT: x / 2^exponent, rounding half away from zero."""
    x, exponent = _i64(x), _i64(exponent)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def saturating_left_shift(x, exponent: int) -> np.ndarray:
    """gemmlowp SaturatingRoundingMultiplyByPOT for exponent > 0 (int32 saturation)."""
    x = _i64(x)
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, x << exponent))


def multiply_by_quantized_multiplier(x, mult, shift) -> np.ndarray:
    """TFLite MultiplyByQuantizedMultiplier, gemmlowp double rounding.

    The left part of the shift is applied before the high multiply, the right part after,
    each with its own rounding.
    """
    x, mult, shift = _i64(x), _i64(mult), _i64(shift)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    # x * 2^left in int32, wrapping as TFLite's `x * (1 << left_shift)` and mc_mul_by_qm do
    # (reached only by multipliers above one on large inputs: int16 -> int32 QUANTIZE)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(wrap32(x << left), mult), right)


def multiply_by_quantized_multiplier_single_round(x, mult, shift) -> np.ndarray:
    """TFLITE_SINGLE_ROUNDING MultiplyByQuantizedMultiplier: one rounding, half toward +inf.

    (x*M + 2^(30-shift)) >> (31-shift), in 64 bits. Requires shift <= 30.
    """
    x, mult, shift = _i64(x), _i64(mult), _i64(shift)
    total = 31 - shift
    return (x * mult + (np.int64(1) << (total - 1))) >> total


def multiply_by_quantized_multiplier_single_round_away(x, mult, shift) -> np.ndarray:
    """Single rounding, ties away from zero: what LiteRT's int8 FULLY_CONNECTED does.

    sign(x) * ((|x|*M + 2^(30-shift)) >> (31-shift)). Differs from the half-up
    `multiply_by_quantized_multiplier_single_round` only on negative exact ties
    (-2.5 -> -3 here, -2 there); measured against LiteRT BUILTIN_REF with power-of-two
    scales, where ties are frequent.
    """
    x, mult, shift = _i64(x), _i64(mult), _i64(shift)
    total = 31 - shift
    magnitude = (np.abs(x) * mult + (np.int64(1) << (total - 1))) >> total
    return np.where(x < 0, -magnitude, magnitude)


def multiply_by_quantized_multiplier_single_round_even(x, mult, shift) -> np.ndarray:
    """One rounding of x * M * 2^(shift-31), ties to even: ONNX's requantization (QLinearConv,
    QuantizeLinear: round half to even of the exact value). Requires shift <= 30.

    Used for the int8 layers of ONNX QDQ models (op attribute rounding="onnx"); TFLite's
    double rounding would move values up to 2^-(r+1) of a step across a half (r the right
    shift), which for a small r (a mean over few elements: r = 1) is a quarter step.
    """
    x, mult, shift = _i64(x), _i64(mult), _i64(shift)
    total = 31 - shift
    num = x * mult
    floor = num >> total
    rem = num - (floor << total)
    half = np.int64(1) << (total - 1)
    return floor + ((rem > half) | ((rem == half) & ((floor & 1) == 1)))


def reduced_multiplier(mult) -> np.ndarray:
    """The 16-bit multiplier the int64 MultiplyByQuantizedMultiplier uses: the 31-bit one
    rounded to 15 bits (saturating at 0x7FFF)."""
    mult = _i64(mult)
    return np.where(mult < 0x7FFF0000, (mult + (1 << 15)) >> 16, 0x7FFF)


def multiply_by_quantized_multiplier_int64(x, mult, shift) -> np.ndarray:
    """TFLite's MultiplyByQuantizedMultiplier(int64_t x, ...) of 16x8 kernels (int64
    accumulators): (x * reduced + 2^(14-shift)) >> (15-shift), one rounding, ties up; the
    result truncated to int32 as the C cast does. |x| < 2^47 (TFLite's assumption)."""
    x, shift = _i64(x), _i64(shift)
    total = 15 - shift
    result = (x * reduced_multiplier(mult) + (np.int64(1) << (total - 1))) >> total
    return wrap32(result)


def multiply_by_quantized_multiplier_smaller_than_one_exp(x, mult, left_shift) -> np.ndarray:
    """MultiplyByQuantizedMultiplierSmallerThanOneExp (ADD): SRDHM, then divide by 2^-shift."""
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, mult), -_i64(left_shift))


def multiply_by_quantized_multiplier_greater_than_one(x, mult, left_shift) -> np.ndarray:
    """MultiplyByQuantizedMultiplierGreaterThanOne (softmax input scaling)."""
    return saturating_rounding_doubling_high_mul(_i64(x) << _i64(left_shift), mult)


# ---------------------------------------------------------------------------------------
# Activation ranges (CalculateActivationRangeQuantized / CalculateActivationRange)
# ---------------------------------------------------------------------------------------

_ACT_REAL_RANGE = {"NONE": (None, None), "RELU": (0.0, None), "RELU6": (0.0, 6.0),
                   "RELU_N1_TO_1": (-1.0, 1.0)}


def activation_range(activation: str, quant=None, dtype: str = "int8"):
    """The clamp a fused activation applies, in the output's number space.

    Quantized: zp + round(f / scale) computed in float32 as TFLite does, intersected with
    the dtype's range. float32: (-inf|0|-1, inf|6|1).
    """
    lo, hi = _ACT_REAL_RANGE[activation]
    if dtype == "float32":
        return (float(-np.inf) if lo is None else lo, float(np.inf) if hi is None else hi)
    qmin, qmax = QRANGE[dtype]
    scale, zp = np.float32(quant.s), quant.zp

    def q(f):
        return zp + int(tflite_round(np.float32(f) / scale))

    return (qmin if lo is None else max(qmin, q(lo)), qmax if hi is None else min(qmax, q(hi)))


# ---------------------------------------------------------------------------------------
# Softmax: gemmlowp fixed-point exp and reciprocal (reference_ops::Softmax)
# ---------------------------------------------------------------------------------------

def _mul(a, b):
    """FixedPoint * FixedPoint (raw int32): the integer bits add up."""
    return saturating_rounding_doubling_high_mul(a, b)


def wrap32(x):
    """int32 arithmetic's two's-complement wrap-around, on int64 values."""
    x = _i64(x)
    return ((x + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def rescale(x, src_int_bits: int, dst_int_bits: int) -> np.ndarray:
    """gemmlowp Rescale<dst>: change the number of integer bits of a raw int32 fixed point."""
    exponent = src_int_bits - dst_int_bits
    if exponent > 0:
        return saturating_left_shift(x, exponent)
    if exponent < 0:
        return rounding_divide_by_pot(x, -exponent)
    return _i64(x)


def exp_on_interval_between_negative_one_quarter_and_0_excl(a) -> np.ndarray:
    """gemmlowp: exp(a) for a in [-1/4, 0), Q0.31 in and out (Taylor series around -1/8)."""
    constant_term = 1895147668          # exp(-1/8) in Q0.31
    constant_1_over_3 = 715827883
    x = wrap32(_i64(a) + (1 << 28))    # a + 1/8
    x2 = _mul(x, x)
    x3 = _mul(x2, x)
    x4 = _mul(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(wrap32(_mul(wrap32(x4_over_4 + x3), constant_1_over_3) + x2), 1)
    return wrap32(constant_term + _mul(constant_term, wrap32(x + poly)))


_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
               (2, 39332535), (3, 720401), (4, 242))


def exp_on_negative_values(a, integer_bits: int) -> np.ndarray:
    """gemmlowp exp_on_negative_values: exp(a) for a <= 0 in Q(integer_bits), result Q0.31."""
    a = _i64(a)
    frac_bits = 31 - integer_bits
    one_quarter = 1 << (frac_bits - 2)
    mask = one_quarter - 1
    a_mod_quarter_minus_one_quarter = (a & mask) - one_quarter
    result = exp_on_interval_between_negative_one_quarter_and_0_excl(
        rescale(a_mod_quarter_minus_one_quarter, integer_bits, 0))
    remainder = wrap32(a_mod_quarter_minus_one_quarter - a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = np.int64(1) << (frac_bits + exponent)
            result = np.where((remainder & bit) != 0, _mul(result, multiplier), result)
    if integer_bits > 5:
        clamp = -(1 << (36 - integer_bits))
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, INT32_MAX, result)


def one_over_one_plus_x_for_x_in_0_1(a) -> np.ndarray:
    """gemmlowp: 1/(1+a) for a in [0, 1), Q0.31 in and out (Newton-Raphson, 3 steps)."""
    a = _i64(a)
    s = a + INT32_MAX                                   # RoundingHalfSum(a, One)
    half_denominator = np.where(s >= 0, (s + 1) // 2, -((-(s - 1)) // 2))
    constant_48_over_17 = 1515870810                    # Q2.29
    constant_neg_32_over_17 = -1010580540               # Q2.29
    x = wrap32(constant_48_over_17 + _mul(half_denominator, constant_neg_32_over_17))
    one_q2 = 1 << 29
    for _ in range(3):
        half_denominator_times_x = _mul(half_denominator, x)
        one_minus = wrap32(one_q2 - half_denominator_times_x)
        x = wrap32(x + rescale(_mul(x, one_minus), 4, 2))
    return rescale(x, 1, 0)                             # ExactMulByPot<-1> then Rescale<0>


def count_leading_zeros_u32(x) -> np.ndarray:
    x = _i64(x) & 0xFFFFFFFF
    _, e = np.frexp(x.astype(np.float64))
    return np.where(x == 0, 32, 32 - e).astype(np.int64)


def get_reciprocal(x, x_integer_digits: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLite GetReciprocal: (Q0.31 of 1/x scaled into [0.5,1), num_bits_over_unit)."""
    x = _i64(x)
    headroom_plus_one = count_leading_zeros_u32(x)
    num_bits_over_unit = x_integer_digits - headroom_plus_one
    shifted_sum_minus_one = ((x << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31)
    return one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit


def preprocess_softmax_scaling(beta: float, input_scale: float, input_integer_bits: int,
                               single_rounding: bool = False) -> tuple[int, int]:
    """TFLite PreprocessSoftmaxScaling: (input_multiplier, input_left_shift)."""
    max_real = float((1 << 30) - 1) if single_rounding else float((1 << 31) - 1)
    real = min(float(beta) * float(input_scale) * float(1 << (31 - input_integer_bits)), max_real)
    return quantize_multiplier_greater_than_one(real)


def calculate_input_radius(input_integer_bits: int, input_left_shift: int,
                           total_signed_bits: int = 31) -> int:
    """TFLite CalculateInputRadius: the largest |diff| that does not saturate the scaling."""
    max_input_rescaled = (1.0 * ((1 << input_integer_bits) - 1)
                          * float(1 << (total_signed_bits - input_integer_bits))
                          / float(1 << input_left_shift))
    return int(math.floor(max_input_rescaled))


# ---------------------------------------------------------------------------------------
# Inverse square root (GetInvSqrtQuantizedMultiplierExp: L2 normalization, int8 RSQRT)
# ---------------------------------------------------------------------------------------

HALF_SQRT_2_Q0_31 = 1518500250      # sqrt(2)/2 in Q0.31
_THREE_HALVES_Q3_28 = (1 << 28) + (1 << 27)


def get_inv_sqrt_quantized_multiplier_exp(x, reverse_shift: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLite GetInvSqrtQuantizedMultiplierExp over int32 values x >= 0: (multiplier, shift)
    with 1/sqrt(x) ~= multiplier * 2^(shift - 31) for reverse_shift -1 (the form
    MultiplyByQuantizedMultiplier takes). x is normalized by pairs of bits into [2^27, 2^29),
    then five Newton-Raphson steps in Q3.28 from the guess 1, times sqrt(2)/2; a negative
    right shift is folded into the multiplier. x <= 1 gives (INT32_MAX, 0): 0 is invalid
    and 1 would overflow the general path (TFLite's special case)."""
    x = _i64(x)
    small = x <= 1
    v = np.where(small, 2, x)
    shift = np.full(v.shape, 11, dtype=np.int64)
    for _ in range(2):                               # int32 values need at most two divisions by 4
        big = v >= (1 << 29)
        v = np.where(big, v // 4, v)
        shift = shift + big
    pairs = (count_leading_zeros_u32(v) - 1) // 2 - 1
    shift = shift - pairs
    v = v << (2 * pairs)
    f3_input = v >> 1
    half_input = rounding_divide_by_pot(f3_input, 1)
    y = np.full(v.shape, 1 << 28, dtype=np.int64)   # 1.0 in Q3.28
    for _ in range(5):
        y3 = rescale(_mul(_mul(y, y), y), 9, 3)
        y = rescale(wrap32(_mul(_THREE_HALVES_Q3_28, y) - _mul(half_input, y3)), 6, 3)
    y = _mul(y, HALF_SQRT_2_Q0_31)
    negative = shift < 0
    y = np.where(negative, wrap32(y << np.maximum(-shift, 0)), y)
    shift = np.where(negative, 0, shift)
    return np.where(small, INT32_MAX, y), np.where(small, 0, shift * reverse_shift)
