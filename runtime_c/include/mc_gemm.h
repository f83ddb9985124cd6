/* mc_gemm.h: int8/int16 GEMM micro-kernels ("nt": both operands row-major along k).
 *
 * Every variant computes, accumulating into c (which the caller initialises, e.g. with
 * the folded bias), with the shape in a parameter struct:
 *
 *   for j < n, i < m:   c[j*ldc + i] += sum_{p < k} a[i*lda + p] * b[j*ldb + p]
 *
 * The generated code passes the struct as a `static const` struct (flash, no RAM), one per call
 * site, so every field is named where it is set.
 *
 * a holds the m rows of weights (one per output channel), b the n columns (one per
 * output pixel: an input row, or an im2col column in scratch). The code generator
 * reaches these through the `tensorize` schedule primitive and picks the variant from the
 * core: `_c` is portable C (Cortex-M0+/M3, the host), `_dsp` uses the Armv7E-M SIMD
 * instructions (SMLAD, SXTB16) and is compiled only for cores that have them, `_mve` uses
 * Helium (VMLADAV on 16 int8 pairs) and is compiled only for Armv8.1-M cores with MVE.
 * No alignment is required; no scratch is used. Sums must fit in int32 (the compiler
 * checks that bound for the folded bias).
 *
 * mc_gemm_p4_dsp_s16 computes the same, but reads a packed at compile time in panels of four
 * rows (lda is ignored): with kp = k rounded up to even, row i's pair (a[i][2t], a[i][2t+1])
 * is at a[(i/4)*4*kp + t*8 + (i%4)*2], rows past m and the element past an odd k are zero.
 * mc_gemm_p4_dsp_s8 is the int8 twin with groups of four k: with kp = k rounded up to a
 * multiple of 4, a[i][4t..4t+3] is at a[(i/4)*4*kp + t*16 + (i%4)*4]. mc_gemm_s4.h has their
 * twins on the same panels packed as int4.
 * The panel base must be 4-byte aligned (LDM).
 *
 * The requantizing variants end the accumulation in registers and store int8, so no int32
 * tile exists at all (the caller's bias, multipliers and right shifts are per row):
 *
 *   for j < n, i < m:
 *     acc = bias[i] + sum_{p < k} a[i*lda + p] * b[j*ldb + p]
 *     y[j*ldy + i] = clamp(MultiplyByQuantizedMultiplier(acc, mult[i], -rshift[i]) + out_offset,
 *                          act_min, act_max)                  (TFLite double rounding)
 *
 * with mult >= 0, rshift >= 1 and |acc| < 2^30, which the code generator proves from the
 * weights (mc_requant.h's mc_mul_by_qm_pos_rshift). mc_gemm_rq_c_<dtype> and mc_gemm_rq_mve_s8
 * read a row-major (lda); mc_gemm_p4_rq_dsp_<dtype> read it packed in panels as above (lda
 * ignored). The int16 DSP ones (mc_gemm_p4_rq_dsp_s16, _s16_cols, mc_gemm_p4x2_rq_dsp_s16) take
 * bias, mult and rshift as one records array made at compile time (MC_GEMM_RQREC_ARGS), which
 * their assembly loops read as it is. mc_gemm_p4_rq_dsp_s16_cols computes the same as mc_gemm_p4_rq_dsp_s16 in another
 * loop order (columns outermost instead of chunks of eight panels; schedule knob gemm_loop_order).
 *
 * mc_gemm_p4x2_rq_dsp_s16 (schedule knob gemm_tile=4x2) computes the same on a B laid out
 * pair-interleaved: with ne = n rounded down to even, column j < ne's element p is at
 *   b[(j/2)*2*ldb + (p/2)*4 + (j%2)*2 + p%2]
 * (columns 2q and 2q+1 alternate by pairs of k, so one LDM fetches both), an odd last column
 * row-major at b[(n-1)*ldb + p]. mc_widen_pairs_dsp_s8_s16(dst, src, n) writes such a layout:
 * dst[(i/2)*4 + i%2] = src[i] for i < n.
 *
 * mc_gemm_p4_rq_away_dsp_s16 is mc_gemm_p4_rq_dsp_s16 with the requantization of LiteRT's int8
 * fully connected layers: single rounding, ties away from zero (mc_fixedpoint.h
 * mc_mul_by_qm_single_round_away), for t = 31 - shift >= 33. Its records are 16 words per panel
 * of four rows: bias[4], mult[4], then per row H' = 2^(t-33) + out_offset * 2^(t-32) and
 * sh = t - 32 (the output offset is in H'; params->out_offset is not read).
 *
 * mc_conv_rq_mve_s8 (Helium, kernels/mve/mc_gemm_conv_mve.c) runs a whole int8 NHWC
 * convolution (dilation 1 across) in blocks of `cols` output pixels: it copies a block's
 * windows into `col` (cols * k_p bytes of scratch, k_p = kh * kw * in_c rounded up to 16; a
 * filter row inside the input is one run of kw * in_c bytes, padded taps read the input zero
 * point), then runs every panel of four output channels over the block. Its weights are
 * w[oc][kh][kw][ic] as rows of k_p (zeros past kh * kw * in_c), packed in panels of four
 * output channels in groups of 16 (the p4 layout above with group 16; zeros pad out_c to a
 * multiple of 4). bias is the folded bias (bias - zp_in * sum(w)), so a padded tap reads
 * zp_in, as TFLite's. A block's windows are read before any of its outputs is written,
 * blocks in row-major order (the "window" in-place rule). */
