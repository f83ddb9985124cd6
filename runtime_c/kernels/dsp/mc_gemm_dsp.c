/* GEMM micro-kernels (mc_gemm.h) for Armv7E-M cores with the DSP extension (Cortex-M4/M7/M33).
 * Copied into a project only when the board's core has DSP (boards/cores/<core>.toml).
 *
 * s16: both operands are int16 pairs, so one 32-bit load feeds SMLAD directly
 *      (2 MACs per instruction). A 2x2 tile costs 4 loads + 4 SMLAD per 2 k: 1 instr/MAC.
 * s8:  SXTB16 extracts bytes 0,2 and (after ROR 8) bytes 1,3 of a word as int16 pairs.
 *      Applying the same extraction to both operands pairs equal k, so no shuffle and no
 *      reordered weights are needed: x0*w0 + x2*w2 and x1*w1 + x3*w3. */
#include <stdint.h>
#include <string.h>

#include "mc_dsp.h"
#include "mc_gemm.h"
#include "mc_requant_dsp.h"

/* One column (a vector-matrix product: fully connected, or the last odd column): four rows
 * share each loaded pair of the column. */
static void gemv_dsp_s16(int32_t *c, const int16_t *a, const int16_t *b, int32_t m, int32_t k, int32_t lda)
{
    const int32_t k2 = k & ~1;
    int32_t i = 0;

    for (; i + 4 <= m; i += 4) {
        const int16_t *a0 = a + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda, *x = b;
        const int16_t *end = b + k2;
        int32_t s0 = c[i], s1 = c[i + 1], s2 = c[i + 2], s3 = c[i + 3];

        /* Post-incremented loads: 11 instructions per 8 MACs. Unrolling by hand makes GCC 12
         * switch to offset loads plus separate pointer updates, which costs more. */
        while (x != end) {
            const int32_t xv = ld32(x);

            s0 = __smlad(xv, ld32(a0), s0);
            s1 = __smlad(xv, ld32(a1), s1);
            s2 = __smlad(xv, ld32(a2), s2);
            s3 = __smlad(xv, ld32(a3), s3);
            x += 2;
            a0 += 2;
            a1 += 2;
            a2 += 2;
            a3 += 2;
        }
        if (k2 != k) {
            s0 += *x * *a0;
            s1 += *x * *a1;
            s2 += *x * *a2;
            s3 += *x * *a3;
        }
        c[i] = s0;
        c[i + 1] = s1;
        c[i + 2] = s2;
        c[i + 3] = s3;
    }
    for (; i < m; ++i) {
        const int16_t *a0 = a + i * lda;
        int32_t s = c[i], p = 0;

        for (; p < k2; p += 2)
            s = __smlad(ld32(b + p), ld32(a0 + p), s);
        if (p < k)
            s += b[p] * a0[p];
        c[i] = s;
    }
}

void mc_gemm_nt_dsp_s16(int32_t *c, const int16_t *a, const int16_t *b, const mc_gemm_params_t *params)
{
    const int32_t m = params->m, n = params->n, k = params->k;
    const int32_t lda = params->lda, ldb = params->ldb, ldc = params->ldc;
    const int32_t k2 = k & ~1;
    int32_t j = 0;

    for (; j + 2 <= n; j += 2) {
        const int16_t *b0 = b + j * ldb, *b1 = b0 + ldb;
        int32_t *c0 = c + j * ldc, *c1 = c0 + ldc;
        int32_t i = 0;

        for (; i + 2 <= m; i += 2) {
            const int16_t *a0 = a + i * lda, *a1 = a0 + lda, *x0 = b0, *x1 = b1;
            const int16_t *end = a0 + k2;
            int32_t s00 = c0[i], s01 = c0[i + 1], s10 = c1[i], s11 = c1[i + 1];

            while (a0 != end) {
                const int32_t xv0 = ld32(x0), xv1 = ld32(x1), w0 = ld32(a0), w1 = ld32(a1);

                s00 = __smlad(xv0, w0, s00);
                s01 = __smlad(xv0, w1, s01);
                s10 = __smlad(xv1, w0, s10);
                s11 = __smlad(xv1, w1, s11);
                x0 += 2;
                x1 += 2;
                a0 += 2;
                a1 += 2;
            }
            if (k2 != k) {
                s00 += *x0 * *a0;
                s01 += *x0 * *a1;
                s10 += *x1 * *a0;
                s11 += *x1 * *a1;
            }
            c0[i] = s00;
            c0[i + 1] = s01;
            c1[i] = s10;
            c1[i + 1] = s11;
        }
        if (i < m) {
            const int16_t *a0 = a + i * lda;
            int32_t s0 = c0[i], s1 = c1[i], p = 0;

            for (; p < k2; p += 2) {
                s0 = __smlad(ld32(b0 + p), ld32(a0 + p), s0);
                s1 = __smlad(ld32(b1 + p), ld32(a0 + p), s1);
            }
            if (p < k) {
                s0 += b0[p] * a0[p];
                s1 += b1[p] * a0[p];
            }
            c0[i] = s0;
            c1[i] = s1;
        }
    }
    if (j < n)
        gemv_dsp_s16(c + j * ldc, a, b + j * ldb, m, k, lda);
}

/* One column (a vector-matrix product, e.g. fully connected): four rows share each
 * extracted word of the column, 23 instructions per 16 MACs in the steady state. */
static void gemv_dsp_s8(int32_t *c, const int8_t *a, const int8_t *b, int32_t m, int32_t k, int32_t lda)
{
    const int32_t k4 = k & ~3;
    int32_t i = 0;

    for (; i + 4 <= m; i += 4) {
        const int8_t *a0 = a + i * lda, *a1 = a0 + lda, *a2 = a1 + lda, *a3 = a2 + lda;
        int32_t s0 = c[i], s1 = c[i + 1], s2 = c[i + 2], s3 = c[i + 3], p = 0;

        for (; p < k4; p += 4) {
            const int32_t x = ld32(b + p), xe = __sxtb16(x), xo = sxtb16_ror8(x);
            int32_t w = ld32(a0 + p);

            s0 = __smlad(xe, __sxtb16(w), s0);
            s0 = __smlad(xo, sxtb16_ror8(w), s0);
            w = ld32(a1 + p);
            s1 = __smlad(xe, __sxtb16(w), s1);
            s1 = __smlad(xo, sxtb16_ror8(w), s1);
            w = ld32(a2 + p);
            s2 = __smlad(xe, __sxtb16(w), s2);
            s2 = __smlad(xo, sxtb16_ror8(w), s2);
            w = ld32(a3 + p);
            s3 = __smlad(xe, __sxtb16(w), s3);
            s3 = __smlad(xo, sxtb16_ror8(w), s3);
        }
        for (; p < k; ++p) {
            const int32_t x = b[p];

            s0 += x * a0[p];
            s1 += x * a1[p];
            s2 += x * a2[p];
            s3 += x * a3[p];
        }
        c[i] = s0;
        c[i + 1] = s1;
        c[i + 2] = s2;
        c[i + 3] = s3;
    }
    for (; i < m; ++i) {
        const int8_t *a0 = a + i * lda;
        int32_t s = c[i], p = 0;

        for (; p < k4; p += 4) {
            const int32_t x = ld32(b + p), w = ld32(a0 + p);

            s = __smlad(__sxtb16(x), __sxtb16(w), s);
            s = __smlad(sxtb16_ror8(x), sxtb16_ror8(w), s);
        }
        for (; p < k; ++p)
            s += b[p] * a0[p];
        c[i] = s;
    }
}

