/* mc_gemm.h: int8/int16 GEMM micro-kernels ("nt": both operands row-major along k).
 *
 * Every variant computes, accumulating into c (which the caller initialises, e.g. with
 * the folded bias):
 *
 *   for j < n, i < m:   c[j*ldc + i] += sum_{p < k} a[i*lda + p] * b[j*ldb + p]
 *
 * a holds the m rows of weights (one per output channel), b the n columns (one per
 * output pixel: an input row, or an im2col column in scratch). The code generator
 * reaches these through the `tensorize` schedule primitive and picks the variant from the
 * core: `_c` is portable C (Cortex-M0+/M3, the host), `_dsp` uses the Armv7E-M SIMD
 * instructions (SMLAD, SXTB16) and is compiled only for cores that have them.
 * No alignment is required; no scratch is used. Sums must fit in int32 (the compiler
 * checks that bound for the folded bias). */
#ifndef MC_GEMM_H
#define MC_GEMM_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void mc_gemm_nt_c_s8(int32_t *c, const int8_t *a, const int8_t *b, int32_t m, int32_t n, int32_t k,
                     int32_t lda, int32_t ldb, int32_t ldc);
void mc_gemm_nt_c_s16(int32_t *c, const int16_t *a, const int16_t *b, int32_t m, int32_t n, int32_t k,
                      int32_t lda, int32_t ldb, int32_t ldc);
void mc_gemm_nt_dsp_s8(int32_t *c, const int8_t *a, const int8_t *b, int32_t m, int32_t n, int32_t k,
                       int32_t lda, int32_t ldb, int32_t ldc);
void mc_gemm_nt_dsp_s16(int32_t *c, const int16_t *a, const int16_t *b, int32_t m, int32_t n, int32_t k,
                        int32_t lda, int32_t ldb, int32_t ldc);

#ifdef __cplusplus
}
#endif

#endif /* MC_GEMM_H */
