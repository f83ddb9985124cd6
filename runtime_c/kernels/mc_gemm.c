/* Portable GEMM micro-kernels (mc_gemm.h) for cores without the DSP extension.
 * A 2x2 tile (two rows of a, two columns of b) loads each operand once per two
 * multiply-accumulates; a single MLA per MAC is the best such a core can do. */
#include "mc_gemm.h"
#include "mc_requant.h"

#define MC_GEMM_C_BODY(T)                                                                     \
    int32_t j = 0;                                                                            \
    for (; j + 2 <= n; j += 2) {                                                              \
        const T *b0 = b + j * ldb, *b1 = b0 + ldb;                                            \
        int32_t *c0 = c + j * ldc, *c1 = c0 + ldc;                                            \
        int32_t i = 0;                                                                        \
        for (; i + 2 <= m; i += 2) {                                                          \
            const T *a0 = a + i * lda, *a1 = a0 + lda;                                        \
            int32_t s00 = c0[i], s01 = c0[i + 1], s10 = c1[i], s11 = c1[i + 1];               \
            for (int32_t p = 0; p < k; ++p) {                                                 \
                const int32_t x0 = b0[p], x1 = b1[p], w0 = a0[p], w1 = a1[p];                 \
                s00 += x0 * w0;                                                               \
                s01 += x0 * w1;                                                               \
                s10 += x1 * w0;                                                               \
                s11 += x1 * w1;                                                               \
            }                                                                                 \
            c0[i] = s00;                                                                      \
            c0[i + 1] = s01;                                                                  \
            c1[i] = s10;                                                                      \
            c1[i + 1] = s11;                                                                  \
        }                                                                                     \
        if (i < m) {                                                                          \
            const T *a0 = a + i * lda;                                                        \
            int32_t s0 = c0[i], s1 = c1[i];                                                   \
            for (int32_t p = 0; p < k; ++p) {                                                 \
                s0 += b0[p] * a0[p];                                                          \
                s1 += b1[p] * a0[p];                                                          \
            }                                                                                 \
            c0[i] = s0;                                                                       \
            c1[i] = s1;                                                                       \
        }                                                                                     \
    }                                                                                         \
    if (j < n) {                                                                              \
        const T *b0 = b + j * ldb;                                                            \
        int32_t *c0 = c + j * ldc;                                                            \
        for (int32_t i = 0; i < m; ++i) {                                                     \
            const T *a0 = a + i * lda;                                                        \
            int32_t s = c0[i];                                                                \
            for (int32_t p = 0; p < k; ++p)                                                   \
                s += b0[p] * a0[p];                                                           \
            c0[i] = s;                                                                        \
        }                                                                                     \
    }

void mc_gemm_nt_c_s8(int32_t *c, const int8_t *a, const int8_t *b, const mc_gemm_params_t *params)
{
    const int32_t m = params->m, n = params->n, k = params->k;
    const int32_t lda = params->lda, ldb = params->ldb, ldc = params->ldc;

    MC_GEMM_C_BODY(int8_t)
}

void mc_gemm_nt_c_s16(int32_t *c, const int16_t *a, const int16_t *b, const mc_gemm_params_t *params)
{
    const int32_t m = params->m, n = params->n, k = params->k;
    const int32_t lda = params->lda, ldb = params->ldb, ldc = params->ldc;

    MC_GEMM_C_BODY(int16_t)
}

/* The requantizing variants (mc_gemm.h): the same 2x2 tiles, the four accumulators
 * requantized and stored as int8 as soon as their tile is done; odd rows and columns one
 * at a time. */
typedef struct {
    int32_t off, lo, hi;   /* output offset and clamp, copied out of params: an int8 store may alias them */
} mc_gemm_rq_out_t;

static inline int8_t mc_gemm_rq_store(int32_t acc, int32_t mult, int32_t rshift, mc_gemm_rq_out_t o)
{
    int32_t v = mc_mul_by_qm_pos_rshift(acc, mult, rshift) + o.off;

    v = v < o.lo ? o.lo : v;
    return (int8_t)(v > o.hi ? o.hi : v);
}