void mc_gemm_nt_dsp_s8(int32_t *c, const int8_t *a, const int8_t *b, const mc_gemm_params_t *params)
{
    const int32_t m = params->m, n = params->n, k = params->k;
    const int32_t lda = params->lda, ldb = params->ldb, ldc = params->ldc;
    const int32_t k4 = k & ~3;
    int32_t j = 0;

    for (; j + 2 <= n; j += 2) {
        const int8_t *b0 = b + j * ldb, *b1 = b0 + ldb;
        int32_t *c0 = c + j * ldc, *c1 = c0 + ldc;
        int32_t i = 0;

        for (; i + 2 <= m; i += 2) {
            const int8_t *a0 = a + i * lda, *a1 = a0 + lda;
            int32_t s00 = c0[i], s01 = c0[i + 1], s10 = c1[i], s11 = c1[i + 1], p = 0;

            for (; p < k4; p += 4) {
                const int32_t x0 = ld32(b0 + p), x1 = ld32(b1 + p), w0 = ld32(a0 + p), w1 = ld32(a1 + p);
                const int32_t x0e = __sxtb16(x0), x0o = sxtb16_ror8(x0);
                const int32_t x1e = __sxtb16(x1), x1o = sxtb16_ror8(x1);
                const int32_t w0e = __sxtb16(w0), w0o = sxtb16_ror8(w0);
                const int32_t w1e = __sxtb16(w1), w1o = sxtb16_ror8(w1);

                s00 = __smlad(x0o, w0o, __smlad(x0e, w0e, s00));
                s01 = __smlad(x0o, w1o, __smlad(x0e, w1e, s01));
                s10 = __smlad(x1o, w0o, __smlad(x1e, w0e, s10));
                s11 = __smlad(x1o, w1o, __smlad(x1e, w1e, s11));
            }
            for (; p < k; ++p) {
                s00 += b0[p] * a0[p];
                s01 += b0[p] * a1[p];
                s10 += b1[p] * a0[p];
                s11 += b1[p] * a1[p];
            }
            c0[i] = s00;
            c0[i + 1] = s01;
            c1[i] = s10;
            c1[i + 1] = s11;
        }
        if (i < m) {
            gemv_dsp_s8(c0 + i, a + i * lda, b0, m - i, k, lda);
            gemv_dsp_s8(c1 + i, a + i * lda, b1, m - i, k, lda);
        }
    }
    if (j < n)
        gemv_dsp_s8(c + j * ldc, a, b + j * ldb, m, k, lda);
}

/* a packed in panels of four rows (mc_gemm.h), so one LDM fetches the weight pairs of four
 * rows: a column's 8 k cost 4 LDR + 4 LDM + 16 SMLAD + 2 loop = 26 instructions per 32 MACs.
 * The loop is inline assembly because GCC 12 neither emits LDM for it nor keeps the four
 * weight words out of the accumulators' registers. */
/* Four rows times one column: s[0..3] += panel rows . x, w advanced past the panel. */
static inline const int16_t *p4_s16_panel(int32_t *s, const int16_t *w, const int16_t *x, const int16_t *x8,
                                          int32_t k)
{
    int32_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3], x0, x1;

    if (x != x8)
        __asm__ volatile(
            "1:\n\t"
            "ldr %[x0], [%[x]], #4\n\t"
            "ldr %[x1], [%[x]], #4\n\t"
            "ldmia %[w]!, {r8, r9, r10, r11}\n\t"
            "smlad %[s0], %[x0], r8, %[s0]\n\t"
            "smlad %[s1], %[x0], r9, %[s1]\n\t"
            "smlad %[s2], %[x0], r10, %[s2]\n\t"
            "smlad %[s3], %[x0], r11, %[s3]\n\t"
            "ldmia %[w]!, {r8, r9, r10, r11}\n\t"
            "smlad %[s0], %[x1], r8, %[s0]\n\t"
            "smlad %[s1], %[x1], r9, %[s1]\n\t"
            "smlad %[s2], %[x1], r10, %[s2]\n\t"
            "smlad %[s3], %[x1], r11, %[s3]\n\t"
            "ldr %[x0], [%[x]], #4\n\t"
            "ldr %[x1], [%[x]], #4\n\t"
            "ldmia %[w]!, {r8, r9, r10, r11}\n\t"
            "smlad %[s0], %[x0], r8, %[s0]\n\t"
            "smlad %[s1], %[x0], r9, %[s1]\n\t"
            "smlad %[s2], %[x0], r10, %[s2]\n\t"
            "smlad %[s3], %[x0], r11, %[s3]\n\t"
            "ldmia %[w]!, {r8, r9, r10, r11}\n\t"
            "smlad %[s0], %[x1], r8, %[s0]\n\t"
            "smlad %[s1], %[x1], r9, %[s1]\n\t"
            "smlad %[s2], %[x1], r10, %[s2]\n\t"
            "smlad %[s3], %[x1], r11, %[s3]\n\t"
            "cmp %[x], %[end]\n\t"
            "bne 1b\n\t"
            : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [x] "+r"(x), [w] "+r"(w),
              [x0] "=&r"(x0), [x1] "=&r"(x1)
            : [end] "r"(x8)
            : "r8", "r9", "r10", "r11", "cc", "memory");
    for (int32_t p = k & 6; p > 1; p -= 2, x += 2, w += 8) {
        x0 = ld32(x);
        s0 = __smlad(x0, ld32(w), s0);
        s1 = __smlad(x0, ld32(w + 2), s1);
        s2 = __smlad(x0, ld32(w + 4), s2);
        s3 = __smlad(x0, ld32(w + 6), s3);
    }
    if (k & 1) {
        x0 = *x;
        s0 += x0 * w[0];
        s1 += x0 * w[2];
        s2 += x0 * w[4];
        s3 += x0 * w[6];
        w += 8;
    }
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
    return w;
}

/* Four k of a word-aligned column: one LDRD of the column, one LDM of the four rows' pairs per two k. */
#define MC_P4_S16_GROUP4                                \
    "ldrd %[x0], %[x1], [%[x]], #8\n\t"               \
    "ldmia %[w]!, {r8, r9, r10, r11}\n\t"              \
    "smlad %[s0], %[x0], r8, %[s0]\n\t"                \
    "smlad %[s1], %[x0], r9, %[s1]\n\t"                \
    "smlad %[s2], %[x0], r10, %[s2]\n\t"               \
    "smlad %[s3], %[x0], r11, %[s3]\n\t"               \
    "ldmia %[w]!, {r8, r9, r10, r11}\n\t"              \
    "smlad %[s0], %[x1], r8, %[s0]\n\t"                \
    "smlad %[s1], %[x1], r9, %[s1]\n\t"                \
    "smlad %[s2], %[x1], r10, %[s2]\n\t"               \
    "smlad %[s3], %[x1], r11, %[s3]\n\t"
#define MC_P4_S16_GROUP8 MC_P4_S16_GROUP4 MC_P4_S16_GROUP4

/* p4_s16_panel on a word-aligned column (LDRD needs it): 32 k per trip, 90 instructions per
 * 128 MACs with the loop test where p4_s16_panel's LDR pairs take 104; the rest of k by it.
 * A fully connected layer's widened input row (fc_input=int16) runs here. */
static inline const int16_t *p4_s16_panel_aligned(int32_t *s, const int16_t *w, const int16_t *x,
                                                  const int16_t *x32, const int16_t *x8, int32_t k)
{
    int32_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3], x0, x1;

    if (x != x32) {
        __asm__ volatile("1:\n\t" MC_P4_S16_GROUP8 MC_P4_S16_GROUP8 MC_P4_S16_GROUP8 MC_P4_S16_GROUP8
                         "cmp %[x], %[end]\n\t"
                         "bne 1b\n\t"
                         : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [x] "+r"(x), [w] "+r"(w),
                           [x0] "=&r"(x0), [x1] "=&r"(x1)
                         : [end] "r"(x32)
                         : "r8", "r9", "r10", "r11", "cc", "memory");
        s[0] = s0;
        s[1] = s1;
        s[2] = s2;
        s[3] = s3;
    }
    return p4_s16_panel(s, w, x, x8, k);
}

