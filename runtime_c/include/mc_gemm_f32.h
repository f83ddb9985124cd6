/* float32 GEMM micro-kernels with the bias and the activation clamp fused (microcompile).
 *
 * mc_gemm_p4_<clamp>fpu_f32: for j < n, i < m
 *
 *     acc = bias[i];  for p < k: acc = fmaf(a[i][p], b[j*ldb + p], acc)   (p in increasing order)
 *     y[j*ldy + i] = acc                                  mc_gemm_p4_fpu_f32
 *                    max(acc, act_min)                    mc_gemm_p4_min_fpu_f32 (ReLU)
 *                    min(max(acc, act_min), act_max)      mc_gemm_p4_minmax_fpu_f32 (ReLU6, ...)
 *
 * (the bounds a variant does not use are ignored). A (the weights, m x k) is packed in panels
 * of four rows: panel P holds rows 4P..4P+3 as k groups of four, a[(P*k + p)*4 + r] =
 * A[4P + r][p], zero rows padding m to a multiple of 4. B is row-major with row stride ldb
 * (the im2col columns, or a fully connected layer's input rows); y has row stride ldy. y must
 * not overlap b.
 *
 * Each sum is the bias followed by the k products in order, each fused into the sum (one
 * rounding per step): the order of the loops it replaces, one rounding fewer per step.
 * Written in portable C: `fmaf` is one VFMA.F32 on cores with an FPU (FPv4 and later), which
 * are the only ones the schedule calls it on (schedule/gemm_f32.py); elsewhere it would be a
 * library call. The clamp is a separate function per variant, chosen by the code generator,
 * so that its test costs nothing where the layer has no activation. */
#ifndef MC_GEMM_F32_H
#define MC_GEMM_F32_H

#include <stdint.h>

typedef struct mc_gemm_f32_params_t {
    int32_t m, n, k, ldb, ldy;
} mc_gemm_f32_params_t;

/* The register tile: four rows (one panel) by four columns, 16 sums in s-registers; each
 * loaded weight serves four columns and each loaded input four rows (8 loads per 16 MACs);
 * columns left over by four, and the rows of a last partial panel, in a 4x1 tile. */
void mc_gemm_p4_fpu_f32(float *y, const float *a, const float *b, const float *bias, float act_min, float act_max,
                        const mc_gemm_f32_params_t *params);
void mc_gemm_p4_min_fpu_f32(float *y, const float *a, const float *b, const float *bias, float act_min,
                            float act_max, const mc_gemm_f32_params_t *params);
void mc_gemm_p4_minmax_fpu_f32(float *y, const float *a, const float *b, const float *bias, float act_min,
                               float act_max, const mc_gemm_f32_params_t *params);

/* The same on Helium's floating-point vectors (kernels/mve/mc_gemm_f32_mve.c, MVE-F cores
 * only): a panel's four rows are one vector, four columns' sums four vectors, one VFMA
 * (vector by scalar) per column and k; the same sums in the same order, but with subnormals
 * flushed to zero (Helium's float instructions use the standard FPSCR value). */
void mc_gemm_p4_mve_f32(float *y, const float *a, const float *b, const float *bias, float act_min, float act_max,
                        const mc_gemm_f32_params_t *params);
void mc_gemm_p4_min_mve_f32(float *y, const float *a, const float *b, const float *bias, float act_min,
                            float act_max, const mc_gemm_f32_params_t *params);
void mc_gemm_p4_minmax_mve_f32(float *y, const float *a, const float *b, const float *bias, float act_min,
                               float act_max, const mc_gemm_f32_params_t *params);

/* dst[i] = src[i] for i < n: a run of an im2col copy (the channels of one tap), eight at a
 * time. dst and src do not overlap. */
void mc_copy_f32(float *dst, const float *src, int32_t n);
/* The same by 16-byte vectors (Helium cores). */
void mc_copy_mve_f32(float *dst, const float *src, int32_t n);

#endif