/* One column: y[i] for every row i, two rows per load of the column. */
#define MC_GEMM_RQ_C_COLUMN(T, B0, YJ)                                                        \
    {                                                                                         \
        int32_t i = 0;                                                                        \
        for (; i + 2 <= m; i += 2) {                                                          \
            const T *a0 = a + i * lda, *a1 = a0 + lda;                                        \
            int32_t s0 = bias[i], s1 = bias[i + 1];                                           \
            for (int32_t p = 0; p < k; ++p) {                                                 \
                const int32_t x = (B0)[p];                                                    \
                s0 += x * a0[p];                                                              \
                s1 += x * a1[p];                                                              \
            }                                                                                 \
            (YJ)[i] = mc_gemm_rq_store(s0, mult[i], rshift[i], out);                        \
            (YJ)[i + 1] = mc_gemm_rq_store(s1, mult[i + 1], rshift[i + 1], out);            \
        }                                                                                     \
        if (i < m) {                                                                          \
            const T *a0 = a + i * lda;                                                        \
            int32_t s = bias[i];                                                              \
            for (int32_t p = 0; p < k; ++p)                                                   \
                s += (B0)[p] * a0[p];                                                         \
            (YJ)[i] = mc_gemm_rq_store(s, mult[i], rshift[i], out);                         \
        }                                                                                     \
    }

#define MC_GEMM_RQ_C_BODY(T)                                                                  \
    const int32_t m = params->m, n = params->n, k = params->k;                                \
    const mc_gemm_rq_out_t out = {params->out_offset, params->act_min, params->act_max};      \
    const int32_t lda = params->lda, ldb = params->ldb, ldy = params->ldy;                   \
    int32_t j = 0;                                                                            \
    for (; j + 2 <= n; j += 2) {                                                              \
        const T *b0 = b + j * ldb, *b1 = b0 + ldb;                                            \
        int8_t *y0 = y + j * ldy, *y1 = y0 + ldy;                                             \
        int32_t i = 0;                                                                        \
        for (; i + 2 <= m; i += 2) {                                                          \
            const T *a0 = a + i * lda, *a1 = a0 + lda;                                        \
            int32_t s00 = bias[i], s01 = bias[i + 1], s10 = s00, s11 = s01;                   \
            for (int32_t p = 0; p < k; ++p) {                                                 \
                const int32_t x0 = b0[p], x1 = b1[p], w0 = a0[p], w1 = a1[p];                 \
                s00 += x0 * w0;                                                               \
                s01 += x0 * w1;                                                               \
                s10 += x1 * w0;                                                               \
                s11 += x1 * w1;                                                               \
            }                                                                                 \
            y0[i] = mc_gemm_rq_store(s00, mult[i], rshift[i], out);                         \
            y0[i + 1] = mc_gemm_rq_store(s01, mult[i + 1], rshift[i + 1], out);             \
            y1[i] = mc_gemm_rq_store(s10, mult[i], rshift[i], out);                         \
            y1[i + 1] = mc_gemm_rq_store(s11, mult[i + 1], rshift[i + 1], out);             \
        }                                                                                     \
        if (i < m) {                                                                          \
            const T *a0 = a + i * lda;                                                        \
            int32_t s0 = bias[i], s1 = bias[i];                                               \
            for (int32_t p = 0; p < k; ++p) {                                                 \
                s0 += b0[p] * a0[p];                                                          \
                s1 += b1[p] * a0[p];                                                          \
            }                                                                                 \
            y0[i] = mc_gemm_rq_store(s0, mult[i], rshift[i], out);                          \
            y1[i] = mc_gemm_rq_store(s1, mult[i], rshift[i], out);                          \
        }                                                                                     \
    }                                                                                         \
    if (j < n) {                                                                              \
        const T *b0 = b + j * ldb;                                                            \
        int8_t *y0 = y + j * ldy;                                                             \
        MC_GEMM_RQ_C_COLUMN(T, b0, y0)                                                        \
    }

void mc_gemm_rq_c_s8(MC_GEMM_RQ_ARGS(int8_t))
{
    MC_GEMM_RQ_C_BODY(int8_t)
}

void mc_gemm_rq_c_s16(MC_GEMM_RQ_ARGS(int16_t))
{
    MC_GEMM_RQ_C_BODY(int16_t)
}
