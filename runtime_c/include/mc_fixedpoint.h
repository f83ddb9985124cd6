/* mc_fixedpoint.h: the scalar helpers that generated kernels call.
 *
 * Each function mirrors one in microcompile/ir/fixedpoint.py, which mirrors TFLite's
 * kernels/internal/common.h and gemmlowp's fixedpoint.h bit for bit. Which rounding an
 * op uses is decided by microcompile/ir/qparams.py; the code generator picks the helper.
 * Right shifts of negative values are arithmetic (GCC and Clang guarantee it). */
#ifndef MC_FIXEDPOINT_H
#define MC_FIXEDPOINT_H

#include <stdint.h>

/* gemmlowp SaturatingRoundingDoublingHighMul: round(a*b / 2^31), half away from zero. */
static inline int32_t mc_srdhm(int32_t a, int32_t b)
{
    if (a == INT32_MIN && b == INT32_MIN)
        return INT32_MAX;
    const int64_t ab = (int64_t)a * (int64_t)b;
    const int64_t nudge = ab >= 0 ? (1 << 30) : (1 - (1 << 30));
    /* C division truncates toward zero, as gemmlowp relies on. */
    return (int32_t)((ab + nudge) / ((int64_t)1 << 31));
}

/* gemmlowp RoundingDivideByPOT: x / 2^exponent, half away from zero; 0 <= exponent <= 31. */
static inline int32_t mc_rounding_divide_by_pot(int32_t x, int32_t exponent)
{
    const int32_t mask = (int32_t)(((int64_t)1 << exponent) - 1);
    const int32_t remainder = x & mask;
    const int32_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
    return (x >> exponent) + (remainder > threshold ? 1 : 0);
}

/* TFLite MultiplyByQuantizedMultiplier, double rounding: x * mult * 2^(shift-31). */
static inline int32_t mc_mul_by_qm(int32_t x, int32_t mult, int32_t shift)
{
    const int32_t left = shift > 0 ? shift : 0;
    const int32_t right = shift > 0 ? 0 : -shift;
    return mc_rounding_divide_by_pot(mc_srdhm((int32_t)((uint32_t)x << left), mult), right);
}

/* TFLITE_SINGLE_ROUNDING MultiplyByQuantizedMultiplier: (x*M + 2^(30-shift)) >> (31-shift). */
static inline int32_t mc_mul_by_qm_single_round(int32_t x, int32_t mult, int32_t shift)
{
    const int32_t total = 31 - shift;
    const int64_t round = (int64_t)1 << (total - 1);
    return (int32_t)(((int64_t)x * mult + round) >> total);
}

/* Single rounding with ties away from zero (LiteRT's int8 FULLY_CONNECTED):
 * sign(x) * ((|x|*M + 2^(30-shift)) >> (31-shift)). */
static inline int32_t mc_mul_by_qm_single_round_away(int32_t x, int32_t mult, int32_t shift)
{
    const int32_t total = 31 - shift;
    const int64_t round = (int64_t)1 << (total - 1);
    const int64_t magnitude = (((x < 0 ? -(int64_t)x : (int64_t)x) * mult) + round) >> total;
    return (int32_t)(x < 0 ? -magnitude : magnitude);
}

/* One rounding of x*M*2^(shift-31), ties to even: ONNX's requantization (the layers of ONNX
 * QDQ models). floor((x*M) / 2^total) plus one when the remainder passes half, or is exactly
 * half and the floor is odd. */
static inline int32_t mc_mul_by_qm_single_round_even(int32_t x, int32_t mult, int32_t shift)
{
    const int32_t total = 31 - shift;
    const int64_t product = (int64_t)x * mult;
    /* floor + 1 when the remainder passes half, or is exactly half and the floor is odd: that is
     * (product + half - 1 + (floor & 1)) >> total. |product| <= 2^62, so the sum cannot overflow. */
    if (total >= 32) {
        /* The common case (a scale ratio below 1): every shift on 32-bit halves, since a 64-bit
         * shift by a variable count is a long sequence on Armv7-M. */
        const int32_t s = total - 32;
        const int32_t floor = (int32_t)(product >> 32) >> s;
        const uint32_t half_lo = s == 0 ? 0x7FFFFFFFu : 0xFFFFFFFFu;
        const uint32_t half_hi = s == 0 ? 0u : (1u << (s - 1)) - 1u;
        const int64_t sum = product + (int64_t)(((uint64_t)half_hi << 32) | half_lo) + (floor & 1);
        return (int32_t)(sum >> 32) >> s;
    }
    const int64_t floor = product >> total;   /* arithmetic shift: floor for negatives too */
    return (int32_t)((product + ((((int64_t)1) << (total - 1)) - 1) + (floor & 1)) >> total);
}

/* MultiplyByQuantizedMultiplierSmallerThanOneExp (ADD): left_shift <= 0. */
static inline int32_t mc_mul_by_qm_smaller_than_one_exp(int32_t x, int32_t mult, int32_t left_shift)
{
    return mc_rounding_divide_by_pot(mc_srdhm(x, mult), -left_shift);
}

static inline int32_t mc_min_i32(int32_t a, int32_t b) { return a < b ? a : b; }
static inline int32_t mc_max_i32(int32_t a, int32_t b) { return a > b ? a : b; }
static inline float mc_min_f32(float a, float b) { return a < b ? a : b; }
static inline float mc_max_f32(float a, float b) { return a > b ? a : b; }

/* Division and remainder rounding toward -inf (the loop IR's floordiv/floormod). */
static inline int32_t mc_floordiv_i32(int32_t a, int32_t b)
{
    const int32_t q = a / b;
    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

static inline int32_t mc_floormod_i32(int32_t a, int32_t b)
{
    return a - mc_floordiv_i32(a, b) * b;
}

/* gemmlowp helpers shared by the softmax-family kernels (mirrors of ir/fixedpoint.py). */

/* Two's-complement wrap-around addition, as gemmlowp's raw adds; done in uint32 so the C
 * is defined behaviour. */
static inline int32_t mc_add_wrap(int32_t a, int32_t b)
{
    return (int32_t)((uint32_t)a + (uint32_t)b);
}

/* gemmlowp SaturatingRoundingMultiplyByPOT for exponent > 0: a saturating left shift. */
static inline int32_t mc_saturating_left_shift(int32_t x, int32_t exponent)
{
    const int32_t threshold = (int32_t)(((int64_t)1 << (31 - exponent)) - 1);
    if (x > threshold)
        return INT32_MAX;
    if (x < -threshold)
        return INT32_MIN;
    return (int32_t)((uint32_t)x << exponent);
}

/* gemmlowp Rescale: move a fixed-point value from src_bits to dst_bits integer bits. */
static inline int32_t mc_rescale(int32_t x, int32_t src_bits, int32_t dst_bits)
{
    const int32_t exponent = src_bits - dst_bits;
    if (exponent > 0)
        return mc_saturating_left_shift(x, exponent);
    if (exponent < 0)
        return mc_rounding_divide_by_pot(x, -exponent);
    return x;
}

#endif /* MC_FIXEDPOINT_H */