void mc_gemm_p4_dsp_s16(int32_t *c, const int16_t *a, const int16_t *b, const mc_gemm_params_t *params)
{
    const int32_t m = params->m, n = params->n, k = params->k, ldb = params->ldb, ldc = params->ldc;
    const int32_t m4 = m & ~3, k8 = k & ~7;
    /* LDRD needs word-aligned columns: an aligned B and an even ldb */
    const int32_t k32 = ((uintptr_t)b & 3u) == 0 && (ldb & 1) == 0 ? k & ~31 : 0;

    for (int32_t j = 0; j < n; ++j) {
        const int16_t *col = b + j * ldb, *col8 = col + k8, *w = a;
        int32_t *cj = c + j * ldc, *cend = cj + m4;

        for (; cj != cend; cj += 4)
            w = p4_s16_panel_aligned(cj, w, col, col + k32, col8, k);
        if (m4 != m) {         /* the last, partial panel (its padding rows are zero) */
            int32_t s[4] = {0, 0, 0, 0};

            memcpy(s, cj, (size_t)(m - m4) * 4);
            p4_s16_panel(s, w, col, col8, k);
            memcpy(cj, s, (size_t)(m - m4) * 4);
        }
    }
}

/* int8 operands, a packed in panels of four rows by groups of four k (mc_gemm.h): per 4 k,
 * one LDR of the column and one LDM of the four rows' words, SXTB16 pairs both the same way
 * (bytes 0,2 and 1,3), so 21 instructions per 16 MACs (loop unrolled to 8 k) with no widened
 * copy of the weights.
 * Inline assembly for the same reason as above; the column's odd half reuses `x`. */
#define MC_P4S8_ROW(S, R)                                  \
    "sxtb16 %[x], " R ", ror #8\n\t"                      \
    "sxtb16 " R ", " R "\n\t"                             \
    "smlad %[" S "], %[xe], " R ", %[" S "]\n\t"          \
    "smlad %[" S "], %[xo], %[x], %[" S "]\n\t"

#define MC_P4S8_GROUP                                  \
    "ldr %[x], [%[xp]], #4\n\t"                       \
    "ldmia %[w]!, {r8, r9, r10, r11}\n\t"             \
    "sxtb16 %[xe], %[x]\n\t"                          \
    "sxtb16 %[xo], %[x], ror #8\n\t"                  \
    MC_P4S8_ROW("s0", "r8")                            \
    MC_P4S8_ROW("s1", "r9")                            \
    MC_P4S8_ROW("s2", "r10")                           \
    MC_P4S8_ROW("s3", "r11")

/* Four rows times one column: s[0..3] += panel rows . x, w advanced past the panel. */
static inline const int8_t *p4_s8_panel(int32_t *s, const int8_t *w, const int8_t *x, const int8_t *x8, int32_t k)
{
    int32_t s0 = s[0], s1 = s[1], s2 = s[2], s3 = s[3], xv, xe, xo;

    if (x != x8)
        __asm__ volatile("1:\n\t" MC_P4S8_GROUP MC_P4S8_GROUP "cmp %[xp], %[end]\n\t"
                         "bne 1b\n\t"
                         : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [xp] "+r"(x), [w] "+r"(w),
                           [x] "=&r"(xv), [xe] "=&r"(xe), [xo] "=&r"(xo)
                         : [end] "r"(x8)
                         : "r8", "r9", "r10", "r11", "cc", "memory");
    if (k & 4)
        __asm__ volatile(MC_P4S8_GROUP
                         : [s0] "+r"(s0), [s1] "+r"(s1), [s2] "+r"(s2), [s3] "+r"(s3), [xp] "+r"(x), [w] "+r"(w),
                           [x] "=&r"(xv), [xe] "=&r"(xe), [xo] "=&r"(xo)
                         :
                         : "r8", "r9", "r10", "r11", "memory");
    if (k & 3) {
        for (int32_t p = 0; p < (k & 3); ++p) {
            const int32_t xp = x[p];

            s0 += xp * w[p];
            s1 += xp * w[4 + p];
            s2 += xp * w[8 + p];
            s3 += xp * w[12 + p];
        }
        w += 16;
    }
    s[0] = s0;
    s[1] = s1;
    s[2] = s2;
    s[3] = s3;
    return w;
}

void mc_gemm_p4_dsp_s8(int32_t *c, const int8_t *a, const int8_t *b, const mc_gemm_params_t *params)
{
    const int32_t m = params->m, n = params->n, k = params->k, ldb = params->ldb, ldc = params->ldc;
    const int32_t m4 = m & ~3, k8 = k & ~7;

    for (int32_t j = 0; j < n; ++j) {
        const int8_t *col = b + j * ldb, *col8 = col + k8, *w = a;
        int32_t *cj = c + j * ldc, *cend = cj + m4;

        for (; cj != cend; cj += 4)
            w = p4_s8_panel(cj, w, col, col8, k);
        if (m4 != m) {         /* the last, partial panel (its padding rows are zero) */
            int32_t s[4] = {0, 0, 0, 0};

            memcpy(s, cj, (size_t)(m - m4) * 4);
            p4_s8_panel(s, w, col, col8, k);
            memcpy(cj, s, (size_t)(m - m4) * 4);
        }
    }
}

/* The requantizing panel kernels (mc_gemm.h): per column, each panel of four rows starts
 * from its bias, runs the same assembly loop as above, and its four sums are requantized
 * and stored as one word of int8 (mc_requant_dsp.h). No int32 tile, no second pass. */
#define MC_GEMM_P4_RQ(NAME, T, PANEL)                                                               \
    NAME(MC_GEMM_RQ_ARGS(T))                                                                          \
    {                                                                                                 \
        const int32_t m = params->m, n = params->n, k = params->k, ldb = params->ldb, ldy = params->ldy; \
        const int32_t m4 = m & ~3, k8 = k & ~7, off = params->out_offset;                             \
        const int32_t lo4 = mc_bytes4(params->act_min), hi4 = mc_bytes4(params->act_max);             \
                                                                                                      \
        for (int32_t j = 0; j < n; ++j) {                                                             \
            const T *col = b + j * ldb, *col8 = col + k8, *w = a;                                     \
            int8_t *yj = y + j * ldy;                                                                 \
            int32_t i = 0;                                                                            \
                                                                                                      \
            for (; i < m4; i += 4) {                                                                  \
                int32_t s[4] = {bias[i], bias[i + 1], bias[i + 2], bias[i + 3]};                      \
                                                                                                      \
                w = PANEL(s, w, col, col8, k);                                                        \
                mc_store4_s8(yj + i, mc_requant_ssat8(s[0], mult[i], rshift[i], off),                  \
                             mc_requant_ssat8(s[1], mult[i + 1], rshift[i + 1], off),                  \
                             mc_requant_ssat8(s[2], mult[i + 2], rshift[i + 2], off),                  \
                             mc_requant_ssat8(s[3], mult[i + 3], rshift[i + 3], off), lo4, hi4);       \
            }                                                                                         \
            if (i < m) { /* the last, partial panel (its padding rows are zero) */                   \
                int32_t s[4] = {0, 0, 0, 0};                                                          \
                                                                                                      \
                for (int32_t r = i; r < m; ++r)                                                       \
                    s[r - i] = bias[r];                                                               \
                PANEL(s, w, col, col8, k);                                                            \
                for (int32_t r = i; r < m; ++r) {                                                     \
                    int32_t v = mc_requant_ssat8(s[r - i], mult[r], rshift[r], off);                  \
                                                                                                      \
                    v = v < params->act_min ? params->act_min : v;                                    \
                    yj[r] = (int8_t)(v > params->act_max ? params->act_max : v);                      \
                }                                                                                     \
            }                                                                                         \
        }                                                                                             \
    }

