/* Portable GEMM micro-kernels (mc_gemm.h) for cores without the DSP extension.
 * A 2x2 tile (two rows of a, two columns of b) loads each operand once per two
 * multiply-accumulates; a single MLA per MAC is the best such a core can do. */
#include "mc_gemm.h"

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
