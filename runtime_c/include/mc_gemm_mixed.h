/* mc_gemm_mixed.h: the mixed-operand GEMM panel kernel: int16 weights, int8 columns.
 *
 * Computes what every mc_gemm.h kernel computes (accumulating into c):
 *
 *   for j < n, i < m:   c[j*ldc + i] += sum_{p < k} a[i][p] * b[j*ldb + p]
 *
 * with the int8 columns b read in place (an input row of a fully connected layer: no widened
 * copy, no scratch) and the weights a widened to int16 and packed at compile time so that
 * SXTB16 of one column word (bytes 0,2 and, rotated, bytes 1,3) meets ready-made weight pairs:
 * panels of four rows, groups of four k, and inside a group first the (k0, k2) pair of each of
 * the four rows, then their (k1, k3) pairs. With kp = k rounded up to a multiple of 4,
 *
 *   a[i][4t + q] is at a[(i/4)*4*kp + t*16 + (q%2)*8 + (i%4)*2 + q/2]
 *
 * rows past m and k past k are zero. lda is ignored; the panel base must be 4-byte aligned
 * (LDM). Compiled only for cores with the Armv7E-M DSP extension. */
#ifndef MC_GEMM_MIXED_H
#define MC_GEMM_MIXED_H

#include <stdint.h>

#include "mc_gemm.h"

#ifdef __cplusplus
extern "C" {
#endif

void mc_gemm_p4_dsp_s16_s8(int32_t *c, const int16_t *a, const int8_t *b, const mc_gemm_params_t *params);

#ifdef __cplusplus
}
#endif

#endif /* MC_GEMM_MIXED_H */