void MC_GEMM_P4_RQ(mc_gemm_p4_rq_dsp_s8, int8_t, p4_s8_panel)

/* The requantizing int16 kernels' output stage reads records made at compile time (mc_gemm.h,
 * MC_GEMM_RQREC_ARGS): per panel bias[4], mult[4], rshift[4] - 1. One panel's four sums after
 * p4_s16_panel, requantized from its record; `rows` (1..4) of them stored. */
static inline void rq_store_panel(int8_t *y, const int32_t s[4], const int32_t *rec, int32_t rows,
                                  const mc_gemm_rq_params_t *params, int32_t lo4, int32_t hi4)
{
    const int32_t off = params->out_offset;

    if (rows == 4) {
        mc_store4_s8(y, mc_requant_ssat8(s[0], rec[4], rec[8] + 1, off),
                     mc_requant_ssat8(s[1], rec[5], rec[9] + 1, off),
                     mc_requant_ssat8(s[2], rec[6], rec[10] + 1, off),
                     mc_requant_ssat8(s[3], rec[7], rec[11] + 1, off), lo4, hi4);
        return;
    }
    for (int32_t r = 0; r < rows; ++r) {
        int32_t v = mc_requant_ssat8(s[r], rec[4 + r], rec[8 + r] + 1, off);

        v = v < params->act_min ? params->act_min : v;
        y[r] = (int8_t)(v > params->act_max ? params->act_max : v);
    }
}

/* Any k, shape or alignment (the assembly loops need k >= 8, or k % 8 == 0 for the 4x2 tile,
 * and a word-aligned B with an even ldb): per column, per panel, the C panel loop. Not inlined: one instance serves the
 * three kernels (their frames stay as small as their assembly paths need). */
__attribute__((noinline)) static void p4_rq_s16_any(MC_GEMM_RQREC_ARGS(int16_t))
{
    const int32_t m = params->m, n = params->n, k = params->k, ldb = params->ldb, ldy = params->ldy;
    const int32_t lo4 = mc_bytes4(params->act_min), hi4 = mc_bytes4(params->act_max);

    for (int32_t j = 0; j < n; ++j) {
        const int16_t *col = b + j * ldb, *w = a;

        for (int32_t i = 0; i < m; i += 4) {
            const int32_t *rec = rq + i * 3;
            int32_t s[4] = {rec[0], rec[1], rec[2], rec[3]};

            w = p4_s16_panel(s, w, col, col + (k & ~7), k);
            rq_store_panel(y + j * ldy + i, s, rec, m - i < 4 ? m - i : 4, params, lo4, hi4);
        }
    }
}

/* int16 operands with k >= 8 (a tail of pairs where k is not a multiple of 8): one column's
 * panels in a single assembly loop. The epilogue is what it saves: each panel's bias,
 * multipliers and shifts minus one are one record of 12 words made at compile time
 * (mc_gemm.h, MC_GEMM_RQREC_ARGS), which three LDM read; requantization as in mc_requant_dsp.h, the
 * clamp and the store with the loop's state kept on the stack, not recomputed. Per panel of
 * four rows and k = 64: 208 instructions of products and 45 of epilogue and loop, where the
 * C loop around the same product assembly took about 90; the column comes in pairs of words
 * by LDM (the C loop's LDR pairs: 26 instructions per 8 k, here 24). */
#define RQ_CHUNK 8

typedef struct {
    const int16_t *col;     /* the column of B */
    const int16_t *col8;    /* the end of its 8-k steps */
    int8_t *y;              /* the first panel's four outputs */
    int32_t lo4, hi4;       /* act_min / act_max in every byte */
    int32_t off2;           /* 1 + 2 * out_offset */
    int32_t tail;           /* p4_rq_s16_column_tail: bytes of the pairs after the 8-k loop */
    int32_t *pad;           /* the caller's words for what the naked loop pushes (unread) */
} rq_column_t;

/* TFLite's requantization with double rounding (mc_requant_dsp.h): the records' multipliers and
 * shifts minus one, off2 = 1 + 2 * out_offset from the stack. */
#define P4_RQ_DOUBLE_ROUNDING                                                                     \
        "ldmia lr!, {r8, r9, r10, r11}\n\t"          /* multipliers: SMMULR(2 * acc, mult) */     \
        "lsl r0, r0, #1\n\t"                                                                      \
        "smmulr r0, r0, r8\n\t"                                                                   \
        "lsl r1, r1, #1\n\t"                                                                      \
        "smmulr r1, r1, r9\n\t"                                                                   \
        "lsl r2, r2, #1\n\t"                                                                      \
        "smmulr r2, r2, r10\n\t"                                                                  \
        "lsl r3, r3, #1\n\t"                                                                      \
        "smmulr r3, r3, r11\n\t"                                                                  \
        "ldmia lr!, {r8, r9, r10, r11}\n\t"          /* shifts minus one */                       \
        "ldr r6, [sp, #20]\n\t"                      /* off2 */                                   \
        "sub r0, r0, r0, lsr #31\n\t"                                                             \
        "asr r0, r0, r8\n\t"                                                                      \
        "add r0, r0, r6\n\t"                                                                      \
        "ssat r0, #8, r0, asr #1\n\t"                                                             \
        "sub r1, r1, r1, lsr #31\n\t"                                                             \
        "asr r1, r1, r9\n\t"                                                                      \
        "add r1, r1, r6\n\t"                                                                      \
        "ssat r1, #8, r1, asr #1\n\t"                                                             \
        "sub r2, r2, r2, lsr #31\n\t"                                                             \
        "asr r2, r2, r10\n\t"                                                                     \
        "add r2, r2, r6\n\t"                                                                      \
        "ssat r2, #8, r2, asr #1\n\t"                                                             \
        "sub r3, r3, r3, lsr #31\n\t"                                                             \
        "asr r3, r3, r11\n\t"                                                                     \
        "add r3, r3, r6\n\t"                                                                      \
        "ssat r3, #8, r3, asr #1\n\t"

/* Four k of one column and four rows; eight are P4_RQ_COLUMN's loop body (once per trip, or
 * twice where k % 16 == 0, the end test then once per 16 k). */
#define P4_RQ_K4                                                                                  \
        "ldmia r4!, {r6, r7}\n\t"                    /* four k of the column (word-aligned) */    \
        "ldmia r12!, {r8, r9, r10, r11}\n\t"                                                      \
        "smlad r0, r6, r8, r0\n\t"                                                                \
        "smlad r1, r6, r9, r1\n\t"                                                                \
        "smlad r2, r6, r10, r2\n\t"                                                               \
        "smlad r3, r6, r11, r3\n\t"                                                               \
        "ldmia r12!, {r8, r9, r10, r11}\n\t"                                                      \
        "smlad r0, r7, r8, r0\n\t"                                                                \
        "smlad r1, r7, r9, r1\n\t"                                                                \
        "smlad r2, r7, r10, r2\n\t"                                                               \
        "smlad r3, r7, r11, r3\n\t"
#define P4_RQ_K8 P4_RQ_K4 P4_RQ_K4

/* Panels rq .. rq_end (12 words each: bias[4], mult[4], rshift[4] - 1) of one column, weights
 * from w. AAPCS: r0 = ctx, r1 = w, r2 = rq, r3 = rq_end. Registers: r0-r3 the four sums,
 * r4 the column, r5 its end, r6/r7 column words, r8-r11 weight words and epilogue
 * constants, r12 the weights, lr the records; on the stack rq_end, col, y, lo4, hi4, off2. */
