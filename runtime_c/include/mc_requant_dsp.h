/* mc_requant_dsp.h: the int8 output stage that the DSP micro-kernels share (Armv7E-M only:
 * included by runtime_c/kernels/dsp/ alone, which are compiled only for cores with DSP).
 *
 * mc_requant_ssat8: mc_requant.h's exact cheap requantization (with SMMULR for its high
 *                   multiply), plus the output offset, saturated to int8 by SSAT.
 * mc_store4_s8:     four such results packed into one word and clamped to the fused
 *                   activation byte-wise: SSUB8 sets a GE flag per byte where the first
 *                   operand is >= the second, SEL picks per byte by those flags. lo4/hi4
 *                   hold act_min/act_max in every byte (mc_bytes4). One STR. */
#ifndef MC_REQUANT_DSP_H
#define MC_REQUANT_DSP_H

#include <arm_acle.h>
#include <stdint.h>
#include <string.h>

#include "mc_requant.h"

/* mc_mul_by_qm_pos_rshift(acc, mult, rshift) + out_offset, saturated to int8. In its domain
 * (|acc| < 2^30, mult >= 0, rshift >= 1) the high multiply floor((acc*mult + 2^30) / 2^31) is
 * SMMULR(2*acc, mult) = floor((2*acc*mult + 2^31) / 2^32): one instruction where the 64-bit
 * form takes four. The rounding shift, floor((s + 2^(e-1) - [s<0]) / 2^e) with e = rshift, is
 * floor((floor((s - [s<0]) / 2^(e-1)) + 1) / 2) (write s - [s<0] = q*2^(e-1) + r, 0 <= r <
 * 2^(e-1): both sides are floor((q+1)/2)), and adding 2*out_offset before the last halving
 * adds out_offset after it, so SSAT's own ASR #1 does the halving: seven instructions from
 * acc to the saturated byte, with no rounding constant to build. */
static inline int32_t mc_requant_ssat8(int32_t acc, int32_t mult, int32_t rshift, int32_t out_offset)
{
    int32_t s, r;

    __asm__("smmulr %0, %1, %2" : "=r"(s) : "r"((int32_t)((uint32_t)acc << 1)), "r"(mult));
    s = (s - (int32_t)((uint32_t)s >> 31)) >> (rshift - 1);
    __asm__("ssat %0, #8, %1, asr #1" : "=r"(r) : "r"(s + (1 + 2 * out_offset)));
    return r;
}

/* v in every byte of a word. */
static inline int32_t mc_bytes4(int32_t v)
{
    return (int32_t)(((uint32_t)v & 0xFFu) * 0x01010101u);
}

static inline void mc_store4_s8(int8_t *y, int32_t v0, int32_t v1, int32_t v2, int32_t v3, int32_t lo4, int32_t hi4)
{
    /* v0..v3 are in [-128, 127]: PKHBT pairs (v0, v2) and (v1, v3) in halfwords, UXTB16 keeps
     * their low bytes, and one ORR interleaves them: five instructions. */
    uint32_t a, b, p;

    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(a) : "r"(v0), "r"(v2));
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(b) : "r"(v1), "r"(v3));
    p = __uxtb16(a) | (__uxtb16(b) << 8);
    (void)__ssub8((int32_t)p, lo4);
    p = __sel(p, (uint32_t)lo4);
    (void)__ssub8(hi4, (int32_t)p);
    p = __sel(p, (uint32_t)hi4);
    memcpy(y, &p, 4);   /* one STR: Armv7-M allows unaligned word stores */
}

#endif /* MC_REQUANT_DSP_H */