#ifndef MC_GEMM_H
#define MC_GEMM_H

#include <stdint.h>

#include "mc_copy.h"   /* mc_widen_pairs_dsp_s8_s16, inline on DSP cores */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t m;    /* rows of a: output channels */
    int32_t n;    /* columns of b: output pixels (or input rows) */
    int32_t k;    /* the reduction depth */
    int32_t lda;  /* elements from one row of a to the next (ignored by the p4 variants) */
    int32_t ldb;  /* elements from one column of b to the next */
    int32_t ldc;  /* elements from one column of c to the next */
} mc_gemm_params_t;

/* The shape and output arithmetic of a requantizing call. */
typedef struct {
    int32_t m, n, k;               /* rows of a (output channels), columns of b (pixels), depth */
    int32_t lda;                   /* elements from one row of a to the next (row-major variants) */
    int32_t ldb;                   /* elements from one column of b to the next */
    int32_t ldy;                   /* int8 elements from one column of y to the next */
    int32_t out_offset;            /* output zero point */
    int32_t act_min, act_max;      /* the fused activation's clamp */
} mc_gemm_rq_params_t;

/* The geometry and output arithmetic of mc_conv_rq_mve_s8. */
typedef struct {
    int32_t batch, in_h, in_w, in_c, out_h, out_w, out_c;
    int32_t kh, kw, stride_h, stride_w, dil_h, pad_top, pad_left;
    int32_t k_p;                   /* kh * kw * in_c rounded up to a multiple of 16 */
    int32_t cols;                  /* output pixels per block */
    int32_t zp_in;                 /* the padding's value */
    int32_t out_offset, act_min, act_max;
} mc_conv_params_t;

#define MC_GEMM_RQ_ARGS(T)                                                                         \
    int8_t *y, const T *a, const T *b, const int32_t *bias, const int32_t *mult, const int32_t *rshift, \
        const mc_gemm_rq_params_t *params
/* The int16 DSP kernels read the output stage as records made at compile time: per panel of
 * four rows its bias[4], mult[4] and rshift[4] - 1 (12 words, three LDM; zeros for the rows
 * of a last partial panel), rq[12 * P + ...]. */
#define MC_GEMM_RQREC_ARGS(T) int8_t *y, const T *a, const T *b, const int32_t *rq, const mc_gemm_rq_params_t *params

void mc_gemm_nt_c_s8(int32_t *c, const int8_t *a, const int8_t *b, const mc_gemm_params_t *params);
void mc_gemm_nt_c_s16(int32_t *c, const int16_t *a, const int16_t *b, const mc_gemm_params_t *params);
void mc_gemm_nt_dsp_s8(int32_t *c, const int8_t *a, const int8_t *b, const mc_gemm_params_t *params);
void mc_gemm_nt_dsp_s16(int32_t *c, const int16_t *a, const int16_t *b, const mc_gemm_params_t *params);
void mc_gemm_p4_dsp_s16(int32_t *c, const int16_t *a, const int16_t *b, const mc_gemm_params_t *params);
void mc_gemm_p4_dsp_s8(int32_t *c, const int8_t *a, const int8_t *b, const mc_gemm_params_t *params);
void mc_gemm_nt_mve_s8(int32_t *c, const int8_t *a, const int8_t *b, const mc_gemm_params_t *params);
void mc_gemm_rq_c_s8(MC_GEMM_RQ_ARGS(int8_t));
void mc_gemm_rq_c_s16(MC_GEMM_RQ_ARGS(int16_t));
void mc_gemm_p4_rq_dsp_s16(MC_GEMM_RQREC_ARGS(int16_t));
void mc_gemm_p4_rq_dsp_s16_cols(MC_GEMM_RQREC_ARGS(int16_t));
void mc_gemm_p4x2_rq_dsp_s16(MC_GEMM_RQREC_ARGS(int16_t));
void mc_gemm_p4_rq_away_dsp_s16(MC_GEMM_RQREC_ARGS(int16_t));
void mc_gemm_p4_rq_dsp_s8(MC_GEMM_RQ_ARGS(int8_t));
void mc_gemm_rq_mve_s8(MC_GEMM_RQ_ARGS(int8_t));
void mc_gemm_p4_rq_mve_s8(MC_GEMM_RQ_ARGS(int8_t));
void mc_conv_rq_mve_s8(int8_t *y, const int8_t *x, const int8_t *w, const int32_t *bias, const int32_t *mult,
                       const int32_t *rshift, int8_t *col, const mc_conv_params_t *params);

#ifdef __cplusplus
}
#endif

#endif /* MC_GEMM_H */