/* Written once for the column kernels: ENTER loads the context onto the stack, TAIL runs after
 * the 8-k loop (nothing, or the pairs left), REQUANT turns the sums r0-r3 into int8 values in
 * r0-r3 (reading the rest of the panel's records from lr; r4 and r6-r11 are free), LEAVE frees
 * the context's words. */
#define P4_RQ_COLUMN(NAME, KLOOP, ENTER, TAIL, REQUANT, LEAVE)                                    \
__attribute__((naked, noinline)) static void NAME(const rq_column_t *ctx __attribute__((unused)), \
                                                  const int16_t *w __attribute__((unused)),       \
                                                  const int32_t *rq __attribute__((unused)),      \
                                                  const int32_t *rq_end __attribute__((unused)))  \
{                                                                                                 \
    __asm__ volatile(                                                                             \
        "push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t"                                         \
        ENTER                                                                                     \
        "mov r12, r1\n\t"                                                                         \
        "mov lr, r2\n\t"                                                                          \
        "2:\n\t"                                                                                  \
        "ldmia lr!, {r0, r1, r2, r3}\n\t"            /* the panel's bias */                       \
        "ldr r4, [sp, #4]\n\t"                                                                    \
        "1:\n\t"                                                                                  \
        KLOOP                                                                                     \
        "cmp r4, r5\n\t"                                                                          \
        "bne 1b\n\t"                                                                              \
        TAIL                                                                                      \
        REQUANT                                                                                   \
        "pkhbt r6, r0, r2, lsl #16\n\t"              /* pack as mc_store4_s8 */                   \
        "pkhbt r7, r1, r3, lsl #16\n\t"                                                           \
        "uxtb16 r6, r6\n\t"                                                                       \
        "uxtb16 r7, r7\n\t"                                                                       \
        "orr r6, r6, r7, lsl #8\n\t"                                                              \
        "ldrd r8, r9, [sp, #12]\n\t"                 /* lo4, hi4 */                               \
        "ssub8 r7, r6, r8\n\t"                                                                    \
        "sel r6, r6, r8\n\t"                                                                      \
        "ssub8 r7, r9, r6\n\t"                                                                    \
        "sel r6, r6, r9\n\t"                                                                      \
        "ldr r7, [sp, #8]\n\t"                                                                    \
        "str r6, [r7], #4\n\t"                                                                    \
        "str r7, [sp, #8]\n\t"                                                                    \
        "ldr r6, [sp]\n\t"                                                                        \
        "cmp lr, r6\n\t"                                                                          \
        "bne 2b\n\t"                                                                              \
        LEAVE                                                                                     \
        "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n\t");                                        \
}

/* A column kernel with k a multiple of 8, as NAME (8 k per trip) and NAME##16 (16 k per trip,
 * for k % 16 == 0), and NAME##_k that picks one by k. */
#define P4_RQ_COLUMNS(NAME, REQUANT)                                                              \
P4_RQ_COLUMN(NAME, P4_RQ_K8,                                                                      \
             "ldm r0, {r4, r5, r6, r7, r8, r9}\n\t"           /* col, col8, y, lo4, hi4, off2 */ \
             "push {r3, r4, r6, r7, r8, r9}\n\t",             /* [sp]: rq_end, col, y, lo4, hi4, off2 */ \
             "", REQUANT, "add sp, sp, #24\n\t")                                                  \
P4_RQ_COLUMN(NAME##16, P4_RQ_K8 P4_RQ_K8,                                                         \
             "ldm r0, {r4, r5, r6, r7, r8, r9}\n\t"                                               \
             "push {r3, r4, r6, r7, r8, r9}\n\t",                                                 \
             "", REQUANT, "add sp, sp, #24\n\t")                                                  \
