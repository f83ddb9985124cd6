/* float32 depthwise convolution micro-kernels (microcompile): one output pixel, all its
 * channels, bias and activation clamp fused.
 *
 * mc_depthwise_<clamp>mve_f32(y, x, w, bias, act_min, act_max, &{channels, kh, kw, x_row,
 * x_col, w_row, w_col}): for c < channels
 *
 *     acc = bias[c];
 *     for i < kh: for j < kw: acc = fmaf(x[i*x_row + j*x_col + c], w[i*w_row + j*w_col + c], acc)
 *     y[c] = acc                                   mc_depthwise_mve_f32
 *            max(acc, act_min)                     mc_depthwise_min_mve_f32 (ReLU)
 *            min(max(acc, act_min), act_max)       mc_depthwise_minmax_mve_f32 (ReLU6, ...)
 *
 * The taps in the order of the loops they replace (i outer), each product fused into the sum
 * with one rounding. x is the window's first tap (a padded layer's regions pass the taps that
 * are inside the input: kh, kw and the first tap are the region's). Every channel's taps are
 * read before its output is written, and the channels go in increasing order, 16 at a time:
 * y may lie over x as the in-place planner allows it for the loops (memory/inplace.py).
 *
 * Helium only (kernels/mve/mc_depthwise_f32_mve.c, MVE-F cores: the Cortex-M55): the channels
 * are the vector lanes, so per tap and four channels one load of the input, one of the weights
 * and one VFMA; elsewhere the loops stay (schedule/depthwise_f32.py). */
#ifndef MC_DEPTHWISE_F32_H
#define MC_DEPTHWISE_F32_H

#include <stdint.h>

typedef struct mc_depthwise_f32_params_t {
    int32_t channels, kh, kw, x_row, x_col, w_row, w_col;
} mc_depthwise_f32_params_t;

void mc_depthwise_mve_f32(float *y, const float *x, const float *w, const float *bias, float act_min, float act_max,
                          const mc_depthwise_f32_params_t *params);
void mc_depthwise_min_mve_f32(float *y, const float *x, const float *w, const float *bias, float act_min,
                              float act_max, const mc_depthwise_f32_params_t *params);
void mc_depthwise_minmax_mve_f32(float *y, const float *x, const float *w, const float *bias, float act_min,
                                 float act_max, const mc_depthwise_f32_params_t *params);

#endif
