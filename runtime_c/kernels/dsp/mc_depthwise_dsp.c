/* Depthwise micro-kernels (mc_depthwise.h) for Armv7E-M cores with the DSP extension.
 * Copied into a project only when the board's core has DSP.
 *
 * Four channels per step: one 32-bit load of x gives channels c..c+3; SXTB16 makes the
 * int16 pairs (c, c+2) and, rotated by 8, (c+1, c+3). The packed weights hold the same
 * pairs, so SMLABB/SMLATT multiply-accumulate each lane into its own channel: per tap and
 * four channels, 1 load of x, 2 of w, 2 SXTB16 and 4 MACs. */
#include <arm_acle.h>
#include <string.h>

#include "mc_depthwise.h"
#include "mc_requant_dsp.h"

static inline int32_t ld32(const void *p)
{
    int32_t v;

    memcpy(&v, p, 4);   /* one LDR: Armv7-M allows unaligned word loads */
    return v;
}

/* SXTB16 of x rotated right by 8 (bytes 1 and 3); GCC 12 has no __ror to fold into it. */
static inline int32_t sxtb16_ror8(int32_t x)
{
    int32_t r;

    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}

/* The whole kernel; each exported variant inlines it with kh, kw and w_row fixed (or not). */
static inline __attribute__((always_inline)) void depthwise_dsp(
    int8_t *y, const int8_t *x, const int16_t *w, const int32_t *bias, const int32_t *mult, const int32_t *rshift,
    int32_t channels, int32_t kh, int32_t kw, int32_t x_row, int32_t x_col, int32_t w_row, int32_t w_group,
    int32_t out_offset, int32_t act_min, int32_t act_max)
{
    const int32_t c4 = channels & ~3;
    const int32_t lo4 = mc_bytes4(act_min), hi4 = mc_bytes4(act_max);
    int32_t c = 0;

    for (; c < c4; c += 4) {
        const int8_t *xr = x + c;
        const int16_t *wr = w + (c >> 2) * w_group;
        int32_t a0 = bias[c], a1 = bias[c + 1], a2 = bias[c + 2], a3 = bias[c + 3];

        /* One tap after another, pointers walking: the empty asm keeps GCC 12 from
         * hoisting every load of an unrolled window and spilling the accumulators. */
#pragma GCC unroll 3
        for (int32_t i = 0; i < kh; ++i, xr += x_row, wr += w_row) {
            const int8_t *xp = xr;

#pragma GCC unroll 3
            for (int32_t j = 0; j < kw; ++j, xp += x_col) {
                const int32_t xv = ld32(xp);
                const int32_t xe = __sxtb16(xv), xo = sxtb16_ror8(xv);
                const int32_t we = ld32(wr + j * 4), wo = ld32(wr + j * 4 + 2);

                a0 = __smlabb(xe, we, a0);
                a2 = __smlatt(xe, we, a2);
                a1 = __smlabb(xo, wo, a1);
                a3 = __smlatt(xo, wo, a3);
                __asm__ volatile("" ::: "memory");
            }
        }
        mc_store4_s8(y + c, mc_requant_ssat8(a0, mult[c], rshift[c], out_offset),
                     mc_requant_ssat8(a1, mult[c + 1], rshift[c + 1], out_offset),
                     mc_requant_ssat8(a2, mult[c + 2], rshift[c + 2], out_offset),
                     mc_requant_ssat8(a3, mult[c + 3], rshift[c + 3], out_offset), lo4, hi4);
    }
    for (; c < channels; ++c) {   /* the last, partial group: one channel at a time */
        const int16_t *wc = w + (c >> 2) * w_group + (c % 2) * 2 + (c % 4) / 2;
        int32_t acc = bias[c];

        for (int32_t i = 0; i < kh; ++i) {
            for (int32_t j = 0; j < kw; ++j) {
                acc += (int32_t)x[c + i * x_row + j * x_col] * wc[i * w_row + j * 4];
            }
        }
        acc = mc_requant_ssat8(acc, mult[c], rshift[c], out_offset);
        acc = acc < act_min ? act_min : acc;
        y[c] = (int8_t)(acc > act_max ? act_max : acc);
    }
}

void mc_depthwise_dsp_s8(MC_DEPTHWISE_ARGS)
{
    depthwise_dsp(y, x, w, bias, mult, rshift, params->channels, params->kh, params->kw, params->x_row,
                  params->x_col, params->w_row, params->w_group, params->out_offset, params->act_min,
                  params->act_max);
}

/* The windows of a 3x3 filter with padding 1: interior, edges, corners. The filter is 3
 * wide, so w_row is 3 taps * 4 lanes and every weight load has a constant offset. */
#define MC_DEPTHWISE_FIXED(KH, KW)                                                                   \
    void mc_depthwise_##KH##x##KW##_dsp_s8(MC_DEPTHWISE_ARGS)                                        \
    {                                                                                                \
        depthwise_dsp(y, x, w, bias, mult, rshift, params->channels, KH, KW, params->x_row,           \
                      params->x_col, 12, params->w_group, params->out_offset, params->act_min,       \
                      params->act_max);                                                              \
    }

MC_DEPTHWISE_FIXED(3, 3)
MC_DEPTHWISE_FIXED(2, 3)
MC_DEPTHWISE_FIXED(3, 2)
MC_DEPTHWISE_FIXED(2, 2)
