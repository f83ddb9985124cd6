/* mc_depthwise.h: int8 depthwise-convolution micro-kernels, one output pixel (all channels)
 * per call, with the requantization fused into the int8 store.
 *
 * For every channel c < channels (depth multiplier 1):
 *
 *   acc   = bias[c] + sum_{i < kh, j < kw} x[i*x_row + j*x_col + c] * W(c, i, j)
 *   y[c]  = clamp(MultiplyByQuantizedMultiplier(acc, mult[c], -rshift[c]) + out_offset,
 *                 act_min, act_max)                       (TFLite double rounding)
 *
 * W is packed on the host (microcompile/schedule/depthwise_intrin.py) as int16 in groups of
 * four channels, each group holding its taps one after another and, inside a tap, the
 * channels in the order c, c+2, c+1, c+3:
 *
 *   W(c, i, j) = w[(c / 4) * w_group + i * w_row + j * 4 + ((c % 2) * 2 + (c % 4) / 2)]
 *
 * That order is what SXTB16 makes of four input bytes (bytes 0,2 and, rotated, 1,3), so one
 * 32-bit weight load feeds SMLABB/SMLATT with no shuffle. A trailing group is zero-padded.
 * bias already holds -zp_in * sum(W) over the in-bounds taps, so padding costs nothing:
 * the caller passes the sub-window of in-bounds taps (kh x kw) and x at its first tap.
 * mult >= 0, rshift >= 1 (a multiplier below one half) and |acc| < 2^30, which the code
 * generator proves from the weights (mc_requant.h's mc_mul_by_qm_pos_rshift).
 *
 * `_c` is portable C (Cortex-M0+/M3, the host); `_dsp` uses the Armv7E-M DSP instructions
 * and is compiled only for cores that have them; `_mve` uses Helium (four channels per vector)
 * and is compiled only for Armv8.1-M cores with MVE. `_<kh>x<kw>_` variants are the same
 * function with the window fixed at compile time (fully unrolled taps) for a filter 3
 * wide (w_row == 12, ignored); the code generator picks one from the sub-window, and the
 * generic one otherwise.
 *
 * mc_depthwise_layer_mve_s8 (Helium, kernels/mve/mc_depthwise_layer_mve.c) runs a whole int8
 * 3x3 depthwise layer (depth multiplier 1, dilation 1, stride 1 or 2 across) on the folded bias
 * (bias - zp_in * sum(w), so a padded tap reads zp_in) and the model's int8 weights packed in
 * groups of four channels: w[g][t][u][4] = filter[t][u][4g..4g+4) (zeros past the channels),
 * and per group a record rq[g] = bias[4], mult[4], -rshift[4] (int32; zeros past the channels).
 * For each output row it copies the 3 input rows the row needs into `rows` (3 * padded_w *
 * 4 bytes per group of four channels of a pass of `block` channels, the padding set to zp_in),
 * then computes four output pixels by four channels at a time. A row's inputs are all read
 * before its outputs are written, rows top to bottom: the "window" in-place rule holds. */
#ifndef MC_DEPTHWISE_H
#define MC_DEPTHWISE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The shape and output arithmetic of one call, a `static const` struct in flash (one per
 * call site in the generated code, no RAM). */
typedef struct {
    int32_t channels;              /* output channels of the pixel (depth multiplier 1) */
    int32_t kh, kw;                /* the in-bounds sub-window (ignored by the fixed variants) */
    int32_t x_row, x_col;          /* int8 elements from one input row / column to the next */
    int32_t w_row;                 /* int16 elements from one filter row to the next (packed) */
    int32_t w_group;               /* int16 elements from one group of four channels to the next */
    int32_t out_offset;            /* output zero point */
    int32_t act_min, act_max;      /* the fused activation's clamp */
} mc_depthwise_params_t;

