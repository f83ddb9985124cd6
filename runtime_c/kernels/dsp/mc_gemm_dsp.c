/* GEMM micro-kernels (mc_gemm.h) for Armv7E-M cores with the DSP extension (Cortex-M4/M7/M33).
 * Copied into a project only when the board's core has DSP (boards/cores/<core>.toml).
 *
 * s16: both operands are int16 pairs, so one 32-bit load feeds SMLAD directly
 *      (2 MACs per instruction). A 2x2 tile costs 4 loads + 4 SMLAD per 2 k: 1 instr/MAC.
 * s8:  SXTB16 extracts bytes 0,2 and (after ROR 8) bytes 1,3 of a word as int16 pairs.
 *      Applying the same extraction to both operands pairs equal k, so no shuffle and no
 *      reordered weights are needed: x0*w0 + x2*w2 and x1*w1 + x3*w3. */
#include <arm_acle.h>
#include <string.h>

#include "mc_gemm.h"

/* An unaligned 32-bit load (LDR allows it on Armv7-M); memcpy compiles to one LDR. */
static inline int32_t ld32(const void *p)
{
    int32_t v;

    memcpy(&v, p, 4);
    return v;
}

/* SXTB16 of x rotated right by 8 (bytes 1 and 3), in one instruction: GCC 12 neither
 * offers __ror nor folds a rotate into SXTB16's operand. */
static inline int32_t sxtb16_ror8(int32_t x)
{
    int32_t r;

    __asm__("sxtb16 %0, %1, ror #8" : "=r"(r) : "r"(x));
    return r;
}

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

void mc_gemm_nt_dsp_s16(int32_t *c, const int16_t *a, const int16_t *b, int32_t m, int32_t n, int32_t k,
                        int32_t lda, int32_t ldb, int32_t ldc)
{
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

void mc_gemm_nt_dsp_s8(int32_t *c, const int8_t *a, const int8_t *b, int32_t m, int32_t n, int32_t k,
                       int32_t lda, int32_t ldb, int32_t ldc)
{
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
