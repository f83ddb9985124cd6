/* float32 GEMM micro-kernels with fused bias and clamp (mc_gemm_f32.h).
 *
 * Per full panel of four weight rows, the columns four at a time: 16 sums live in
 * s-registers while the k loop, unrolled by four, loads four weights (one panel group:
 * consecutive words) and four inputs (one per column) per step and issues 16 VFMA. On the
 * Cortex-M4 (gcc 12 -O2) the loop takes 103 instructions per 64 MACs. The variants differ
 * only in the clamp (`act`, a constant in each, so the tests fold away); a last partial
 * panel (m not a multiple of 4) and the columns left over by four take the 4x1 tile. */
#include <math.h>

#include "mc_gemm_f32.h"

/* inlined into each variant, where the clamp `act` is a constant (gcc, clang) */
#define MC_F32_INLINE static inline __attribute__((always_inline))

enum { MC_F32_MIN = 1, MC_F32_MAX = 2 };

typedef struct {
    float lo, hi;
} mc_f32_bounds_t;

MC_F32_INLINE float mc_f32_clamp(float v, mc_f32_bounds_t c, int32_t act)
{
    if (act & MC_F32_MIN)
        v = v < c.lo ? c.lo : v;
    if (act & MC_F32_MAX)
        v = v > c.hi ? c.hi : v;
    return v;
}

/* Four sums into y[0..3]. */
MC_F32_INLINE void mc_f32_store4(float *y, float c0, float c1, float c2, float c3, mc_f32_bounds_t c, int32_t act)
{
    y[0] = mc_f32_clamp(c0, c, act);
    y[1] = mc_f32_clamp(c1, c, act);
    y[2] = mc_f32_clamp(c2, c, act);
    y[3] = mc_f32_clamp(c3, c, act);
}

#define MC_F32_FMA4(c0, c1, c2, c3, x)                                                         \
    do {                                                                                       \
        c0 = fmaf(w0, x, c0);                                                                  \
        c1 = fmaf(w1, x, c1);                                                                  \
        c2 = fmaf(w2, x, c2);                                                                  \
        c3 = fmaf(w3, x, c3);                                                                  \
    } while (0)

/* One k step of the 4x1 tile: the panel group at w, the input x. */
#define MC_F32_STEP4X1(w, x)                                                                   \
    do {                                                                                       \
        const float w0 = (w)[0], w1 = (w)[1], w2 = (w)[2], w3 = (w)[3], xk = (x);             \
        MC_F32_FMA4(c0, c1, c2, c3, xk);                                                       \
    } while (0)

/* One k step of the 4x4 tile: the panel group at w, the inputs b0..b3 [q]. */
#define MC_F32_STEP4X4(w, q)                                                                   \
    do {                                                                                       \
        const float w0 = (w)[0], w1 = (w)[1], w2 = (w)[2], w3 = (w)[3];                       \
        const float x0 = b0[q], x1 = b1[q], x2 = b2[q], x3 = b3[q];                           \
        MC_F32_FMA4(c00, c01, c02, c03, x0);                                                   \
        MC_F32_FMA4(c10, c11, c12, c13, x1);                                                   \
        MC_F32_FMA4(c20, c21, c22, c23, x2);                                                   \
        MC_F32_FMA4(c30, c31, c32, c33, x3);                                                   \
    } while (0)

/* The 4x1 tile: rows i..i+rows-1 (the panel at `panel`, biases z) of columns j0..n-1. */
MC_F32_INLINE void mc_f32_cols4x1(float *y, const float *panel, const float *b, const float *z, int32_t rows,
                                 int32_t j0, const mc_gemm_f32_params_t *prm, mc_f32_bounds_t c, int32_t act)
{
    const int32_t n = prm->n, k = prm->k, ldb = prm->ldb, ldy = prm->ldy;

    for (int32_t j = j0; j < n; ++j) {
        const float *bj = b + j * ldb, *w = panel;
        float c0 = z[0], c1 = z[1], c2 = z[2], c3 = z[3];
        float *yj = y + j * ldy;

        int32_t p = 0;

        /* k unrolled by four: 16 weights at immediate offsets, one pointer step (a fully
         * connected layer's one input row runs only this tile) */
        for (; p + 4 <= k; p += 4) {
            MC_F32_STEP4X1(w, bj[p]);
            MC_F32_STEP4X1(w + 4, bj[p + 1]);
            MC_F32_STEP4X1(w + 8, bj[p + 2]);
            MC_F32_STEP4X1(w + 12, bj[p + 3]);
            w += 16;
        }
        for (; p < k; ++p) {
            MC_F32_STEP4X1(w, bj[p]);
            w += 4;
        }
        if (rows == 4) {
            mc_f32_store4(yj, c0, c1, c2, c3, c, act);
            continue;
        }
        yj[0] = mc_f32_clamp(c0, c, act);
        if (rows > 1)
            yj[1] = mc_f32_clamp(c1, c, act);
        if (rows > 2)
            yj[2] = mc_f32_clamp(c2, c, act);
    }
}