typedef struct {
    int32_t batch, channels, in_h, in_w, out_h, out_w, kh, kw;
    int32_t stride_h, stride_w, dil_h, dil_w, pad_top, pad_left;
    int32_t padded_w;              /* columns of a copied row: the input's and its padding */
    int32_t zp_in, out_offset, act_min, act_max;
    int32_t block;                 /* channels per pass (a multiple of 4; 0 or >= channels: all) */
} mc_depthwise_layer_params_t;

void mc_depthwise_layer_mve_s8(int8_t *y, const int8_t *x, const int8_t *w, const int32_t *rq, int8_t *rows,
                               const mc_depthwise_layer_params_t *params);

#define MC_DEPTHWISE_ARGS                                                                          \
    int8_t *y, const int8_t *x, const int16_t *w, const int32_t *bias, const int32_t *mult,         \
        const int32_t *rshift, const mc_depthwise_params_t *params

void mc_depthwise_c_s8(MC_DEPTHWISE_ARGS);
void mc_depthwise_dsp_s8(MC_DEPTHWISE_ARGS);
void mc_depthwise_3x3_dsp_s8(MC_DEPTHWISE_ARGS);
void mc_depthwise_2x3_dsp_s8(MC_DEPTHWISE_ARGS);
void mc_depthwise_3x2_dsp_s8(MC_DEPTHWISE_ARGS);
void mc_depthwise_2x2_dsp_s8(MC_DEPTHWISE_ARGS);
/* The DSP fixed-window kernels with the output arithmetic of each group of four channels c..c+3
 * as one record of 12 int32 (rq + (c / 4) * 12): bias[4], mult[4], rshift[4] - 1 (a partial
 * last group zero-padded); bias/mult/rshift of MC_DEPTHWISE_ARGS are not passed. */
#define MC_DEPTHWISE_RQ_ARGS                                                                       \
    int8_t *y, const int8_t *x, const int16_t *w, const int32_t *rq, const mc_depthwise_params_t *params

void mc_depthwise_3x3_dsp_rq_s8(MC_DEPTHWISE_RQ_ARGS);
void mc_depthwise_2x3_dsp_rq_s8(MC_DEPTHWISE_RQ_ARGS);
void mc_depthwise_3x2_dsp_rq_s8(MC_DEPTHWISE_RQ_ARGS);
void mc_depthwise_2x2_dsp_rq_s8(MC_DEPTHWISE_RQ_ARGS);
/* A whole 3x3 layer (depth multiplier 1, stride 1 or 2 across, any stride down and padding),
 * NHWC, one output row at a time, `block` channels at a time (runtime_c/kernels/dsp/
 * mc_depthwise_rows_dsp.c): rec holds one record of 10 int32 per channel
 * (microcompile/tir/intrinsics_depthwise.py, rows_records), scratch 3 * block * pairs + ceil(block / 4)
 * words.
 * DSP cores only. */
typedef struct {
    int32_t batch, channels;
    int32_t in_h, in_w, out_h, out_w;
    int32_t stride_h, stride_w;
    int32_t pad_top, pad_left;     /* padding before the first input row / column */
    int32_t pairs;                 /* int16 column pairs per padded input row */
    int32_t zp_in;                 /* what a padded tap reads */
    int32_t act_min, act_max;
    int32_t block;                 /* channels per pass (the ring holds one block) */
} mc_depthwise_rows_params_t;

void mc_depthwise_3x3_rows_dsp_s8(int8_t *y, const int8_t *x, const int32_t *rec, int32_t *scratch,
                                  const mc_depthwise_rows_params_t *params);
void mc_depthwise_mve_s8(MC_DEPTHWISE_ARGS);
void mc_depthwise_3x3_mve_s8(MC_DEPTHWISE_ARGS);
void mc_depthwise_2x3_mve_s8(MC_DEPTHWISE_ARGS);
void mc_depthwise_3x2_mve_s8(MC_DEPTHWISE_ARGS);
void mc_depthwise_2x2_mve_s8(MC_DEPTHWISE_ARGS);

#ifdef __cplusplus
}
#endif

#endif /* MC_DEPTHWISE_H */
