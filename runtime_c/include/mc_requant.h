/* mc_requant.h: cheaper, bit-identical forms of mc_fixedpoint.h's double-rounding
 * requantization, for the multipliers every quantized kernel actually has.
 *
 * QuantizeMultiplier yields mult in [2^30, 2^31) or 0, never negative. With mult >= 0 the
 * sign of x*mult is the sign of x, and gemmlowp's SaturatingRoundingDoublingHighMul,
 *     trunc((x*mult + (x*mult >= 0 ? 2^30 : 1 - 2^30)) / 2^31),
 * equals floor((x*mult + 2^30) / 2^31): for a negative product, trunc is ceil and
 * ceil((p + 1 - 2^30) / 2^31) = floor((p + 1 - 2^30 + 2^31 - 1) / 2^31). Saturation needs
 * mult == INT32_MIN, so it cannot happen. That is one SMLAL and a funnel shift on a
 * Cortex-M4 instead of a compare, a 64-bit division and a select.
 * microcompile/ir/intrinsics.py registers these with the Python semantics they equal. */
#ifndef MC_REQUANT_H
#define MC_REQUANT_H

#include <stdint.h>

/* gemmlowp SaturatingRoundingDoublingHighMul(x, mult) for mult >= 0. */
static inline int32_t mc_srdhm_pos(int32_t x, int32_t mult)
{
    return (int32_t)(((int64_t)x * mult + (1 << 30)) >> 31);
}

/* gemmlowp RoundingDivideByPOT(x, e), 0 <= e <= 31, in 32-bit arithmetic only. */
static inline int32_t mc_rdbpot32(int32_t x, int32_t e)
{
    const int32_t mask = (int32_t)((1u << e) - 1u);
    const int32_t threshold = (mask >> 1) + (int32_t)((uint32_t)x >> 31);
    return (x >> e) + ((x & mask) > threshold);
}

/* mc_mul_by_qm (TFLite MultiplyByQuantizedMultiplier, double rounding) for mult >= 0. */
static inline int32_t mc_mul_by_qm_pos(int32_t x, int32_t mult, int32_t shift)
{
    const int32_t left = shift > 0 ? shift : 0;
    return mc_rdbpot32(mc_srdhm_pos((int32_t)((uint32_t)x << left), mult), left - shift);
}

/* mc_mul_by_qm for mult >= 0 and shift <= 0 (a multiplier below one: the common case),
 * given the right shift -shift >= 0: no left-shift path at all. */
static inline int32_t mc_mul_by_qm_pos_right(int32_t x, int32_t mult, int32_t right)
{
    return mc_rdbpot32(mc_srdhm_pos(x, mult), right);
}

/* mc_mul_by_qm_pos_right for right >= 1 and |x| < 2^30, which the code generator proves
 * from the weights and bias. RoundingDivideByPOT (half away from zero) is then
 * floor((s + 2^(right-1) - (s < 0)) / 2^right), and |s| <= |x| keeps the sum in range. */
static inline int32_t mc_mul_by_qm_pos_rshift(int32_t x, int32_t mult, int32_t right)
{
#if defined(__ARM_FEATURE_DSP) && defined(__ARM_FEATURE_SIMD32)
    /* |x| < 2^30: the high multiply is SMMULR(2x, mult), floor((2*x*mult + 2^31) / 2^32), one
     * instruction where the 64-bit form takes four (mc_requant_dsp.h proves it equal): the loops
     * that requantize (ResNet-8's table adds on the Cortex-M4: 20 -> 17 instructions an element). */
    int32_t s;

    __asm__("smmulr %0, %1, %2" : "=r"(s) : "r"((int32_t)((uint32_t)x << 1)), "r"(mult));
#else
    const int32_t s = mc_srdhm_pos(x, mult);
#endif
    return (s + (int32_t)(1u << (right - 1)) - (int32_t)((uint32_t)s >> 31)) >> right;
}

#endif /* MC_REQUANT_H */
