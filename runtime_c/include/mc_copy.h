/* mc_copy.h: data-movement micro-kernels for scratch buffers (e.g. an im2col column).
 *
 *   mc_widen_dsp_s8_s16(dst, src, n):   dst[i] = (int16_t)src[i] for i < n
 *   mc_widen_pairs_dsp_s8_s16(dst, src, n): the same into mc_gemm.h's pair-interleaved layout
 *
 * The `tensorize` schedule primitive reaches them from a copy loop of that shape; they use
 * SXTB16 + PKHBT/PKHTB and are defined (inline, below) only for cores with the DSP
 * extension. Other cores keep the plain loop, which is as fast as any call there. No
 * alignment is required.
 *
 *   mc_unpack_s4_s8(dst, src, n):       dst[i] = the i-th signed 4-bit value of src, for i < n
 *   mc_unpack_s4_s16(dst, src, n):      the same into int16
 *
 * expands weights stored as packed int4 (two per byte, the first in the low nibble) into
 * scratch at the start of a kernel (the schedule primitive store_int4); every core.
 *
 *   mc_move_bytes(dst, src, n):         memmove(dst, src, n)
 *
 * moves the rows a patch stage's window keeps from one band to the next to the window's
 * top (the regions overlap when more rows are kept than dropped); every core.
 *
 *   mc_copy_mve_s8(dst, src, n):        dst[i] = src[i] for i < n (int8, no overlap)
 *
 * copies a run of input channels into a conv's im2col column on Helium cores (16 bytes per
 * vector load and store); other cores keep the plain loop. */
#ifndef MC_COPY_H
#define MC_COPY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__ARM_FEATURE_DSP) && defined(__ARM_FEATURE_SIMD32)
#if defined(__clang__)
#define MC_WIDEN_UNROLL _Pragma("unroll 8")
#elif defined(__GNUC__) && __GNUC__ >= 8
#define MC_WIDEN_UNROLL _Pragma("GCC unroll 8")
#else
#define MC_WIDEN_UNROLL
#endif
/* The widening copies are inline (here, on DSP cores only): an im2col copy calls one per tap
 * with a constant n (16 channels: nine calls per column of a 3x3 convolution), and GCC then
 * unrolls it at the call site (up to 8 steps) with no call or tail test to pay for. On the
 * Cortex-M4, ResNet-8: 13,539,600 -> 12,954,040 instructions for 1.6 KiB more code; kws:
 * 3,151,720 -> 3,133,120 for 1.0 KiB. They share one step: a word of four int8 becomes
 * (x0, x2) and (x1, x3) as int16 pairs by SXTB16 and SXTB16 ROR #8, which PKHBT/PKHTB put
 * back in order as (x0, x1) and (x2, x3). */
static inline __attribute__((always_inline)) void mc_widen4_dsp(const int8_t *src, uint32_t *lo, uint32_t *hi)
{
    uint32_t v, e, o;

    __builtin_memcpy(&v, src, 4);            /* one LDR: Armv7-M allows unaligned word loads */
    __asm__("sxtb16 %0, %1" : "=r"(e) : "r"(v));
    __asm__("sxtb16 %0, %1, ror #8" : "=r"(o) : "r"(v));
    __asm__("pkhbt %0, %1, %2, lsl #16" : "=r"(*lo) : "r"(e), "r"(o));   /* x0 x1 */
    __asm__("pkhtb %0, %2, %1, asr #16" : "=r"(*hi) : "r"(e), "r"(o));   /* x2 x3 */
}

/* dst[i] = src[i]: 7 instructions per 4 elements. */
static inline __attribute__((always_inline)) void mc_widen_dsp_s8_s16(int16_t *dst, const int8_t *src, int32_t n)
{
    const int32_t n4 = n & ~3;    /* (a bound of i + 4 <= n drew a bogus GCC 12 overflow error at n = 128) */
    int32_t i = 0;

    MC_WIDEN_UNROLL
    for (; i < n4; i += 4) {
        uint32_t lo, hi;

        mc_widen4_dsp(src + i, &lo, &hi);
        __builtin_memcpy(dst + i, &lo, 4);
        __builtin_memcpy(dst + i + 2, &hi, 4);
    }
    for (; i < n; ++i)
        dst[i] = src[i];
}

/* The pair-interleaved layout of mc_gemm.h (mc_gemm_p4x2_rq_dsp_s16's columns): a run of n
 * int8 of one column, from an even k, into pairs of int16 every 4 elements. */
static inline __attribute__((always_inline)) void mc_widen_pairs_dsp_s8_s16(int16_t *dst, const int8_t *src,
                                                                           int32_t n)
{
    const int32_t n4 = n & ~3;
    int32_t i = 0;

    MC_WIDEN_UNROLL
    for (; i < n4; i += 4) {
        uint32_t lo, hi;

        mc_widen4_dsp(src + i, &lo, &hi);
        __builtin_memcpy(dst + 2 * i, &lo, 4);
        __builtin_memcpy(dst + 2 * i + 4, &hi, 4);
    }
    for (; i < n; ++i)
        dst[2 * (i & ~1) + (i & 1)] = src[i];
}
#endif
void mc_unpack_s4_s8(int8_t *dst, const uint8_t *src, int32_t n);
void mc_unpack_s4_s16(int16_t *dst, const uint8_t *src, int32_t n);
void mc_move_bytes(void *dst, const void *src, int32_t n);
void mc_copy_mve_s8(int8_t *dst, const int8_t *src, int32_t n);

#ifdef __cplusplus
}
#endif

#endif /* MC_COPY_H */