static inline void NAME##_k(const rq_column_t *ctx, const int16_t *w, const int32_t *rq,         \
                            const int32_t *rq_end, int32_t k)                                     \
{                                                                                                 \
    (k & 15 ? NAME : NAME##16)(ctx, w, rq, rq_end);                                               \
}

P4_RQ_COLUMNS(p4_rq_s16_column, P4_RQ_DOUBLE_ROUNDING)

/* The single rounding, ties away from zero, of LiteRT's int8 fully connected layers
 * (mc_fixedpoint.h mc_mul_by_qm_single_round_away, shift <= -2), with the output offset:
 * for t = 31 - shift, sign(x) * ((|x| * M + 2^(t-1)) >> t) + off is
 *     (x * M + 2^(t-1) - (x < 0) + off * 2^t) >> t,
 * one SMLAL onto (H' + s : s), s = x >> 31, H' = 2^(t-33) + off * 2^(t-32), and an arithmetic
 * shift of the high word by sh = t - 32 (so t >= 33). Per row the records hold H' and sh after
 * the multipliers (mc_gemm.h); six instructions an output. */
#define P4_AWAY_ONE(R, M)                                                                         \
        "asr r4, " #R ", #31\n\t"                                                                 \
        "ldrd r6, r7, [lr], #8\n\t"                                                               \
        "add r6, r6, r4\n\t"                                                                      \
        "smlal r4, r6, " #R ", " #M "\n\t"                                                        \
        "asr " #R ", r6, r7\n\t"                                                                  \
        "ssat " #R ", #8, " #R "\n\t"

#define P4_RQ_AWAY                                                                                \
        "ldmia lr!, {r8, r9, r10, r11}\n\t"          /* multipliers */                            \
        P4_AWAY_ONE(r0, r8) P4_AWAY_ONE(r1, r9) P4_AWAY_ONE(r2, r10) P4_AWAY_ONE(r3, r11)

P4_RQ_COLUMNS(p4_rq_away_column, P4_RQ_AWAY)     /* (off2 unread: the offset is in the records) */

/* P4_RQ_AWAY's arithmetic in C (the 64-bit sum wraps as SMLAL's does). */
static inline int32_t rq_away(int32_t x, int32_t mult, int32_t hp, int32_t sh)
{
    const int32_t s = x >> 31;
    const uint64_t start = ((uint64_t)(uint32_t)(hp + s) << 32) | (uint32_t)s;
    const int64_t t = (int64_t)((uint64_t)((int64_t)x * mult) + start);

    return (int32_t)(t >> 32) >> sh;
}

/* mc_gemm_p4_rq_away_dsp_s16's rows i0 .. m - 1 for any shape or alignment, one MAC at a time
 * (all of them where the assembly does not apply; the last, partial panel where it does). */
static void p4_rq_away_rows(MC_GEMM_RQREC_ARGS(int16_t), int32_t i0)
{
    const int32_t m = params->m, n = params->n, k = params->k, ldb = params->ldb, ldy = params->ldy;
    const int32_t kp = (k + 1) & ~1;

    for (int32_t j = 0; j < n; ++j)
        for (int32_t i = i0; i < m; ++i) {
            const int32_t *rec = rq + (i >> 2) * 16, r = i & 3;
            int32_t acc = rec[r], v;

            for (int32_t p = 0; p < k; ++p)
                acc += a[(i >> 2) * 4 * kp + (p >> 1) * 8 + r * 2 + (p & 1)] * b[j * ldb + p];
            v = rq_away(acc, rec[4 + r], rec[8 + 2 * r], rec[9 + 2 * r]);
            v = v < -128 ? -128 : v > 127 ? 127 : v;
            v = v < params->act_min ? params->act_min : v;
            y[j * ldy + i] = (int8_t)(v > params->act_max ? params->act_max : v);
        }
}

void mc_gemm_p4_rq_away_dsp_s16(MC_GEMM_RQREC_ARGS(int16_t))
{
    const int32_t m = params->m, n = params->n, k = params->k, ldb = params->ldb, ldy = params->ldy;
    const int32_t m4 = m & ~3;
    int32_t pad[16];    /* the 60 bytes p4_rq_away_column pushes (see MC_GEMM_P4_RQ_S16_CHUNKS) */
    rq_column_t ctx;

    /* the assembly: k a multiple of 8, word-aligned columns, whole panels (the rest by rows) */
    if (k < 8 || (k & 7) != 0 || m4 == 0 || ((uintptr_t)b & 3u) != 0 || (ldb & 1) != 0) {
        p4_rq_away_rows(y, a, b, rq, params, 0);
        return;
    }
    ctx.lo4 = mc_bytes4(params->act_min);
    ctx.hi4 = mc_bytes4(params->act_max);
    ctx.off2 = 0;
    ctx.tail = 0;
    ctx.pad = pad;
    for (int32_t i0 = 0; i0 < m4; i0 += 4 * RQ_CHUNK) {
        const int32_t rows = m4 - i0 < 4 * RQ_CHUNK ? m4 - i0 : 4 * RQ_CHUNK;

        for (int32_t j = 0; j < n; ++j) {
            ctx.col = b + j * ldb;
            ctx.col8 = ctx.col + k;
            ctx.y = y + j * ldy + i0;
            p4_rq_away_column_k(&ctx, a + i0 * k, rq + i0 * 4, rq + (i0 + rows) * 4, k);
        }
    }
    if (m4 != m)
        p4_rq_away_rows(y, a, b, rq, params, m4);
}

/* The same for k % 8 != 0 (k >= 8): after the 8-k loop, the rest a pair of k at a time (an odd
 * k's last pair reads one element past it, inside the column's even stride, against a zero
 * weight). ResNet-8's first convolution (k = 27) left the C loop for it. */
P4_RQ_COLUMN(p4_rq_s16_column_tail, P4_RQ_K8,
             "ldm r0, {r4, r5, r6, r7, r8, r9, r10}\n\t"      /* col, col8, y, lo4, hi4, off2, tail */
             "push {r3, r4, r6, r7, r8, r9, r10}\n\t",        /* [sp]: rq_end, col, y, lo4, hi4, off2, tail */
             "ldr r6, [sp, #24]\n\t"                         /* the k % 8 left, a pair at a time */
             "add r6, r5\n\t"
             "3:\n\t"
             "ldr r7, [r4], #4\n\t"
             "ldmia r12!, {r8, r9, r10, r11}\n\t"
             "smlad r0, r7, r8, r0\n\t"
             "smlad r1, r7, r9, r1\n\t"
             "smlad r2, r7, r10, r2\n\t"
             "smlad r3, r7, r11, r3\n\t"
             "cmp r4, r6\n\t"
             "bne 3b\n\t",
             P4_RQ_DOUBLE_ROUNDING, "add sp, sp, #28\n\t")

/* k % 8 != 0 (k >= 8, ResNet-8's first convolution: k = 27), any loop order: chunks of
 * RQ_CHUNK panels, each column by p4_rq_s16_column_tail; the panels' rows are kp = k rounded
 * up to even int16 apart. Its own function, so that the kernels' k % 8 == 0 path is as before. */
__attribute__((noinline)) static void p4_rq_s16_odd_k(MC_GEMM_RQREC_ARGS(int16_t))
{
    const int32_t m = params->m, n = params->n, k = params->k, ldb = params->ldb, ldy = params->ldy;
    const int32_t m4 = m & ~3, k8 = k & ~7, kp = (k + 1) & ~1;
    int32_t pad[16];
    rq_column_t ctx;

    ctx.lo4 = mc_bytes4(params->act_min);
    ctx.hi4 = mc_bytes4(params->act_max);
    ctx.off2 = 1 + 2 * params->out_offset;
    ctx.tail = (kp - k8) * 2;
    ctx.pad = pad;
    for (int32_t i0 = 0; i0 < m4; i0 += 4 * RQ_CHUNK) {
        const int32_t rows = m4 - i0 < 4 * RQ_CHUNK ? m4 - i0 : 4 * RQ_CHUNK;

        for (int32_t j = 0; j < n; ++j) {
            ctx.col = b + j * ldb;
            ctx.col8 = ctx.col + k8;
            ctx.y = y + j * ldy + i0;
            p4_rq_s16_column_tail(&ctx, a + i0 * kp, rq + i0 * 3, rq + (i0 + rows) * 3);
        }
    }
    if (m4 != m) {    /* the last, partial panel (its padding rows are zero), column by column */
        const int32_t *rec = rq + m4 * 3;

        for (int32_t j = 0; j < n; ++j) {
            int32_t s[4] = {rec[0], rec[1], rec[2], rec[3]};

            p4_s16_panel(s, a + m4 * kp, b + j * ldb, b + j * ldb + k8, k);
            rq_store_panel(y + j * ldy + m4, s, rec, m - m4, params, ctx.lo4, ctx.hi4);
        }
    }
}

/* The loop orders of the requantizing s16 kernel: chunks of CHUNK panels outermost, the
 * columns inside (a chunk's weights read once per column); k % 8 != 0 by p4_rq_s16_odd_k;
 * where the assembly does not apply (k < 8, unaligned B), p4_rq_s16_any. A macro, so that
 * each kernel's frame holds the 16 words of the 60 bytes p4_rq_s16_column pushes, which GCC's
 * stack usage (-fstack-usage, the fit report's static bound) cannot see in a naked function
 * (their address escapes through ctx.pad). */
#define MC_GEMM_P4_RQ_S16_CHUNKS(NAME, CHUNK)                                                        \
void NAME(MC_GEMM_RQREC_ARGS(int16_t))                                                               \
{                                                                                                    \
    const int32_t m = params->m, n = params->n, k = params->k, ldb = params->ldb, ldy = params->ldy; \
    const int32_t m4 = m & ~3;                                                                       \
    int32_t pad[16];                                                                                 \
    rq_column_t ctx;                                                                                 \
                                                                                                     \
    /* LDM needs word-aligned columns: an aligned B and an even ldb (im2col scratch is). */          \
    if (k < 8 || m4 == 0 || ((uintptr_t)b & 3u) != 0 || (ldb & 1) != 0) {                            \
        p4_rq_s16_any(y, a, b, rq, params);                                                          \
        return;                                                                                      \
    }                                                                                                \
    if ((k & 7) != 0) {                                                                              \
        p4_rq_s16_odd_k(y, a, b, rq, params);                                                        \
        return;                                                                                      \
    }                                                                                                \
    ctx.lo4 = mc_bytes4(params->act_min);                                                            \
    ctx.hi4 = mc_bytes4(params->act_max);                                                            \
    ctx.off2 = 1 + 2 * params->out_offset;                                                           \
    ctx.pad = pad;                                                                                   \
    for (int32_t i0 = 0; i0 < m4; i0 += 4 * CHUNK) {                                                 \
        const int32_t rows = m4 - i0 < 4 * CHUNK ? m4 - i0 : 4 * CHUNK;                              \
                                                                                                     \
        for (int32_t j = 0; j < n; ++j) {                                                            \
            ctx.col = b + j * ldb;                                                                   \
            ctx.col8 = ctx.col + k;                                                                  \
            ctx.y = y + j * ldy + i0;                                                                \
            p4_rq_s16_column_k(&ctx, a + i0 * k, rq + i0 * 3, rq + (i0 + rows) * 3, k);                   \
        }                                                                                            \
    }                                                                                                \
    if (m4 != m) {    /* the last, partial panel (its padding rows are zero), column by column */    \
        const int32_t *rec = rq + m4 * 3;                                                            \
                                                                                                     \
        for (int32_t j = 0; j < n; ++j) {                                                            \
            const int16_t *col = b + j * ldb;                                                        \
            int32_t s[4] = {rec[0], rec[1], rec[2], rec[3]};                                         \
                                                                                                     \
            p4_s16_panel(s, a + m4 * k, col, col + k, k);                                            \
            rq_store_panel(y + j * ldy + m4, s, rec, m - m4, params, ctx.lo4, ctx.hi4);               \
        }                                                                                            \
    }                                                                                                \
}

MC_GEMM_P4_RQ_S16_CHUNKS(mc_gemm_p4_rq_dsp_s16, RQ_CHUNK)

/* gemm_loop_order "columns": the columns outermost, each column's panels in one call of the
 * assembly loop (up to RQ_COLS_PANELS panels; the schedule offers this order for at most that
 * many, a larger m would run in chunks of it). One call per column instead of one per column
 * and chunk. Where the assembly does not apply the orders do not matter (p4_rq_s16_any). */
#define RQ_COLS_PANELS 16

MC_GEMM_P4_RQ_S16_CHUNKS(mc_gemm_p4_rq_dsp_s16_cols, RQ_COLS_PANELS)

/* ---- The 4x2 register tile (schedule knob gemm_tile=4x2): four weight rows times two columns.
 * B comes pair-interleaved (mc_gemm.h): columns 2q and 2q+1 alternate by k-pair, so one LDM of
 * two words fetches both columns' pair for the same k, and each LDM of two weight words (two of
 * the panel's four rows) feeds four SMLAD: 11 instructions per 16 MACs, as the 4x1 loop, but
 * every weight word is loaded once per two columns (half the weight loads: fewer cycles on
 * silicon, where an LDM of n words takes 1 + n cycles; about the same QEMU instruction count). */

/* Column j's element p in the pair-interleaved layout of a block of n columns. */
static inline int32_t il_index(int32_t j, int32_t p, int32_t n, int32_t ldb)
{
    return j < (n & ~1) ? (j >> 1) * 2 * ldb + (p >> 1) * 4 + (j & 1) * 2 + (p & 1) : j * ldb + p;
}

/* Any shape or alignment, one MAC at a time (the assembly needs k % 8 == 0, whole panels and
 * a word-aligned B with an even ldb; the schedule offers 4x2 only there). */
static void p4x2_rq_s16_any(MC_GEMM_RQREC_ARGS(int16_t))
{
    const int32_t m = params->m, n = params->n, k = params->k, ldb = params->ldb, ldy = params->ldy;
    const int32_t kp = (k + 1) & ~1, off = params->out_offset;

    for (int32_t j = 0; j < n; ++j)
        for (int32_t i = 0; i < m; ++i) {
            const int32_t *rec = rq + (i >> 2) * 12 + (i & 3);
            int32_t acc = rec[0], v;

            for (int32_t p = 0; p < k; ++p)
                acc += a[(i >> 2) * 4 * kp + (p >> 1) * 8 + (i & 3) * 2 + (p & 1)] * b[il_index(j, p, n, ldb)];
            v = mc_requant_ssat8(acc, rec[4], rec[8] + 1, off);
            v = v < params->act_min ? params->act_min : v;
            y[j * ldy + i] = (int8_t)(v > params->act_max ? params->act_max : v);
        }
}

typedef struct {
    const int16_t *col;     /* the pair's interleaved words */
    const int16_t *col8;    /* their end: col + 2k */
    int8_t *y;              /* column 2q's first panel outputs (column 2q+1's: ldy further) */
    int32_t lo4, hi4;       /* act_min / act_max in every byte */
    int32_t off2;           /* 1 + 2 * out_offset */
    int32_t ldy;
    int32_t *pad;           /* the caller's words for what the naked loop pushes (unread) */
} rq_pair_t;

/* One k-pair of both columns: one LDM of the pair's words (r8: column 2q, r9: 2q+1), two LDM
 * of two rows' weight words each, eight SMLAD. */
#define MC_P4X2_KPAIR                   \
    "ldmia lr!, {r8, r9}\n\t"           \
    "ldmia r12!, {r10, r11}\n\t"        \
    "smlad r0, r8, r10, r0\n\t"         \
    "smlad r1, r8, r11, r1\n\t"         \
    "smlad r4, r9, r10, r4\n\t"         \
    "smlad r5, r9, r11, r5\n\t"         \
    "ldmia r12!, {r10, r11}\n\t"        \
    "smlad r2, r8, r10, r2\n\t"         \
    "smlad r3, r8, r11, r3\n\t"         \
    "smlad r6, r9, r10, r6\n\t"         \
    "smlad r7, r9, r11, r7\n\t"

/* Panels rq .. rq_end of one pair of columns, weights from w. AAPCS: r0 = ctx, r1 = w,
 * r2 = rq, r3 = rq_end. In the loop every register is taken: r0-r3 column 2q's sums, r4-r7
 * column 2q+1's, r8/r9 the pair's words, r10/r11 weight words, r12 the weights, lr the pair;
 * so the loop's end is read from the stack (one LDR per 8 k). The epilogue requantizes both
 * columns with one load of the panel's multipliers and one of its shifts (as p4_rq_s16_column,
 * mc_requant_dsp.h). Stack (from sp): rq [0], rq_end [4], col [8], col8 [12], y [16], lo4 [20],
 * hi4 [24], off2 [28], ldy [32]; 72 bytes with the 36 pushed. */
/* Written once for both trip lengths: KPAIRS is the k loop's body, four k-pairs (8 k) or eight
 * (16 k, where k % 16 == 0: the loop's end test once per 16 k). */
#define P4X2_RQ_PAIR(NAME, KPAIRS)                                                                                     \
__attribute__((naked, noinline)) static void NAME(const rq_pair_t *ctx __attribute__((unused)),                        \
                                                              const int16_t *w __attribute__((unused)),                \
                                                              const int32_t *rq __attribute__((unused)),               \
                                                              const int32_t *rq_end __attribute__((unused)))           \
{                                                                                                                      \
    __asm__ volatile(                                                                                                  \
        "push {r4, r5, r6, r7, r8, r9, r10, r11, lr}\n\t"                                                              \
        "ldm r0, {r4, r5, r6, r7, r8, r9, r10}\n\t"  /* col, col8, y, lo4, hi4, off2, ldy */                           \
        "push {r2, r3, r4, r5, r6, r7, r8, r9, r10}\n\t"                                                               \
        "mov r12, r1\n\t"                                                                                              \
        "mov lr, r2\n\t"                                                                                               \
        "2:\n\t"                                                                                                       \
        "ldmia lr, {r4, r5, r6, r7}\n\t"             /* the panel's bias, for both columns */                          \
        "ldmia lr!, {r0, r1, r2, r3}\n\t"                                                                              \
        "str lr, [sp]\n\t"                                                                                             \
        "ldr lr, [sp, #8]\n\t"                                                                                         \
        "1:\n\t"                                                                                                       \
        KPAIRS                                                                                                         \
        "ldr r8, [sp, #12]\n\t"                                                                                        \
        "cmp lr, r8\n\t"                                                                                               \
        "bne 1b\n\t"                                                                                                   \
        "ldr lr, [sp]\n\t"                                                                                             \
        "ldmia lr!, {r8, r9, r10, r11}\n\t"          /* multipliers: SMMULR(2 * acc, mult) */                          \
        "lsl r0, r0, #1\n\t"                                                                                           \
        "smmulr r0, r0, r8\n\t"                                                                                        \
        "lsl r4, r4, #1\n\t"                                                                                           \
        "smmulr r4, r4, r8\n\t"                                                                                        \
        "lsl r1, r1, #1\n\t"                                                                                           \
        "smmulr r1, r1, r9\n\t"                                                                                        \
        "lsl r5, r5, #1\n\t"                                                                                           \
        "smmulr r5, r5, r9\n\t"                                                                                        \
        "lsl r2, r2, #1\n\t"                                                                                           \
        "smmulr r2, r2, r10\n\t"                                                                                       \
        "lsl r6, r6, #1\n\t"                                                                                           \
        "smmulr r6, r6, r10\n\t"                                                                                       \
        "lsl r3, r3, #1\n\t"                                                                                           \
        "smmulr r3, r3, r11\n\t"                                                                                       \
        "lsl r7, r7, #1\n\t"                                                                                           \
        "smmulr r7, r7, r11\n\t"                                                                                       \
        "ldmia lr!, {r8, r9, r10, r11}\n\t"          /* shifts minus one */                                            \
        "str lr, [sp]\n\t"                            /* the next panel's records */                                   \
        "ldr lr, [sp, #28]\n\t"                       /* off2 */                                                       \
        "sub r0, r0, r0, lsr #31\n\t"                                                                                  \
        "asr r0, r0, r8\n\t"                                                                                           \
        "add r0, r0, lr\n\t"                                                                                           \
        "ssat r0, #8, r0, asr #1\n\t"                                                                                  \
        "sub r4, r4, r4, lsr #31\n\t"                                                                                  \
        "asr r4, r4, r8\n\t"                                                                                           \
        "add r4, r4, lr\n\t"                                                                                           \
        "ssat r4, #8, r4, asr #1\n\t"                                                                                  \
        "sub r1, r1, r1, lsr #31\n\t"                                                                                  \
        "asr r1, r1, r9\n\t"                                                                                           \
        "add r1, r1, lr\n\t"                                                                                           \
        "ssat r1, #8, r1, asr #1\n\t"                                                                                  \
        "sub r5, r5, r5, lsr #31\n\t"                                                                                  \
        "asr r5, r5, r9\n\t"                                                                                           \
        "add r5, r5, lr\n\t"                                                                                           \
        "ssat r5, #8, r5, asr #1\n\t"                                                                                  \
        "sub r2, r2, r2, lsr #31\n\t"                                                                                  \
        "asr r2, r2, r10\n\t"                                                                                          \
        "add r2, r2, lr\n\t"                                                                                           \
        "ssat r2, #8, r2, asr #1\n\t"                                                                                  \
        "sub r6, r6, r6, lsr #31\n\t"                                                                                  \
        "asr r6, r6, r10\n\t"                                                                                          \
        "add r6, r6, lr\n\t"                                                                                           \
        "ssat r6, #8, r6, asr #1\n\t"                                                                                  \
        "sub r3, r3, r3, lsr #31\n\t"                                                                                  \
        "asr r3, r3, r11\n\t"                                                                                          \
        "add r3, r3, lr\n\t"                                                                                           \
        "ssat r3, #8, r3, asr #1\n\t"                                                                                  \
        "sub r7, r7, r7, lsr #31\n\t"                                                                                  \
        "asr r7, r7, r11\n\t"                                                                                          \
        "add r7, r7, lr\n\t"                                                                                           \
        "ssat r7, #8, r7, asr #1\n\t"                                                                                  \
        "pkhbt r8, r0, r2, lsl #16\n\t"               /* pack as mc_store4_s8: column 2q */                            \
        "pkhbt r9, r1, r3, lsl #16\n\t"                                                                                \
        "uxtb16 r8, r8\n\t"                                                                                            \
        "uxtb16 r9, r9\n\t"                                                                                            \
        "orr r8, r8, r9, lsl #8\n\t"                                                                                   \
        "pkhbt r9, r4, r6, lsl #16\n\t"               /* column 2q+1 */                                                \
        "pkhbt r10, r5, r7, lsl #16\n\t"                                                                               \
        "uxtb16 r9, r9\n\t"                                                                                            \
        "uxtb16 r10, r10\n\t"                                                                                          \
        "orr r9, r9, r10, lsl #8\n\t"                                                                                  \
        "ldrd r10, r11, [sp, #20]\n\t"                /* lo4, hi4 */                                                   \
        "ssub8 r0, r8, r10\n\t"                                                                                        \
        "sel r8, r8, r10\n\t"                                                                                          \
        "ssub8 r0, r11, r8\n\t"                                                                                        \
        "sel r8, r8, r11\n\t"                                                                                          \
        "ssub8 r0, r9, r10\n\t"                                                                                        \
        "sel r9, r9, r10\n\t"                                                                                          \
        "ssub8 r0, r11, r9\n\t"                                                                                        \
        "sel r9, r9, r11\n\t"                                                                                          \
        "ldr r10, [sp, #16]\n\t"                      /* y */                                                          \
        "ldr r11, [sp, #32]\n\t"                      /* ldy */                                                        \
        "str r9, [r10, r11]\n\t"                      /* column 2q+1's four outputs */                                 \
        "str r8, [r10], #4\n\t"                       /* column 2q's */                                                \
        "str r10, [sp, #16]\n\t"                                                                                       \
        "ldrd lr, r6, [sp]\n\t"                       /* records, rq_end */                                            \
        "cmp lr, r6\n\t"                                                                                               \
        "bne 2b\n\t"                                                                                                   \
        "add sp, sp, #36\n\t"                                                                                          \
        "pop {r4, r5, r6, r7, r8, r9, r10, r11, pc}\n\t");                                                             \
}

P4X2_RQ_PAIR(p4x2_rq_s16_pair, MC_P4X2_KPAIR MC_P4X2_KPAIR MC_P4X2_KPAIR MC_P4X2_KPAIR)
P4X2_RQ_PAIR(p4x2_rq_s16_pair16, MC_P4X2_KPAIR MC_P4X2_KPAIR MC_P4X2_KPAIR MC_P4X2_KPAIR
             MC_P4X2_KPAIR MC_P4X2_KPAIR MC_P4X2_KPAIR MC_P4X2_KPAIR)

/* gemm_tile "4x2": pairs of columns by p4x2_rq_s16_pair, an odd last column (row-major after
 * the pairs) by the 4x1 loop; chunks of RQ_CHUNK panels outermost as the default. */
void mc_gemm_p4x2_rq_dsp_s16(MC_GEMM_RQREC_ARGS(int16_t))
{
    const int32_t m = params->m, n = params->n, k = params->k, ldb = params->ldb, ldy = params->ldy;
    /* 18 words for the 72 bytes p4x2_rq_s16_pair keeps on the stack (and the 60
     * p4_rq_s16_column does), invisible to -fstack-usage in a naked function. */
    int32_t pad[18];
    rq_pair_t pair;
    rq_column_t ctx;

    if ((k & 7) != 0 || k == 0 || (m & 3) != 0 || m == 0 || ((uintptr_t)b & 3u) != 0 || (ldb & 1) != 0) {
        p4x2_rq_s16_any(y, a, b, rq, params);
        return;
    }
    pair.lo4 = ctx.lo4 = mc_bytes4(params->act_min);
    pair.hi4 = ctx.hi4 = mc_bytes4(params->act_max);
    pair.off2 = ctx.off2 = 1 + 2 * params->out_offset;
    pair.ldy = ldy;
    pair.pad = ctx.pad = pad;
    for (int32_t i0 = 0; i0 < m; i0 += 4 * RQ_CHUNK) {
        const int32_t rows = m - i0 < 4 * RQ_CHUNK ? m - i0 : 4 * RQ_CHUNK;
        const int32_t *rec = rq + i0 * 3, *rec_end = rq + (i0 + rows) * 3;

        for (int32_t j = 0; j + 2 <= n; j += 2) {
            pair.col = b + j * ldb;
            pair.col8 = pair.col + 2 * k;
            pair.y = y + j * ldy + i0;
            (k & 15 ? p4x2_rq_s16_pair : p4x2_rq_s16_pair16)(&pair, a + i0 * k, rec, rec_end);
        }
        if (n & 1) {
            ctx.col = b + (n - 1) * ldb;
            ctx.col8 = ctx.col + k;
            ctx.y = y + (n - 1) * ldy + i0;
            p4_rq_s16_column_k(&ctx, a + i0 * k, rec, rec_end, k);
        }
    }
}