/* The whole call with the clamp `act` (a constant in each caller). */
MC_F32_INLINE void mc_gemm_f32_body(float *y, const float *a, const float *b, const float *bias, mc_f32_bounds_t c,
                                   const mc_gemm_f32_params_t *prm, int32_t act)
{
    const int32_t m = prm->m, n = prm->n, k = prm->k, ldb = prm->ldb, ldy = prm->ldy;
    const int32_t k4 = k & ~3;
    int32_t i = 0;

    for (; i + 4 <= m; i += 4) {
        const float *panel = a + i * k;
        const float z0 = bias[i], z1 = bias[i + 1], z2 = bias[i + 2], z3 = bias[i + 3];
        int32_t j = 0;

        for (; j + 4 <= n; j += 4) {
            const float *b0 = b + j * ldb, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
            const float *w = panel;
            float c00 = z0, c01 = z1, c02 = z2, c03 = z3, c10 = z0, c11 = z1, c12 = z2, c13 = z3;
            float c20 = z0, c21 = z1, c22 = z2, c23 = z3, c30 = z0, c31 = z1, c32 = z2, c33 = z3;
            int32_t p = 0;

            for (; p < k4; p += 4) {
                MC_F32_STEP4X4(w, 0);
                MC_F32_STEP4X4(w + 4, 1);
                MC_F32_STEP4X4(w + 8, 2);
                MC_F32_STEP4X4(w + 12, 3);
                w += 16;
                b0 += 4;
                b1 += 4;
                b2 += 4;
                b3 += 4;
            }
            for (; p < k; ++p) {
                MC_F32_STEP4X4(w, 0);
                w += 4;
                ++b0;
                ++b1;
                ++b2;
                ++b3;
            }
            float *yj = y + j * ldy + i;
            mc_f32_store4(yj, c00, c01, c02, c03, c, act);
            mc_f32_store4(yj + ldy, c10, c11, c12, c13, c, act);
            mc_f32_store4(yj + 2 * ldy, c20, c21, c22, c23, c, act);
            mc_f32_store4(yj + 3 * ldy, c30, c31, c32, c33, c, act);
        }
        if (j < n) {
            const float z[4] = {z0, z1, z2, z3};
            mc_f32_cols4x1(y + i, panel, b, z, 4, j, prm, c, act);
        }
    }
    if (i < m) {
        /* the last partial panel: its padding rows are zero and never stored */
        const int32_t rows = m - i;
        const float z[4] = {bias[i], rows > 1 ? bias[i + 1] : 0.0f, rows > 2 ? bias[i + 2] : 0.0f, 0.0f};
        mc_f32_cols4x1(y + i, a + i * k, b, z, rows, 0, prm, c, act);
    }
}

void mc_gemm_p4_fpu_f32(float *y, const float *a, const float *b, const float *bias, float act_min, float act_max,
                        const mc_gemm_f32_params_t *params)
{
    const mc_f32_bounds_t c = {act_min, act_max};

    mc_gemm_f32_body(y, a, b, bias, c, params, 0);
}

void mc_gemm_p4_min_fpu_f32(float *y, const float *a, const float *b, const float *bias, float act_min,
                            float act_max, const mc_gemm_f32_params_t *params)
{
    const mc_f32_bounds_t c = {act_min, act_max};

    mc_gemm_f32_body(y, a, b, bias, c, params, MC_F32_MIN);
}

void mc_gemm_p4_minmax_fpu_f32(float *y, const float *a, const float *b, const float *bias, float act_min,
                               float act_max, const mc_gemm_f32_params_t *params)
{
    const mc_f32_bounds_t c = {act_min, act_max};

    mc_gemm_f32_body(y, a, b, bias, c, params, MC_F32_MIN | MC_F32_MAX);
}

void mc_copy_f32(float *dst, const float *src, int32_t n)
{
    int32_t i = 0;

    for (; i + 8 <= n; i += 8) {
        const float v0 = src[i], v1 = src[i + 1], v2 = src[i + 2], v3 = src[i + 3];
        const float v4 = src[i + 4], v5 = src[i + 5], v6 = src[i + 6], v7 = src[i + 7];

        dst[i] = v0;
        dst[i + 1] = v1;
        dst[i + 2] = v2;
        dst[i + 3] = v3;
        dst[i + 4] = v4;
        dst[i + 5] = v5;
        dst[i + 6] = v6;
        dst[i + 7] = v7;
    }
    for (; i < n; ++i)
        dst[i] = src[i];
}
