/* mc_matmul_s8 (mc_matmul.h): int8 BATCH_MATMUL of two run-time operands, one batch element.
 *
 * The sum over k of (a + oa)(b + ob) is exact in int32 for any depth an MCU holds (255^2 per
 * term). b is transposed once into scratch as int16 with its offset added, in groups of four k
 * ordered k0 k2 k1 k3: SXTB16 of a word of a's row gives (a0, a2) and, rotated by 8, (a1, a3),
 * which then meet one word of that layout each in SMLAD. Cores without the DSP extension run
 * the same arithmetic as plain multiply-adds on the same layout. */
#include "mc_matmul.h"
#include "mc_fixedpoint.h"
#include "mc_requant.h"
#include "mc_s16.h"

#if defined(__ARM_FEATURE_DSP)
#include <arm_acle.h>
#include <string.h>
#endif

#if defined(__GNUC__)
#define MC_ALWAYS_INLINE static inline __attribute__((always_inline))
#define MC_NOINLINE static __attribute__((noinline))
#else
#define MC_ALWAYS_INLINE static inline
#define MC_NOINLINE static
#endif

/* The roundings other than TFLite's double rounding: out of line, rarely taken. */
MC_NOINLINE int32_t requantize_other(int32_t acc, const mc_matmul_params_t *p)
{
    int32_t v;

    switch (p->rounding) {
    case 1:
        v = mc_mul_by_qm_single_round(acc, p->output_multiplier, p->output_shift);
        break;
    case 2:
        v = mc_mul_by_qm_single_round_away(acc, p->output_multiplier, p->output_shift);
        break;
    case 3:
        v = mc_mul_by_qm_single_round_even(acc, p->output_multiplier, p->output_shift);
        break;
    default:
        v = mc_mul_by_qm(acc, p->output_multiplier, p->output_shift);
        break;
    }
    return v;
}

/* Inlined into the loops: Q K^T does only `depth` (a head's width) MACs per output, so the
 * requantization is a good part of the kernel; the double rounding takes mc_requant.h's form
 * for a multiplier >= 0 (QuantizeMultiplier's, always). */
MC_ALWAYS_INLINE int32_t requantize(int32_t acc, const mc_matmul_params_t *p)
{
    int32_t v = p->rounding == 0 && p->output_multiplier >= 0
                    ? mc_mul_by_qm_pos(acc, p->output_multiplier, p->output_shift)
                    : requantize_other(acc, p);

    v += p->output_offset;
    return v < p->act_min ? p->act_min : (v > p->act_max ? p->act_max : v);
}

/* Scratch position of k within a column of the transposed b (groups of four: k0 k2 k1 k3). */
static int32_t slot(int32_t k)
{
    static const int8_t order[4] = {0, 2, 1, 3};
    return (k & ~3) + order[k & 3];
}

static void transpose_b(int16_t *bt, const int8_t *b, const mc_matmul_params_t *p, int32_t kp)
{
    for (int32_t n = 0; n < p->cols; ++n) {
        int16_t *col = bt + n * kp;
        for (int32_t k = 0; k < kp; ++k)
            col[slot(k)] = k < p->depth ? (int16_t)(b[k * p->b_row_stride + n * p->b_col_stride] + p->rhs_offset) : 0;
    }
}

/* The sum for row m of a and column n of bt, any a layout (the portable path, and adj_x). */
static int32_t dot_generic(const int8_t *a_row, int32_t a_col_stride, const int16_t *col, const mc_matmul_params_t *p)
{
    int32_t acc = 0;

    for (int32_t k = 0; k < p->depth; ++k)
        acc += (a_row[k * a_col_stride] + p->lhs_offset) * col[slot(k)];
    return acc;
}

#if defined(__ARM_FEATURE_DSP)
/* Four columns at a time for a row of a with contiguous k: per four k, one load of a, two
 * SXTB16 and two SADD16 shared by the four columns, then two loads and two SMLAD per column. */
static void row_dsp(int8_t *y, const int8_t *a_row, const int16_t *bt, const mc_matmul_params_t *p, int32_t kp)
{
    const int32_t k4 = p->depth & ~3;
    const int32_t offset2 = (int32_t)(((uint32_t)(uint16_t)p->lhs_offset << 16) | (uint16_t)p->lhs_offset);
    int32_t n = 0;

    for (; n + 4 <= p->cols; n += 4) {
        const int16_t *c0 = bt + n * kp, *c1 = c0 + kp, *c2 = c1 + kp, *c3 = c2 + kp;
        int32_t s0 = 0, s1 = 0, s2 = 0, s3 = 0, w0, w1;
        int32_t k = 0;

        for (; k < k4; k += 4) {
            int32_t aw, a02, a13;

            memcpy(&aw, a_row + k, 4);
            a02 = __sadd16(__sxtb16(aw), offset2);
            __asm__("sxtb16 %0, %1, ror #8" : "=r"(a13) : "r"(aw));
            a13 = __sadd16(a13, offset2);
            memcpy(&w0, c0 + k, 4);
            memcpy(&w1, c0 + k + 2, 4);
            s0 = __smlad(a02, w0, __smlad(a13, w1, s0));
            memcpy(&w0, c1 + k, 4);
            memcpy(&w1, c1 + k + 2, 4);
            s1 = __smlad(a02, w0, __smlad(a13, w1, s1));
            memcpy(&w0, c2 + k, 4);
            memcpy(&w1, c2 + k + 2, 4);
            s2 = __smlad(a02, w0, __smlad(a13, w1, s2));
            memcpy(&w0, c3 + k, 4);
            memcpy(&w1, c3 + k + 2, 4);
            s3 = __smlad(a02, w0, __smlad(a13, w1, s3));
        }
        for (; k < p->depth; ++k) {
            const int32_t av = a_row[k] + p->lhs_offset;
            s0 += av * c0[slot(k)];
            s1 += av * c1[slot(k)];
            s2 += av * c2[slot(k)];
            s3 += av * c3[slot(k)];
        }
        y[n] = (int8_t)requantize(s0, p);
        y[n + 1] = (int8_t)requantize(s1, p);
        y[n + 2] = (int8_t)requantize(s2, p);
        y[n + 3] = (int8_t)requantize(s3, p);
    }
    for (; n < p->cols; ++n)
        y[n] = (int8_t)requantize(dot_generic(a_row, 1, bt + n * kp, p), p);
}
#endif

void mc_matmul_s8_pack_b(int16_t *scratch, const int8_t *b, const mc_matmul_params_t *params)
{
    transpose_b(scratch, b, params, (params->depth + 3) & ~3);
}

void mc_matmul_s8_packed(int8_t *y, const int8_t *a, const int16_t *packed_b, const mc_matmul_params_t *params)
{
    const int32_t kp = (params->depth + 3) & ~3;

    for (int32_t m = 0; m < params->rows; ++m) {
        const int8_t *a_row = a + m * params->a_row_stride;
        int8_t *y_row = y + m * params->cols;
#if defined(__ARM_FEATURE_DSP)
        if (params->a_col_stride == 1) {
            row_dsp(y_row, a_row, packed_b, params, kp);
            continue;
        }
#endif
        for (int32_t n = 0; n < params->cols; ++n)
            y_row[n] = (int8_t)requantize(dot_generic(a_row, params->a_col_stride, packed_b + n * kp, params), params);
    }
}

void mc_matmul_s8(int8_t *y, const int8_t *a, const int8_t *b, int16_t *scratch, const mc_matmul_params_t *params)
{
    mc_matmul_s8_pack_b(scratch, b, params);
    mc_matmul_s8_packed(y, a, scratch, params);
}

void mc_matmul_s16(int16_t *y, const int16_t *a, const int16_t *b, const mc_matmul_params_t *params)
{
    const mc_matmul_params_t *p = params;

    for (int32_t m = 0; m < p->rows; ++m) {
        const int16_t *a_row = a + m * p->a_row_stride;
        for (int32_t n = 0; n < p->cols; ++n) {
            const int16_t *b_col = b + n * p->b_col_stride;
            int64_t acc = 0;
            for (int32_t k = 0; k < p->depth; ++k)
                acc += (int32_t)a_row[k * p->a_col_stride] * b_col[k * p->b_row_stride];
            y[m * p->cols + n] = mc_clamp_s16(mc_mul_by_qm_s64(acc, p->output_multiplier, p->output_shift),
                                              p->act_min, p->act_max);
        }
    }
}
