/* mc_s16.h: 16x8 micro-kernels (int16 activations, int8 weights, int64 biases), bit-exact
 * with TFLite's reference kernels (LiteRT BUILTIN_REF).
 *
 * Convolutions accumulate sum x * w + bias in int64 and requantize with TFLite's int64
 * MultiplyByQuantizedMultiplier: the 31-bit multiplier rounded to 15 bits, one rounding,
 * ties toward +inf (mc_mul_by_qm_s64). Fully connected requantizes in double, as LiteRT
 * does for int16: round-half-away(acc * (s_in * s_w / s_out)). int16 activations are
 * symmetric (zero point 0), so no input offset appears anywhere.
 *
 * Variants: `_c` is portable C; `_dsp` (kernels/dsp/mc_s16_dsp.c, Armv7E-M only) takes its
 * weights widened to int16 at compile time and multiplies int16 pairs with SMLALD (two
 * MACs into a 64-bit accumulator per instruction). Shapes and arithmetic come in `static
 * const` parameter structs (flash), one per call site. Nothing here allocates or needs
 * alignment; no scratch is used. */
#ifndef MC_S16_H
#define MC_S16_H

#include <math.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* conv2d / depthwise_conv2d / transpose_conv2d, NHWC. depthwise: output channel c reads
 * input channel c / depth_multiplier. transpose_conv2d: out[oy][ox] gathers every input
 * pixel (iy, ix) and tap (ky, kx) with iy * stride_h + ky - pad_top = oy (TFLite's scatter,
 * summed in the same integers). */
typedef struct {
    int32_t batch;
    int32_t in_h, in_w, in_c;
    int32_t out_h, out_w, out_c;
    int32_t k_h, k_w;
    int32_t stride_h, stride_w;
    int32_t dil_h, dil_w;
    int32_t pad_top, pad_left;
    int32_t depth_multiplier;
    int32_t act_min, act_max;
} mc_conv_s16_params_t;

/* fully_connected: y[r][u] = clamp(round(double(bias[u] + sum_d x[r][d] * (w[u][d] +
 * weights_offset)) * scale[u or 0])). per_channel selects scale[u] over scale[0]. */
typedef struct {
    int32_t rows, units, depth;
    int32_t weights_offset;
    int32_t per_channel;
    int32_t act_min, act_max;
} mc_fc_s16_params_t;

/* softmax over rows of `depth` (reference_ops::SoftmaxInt16); luts have 513 entries. */
typedef struct {
    int32_t rows, depth;
    int32_t input_multiplier, input_left_shift;
} mc_softmax_s16_params_t;

/* logistic / tanh (reference_integer_ops::Logistic / Tanh, int16): the input rescaled by
 * (x * input_multiplier + round) >> input_left_shift, then interpolated in TFLite's
 * 256-entry sigmoid table (sigmoid(k / 24) in Q0.16, mc_sigmoid_table_u16 in mc_s16.c). */
typedef struct {
    int32_t size;
    int32_t input_multiplier, input_left_shift;
} mc_sigmoid_s16_params_t;

void mc_conv_c_s16(int16_t *y, const int16_t *x, const int8_t *w, const int64_t *bias, const int32_t *mult,
                   const int32_t *shift, const mc_conv_s16_params_t *params);
void mc_depthwise_c_s16(int16_t *y, const int16_t *x, const int8_t *w, const int64_t *bias, const int32_t *mult,
                        const int32_t *shift, const mc_conv_s16_params_t *params);
void mc_transpose_conv_c_s16(int16_t *y, const int16_t *x, const int8_t *w, const int64_t *bias,
                             const int32_t *mult, const int32_t *shift, const mc_conv_s16_params_t *params);
void mc_fc_c_s16(int16_t *y, const int16_t *x, const int8_t *w, const int64_t *bias, const double *scale,
                 const mc_fc_s16_params_t *params);

/* The DSP variants read weights widened to int16 (same layout as the int8 ones). */
void mc_conv_dsp_s16(int16_t *y, const int16_t *x, const int16_t *w, const int64_t *bias, const int32_t *mult,
                     const int32_t *shift, const mc_conv_s16_params_t *params);
void mc_depthwise_dsp_s16(int16_t *y, const int16_t *x, const int16_t *w, const int64_t *bias,
                          const int32_t *mult, const int32_t *shift, const mc_conv_s16_params_t *params);
void mc_transpose_conv_dsp_s16(int16_t *y, const int16_t *x, const int16_t *w, const int64_t *bias,
                               const int32_t *mult, const int32_t *shift, const mc_conv_s16_params_t *params);
void mc_fc_dsp_s16(int16_t *y, const int16_t *x, const int16_t *w, const int64_t *bias, const double *scale,
                   const mc_fc_s16_params_t *params);

void mc_softmax_s16(const int16_t *x, int16_t *y, const int16_t *exp_lut, const int16_t *recip_lut,
                    const mc_softmax_s16_params_t *params);
void mc_logistic_s16(const int16_t *x, int16_t *y, const mc_sigmoid_s16_params_t *params);
void mc_tanh_s16(const int16_t *x, int16_t *y, const mc_sigmoid_s16_params_t *params);

/* TFLite's MultiplyByQuantizedMultiplier(int64_t x, ...): the multiplier reduced to 15 bits,
 * (x * reduced + 2^(14 - shift)) >> (15 - shift), truncated to int32 as TFLite's cast. */
static inline int32_t mc_mul_by_qm_s64(int64_t x, int32_t mult, int32_t shift)
{
    const int64_t reduced = mult < 0x7FFF0000 ? (mult + (1 << 15)) >> 16 : 0x7FFF;
    const int32_t total = 15 - shift;

    return (int32_t)((x * reduced + ((int64_t)1 << (total - 1))) >> total);
}

static inline int16_t mc_clamp_s16(int32_t v, int32_t lo, int32_t hi)
{
    return (int16_t)(v < lo ? lo : v > hi ? hi : v);
}

/* transpose_conv: the input row (or column) that reaches output row o through tap k,
 * iy * stride + k - pad = o, or -1 when none does. */
static inline int32_t mc_tconv_source_s16(int32_t o, int32_t k, int32_t stride, int32_t pad, int32_t in_size)
{
    const int32_t t = o + pad - k;

    if (t < 0 || t % stride != 0 || t / stride >= in_size)
        return -1;
    return t / stride;
}

/* fully_connected's output: round-half-away(acc * scale) clamped to [lo, hi]; the clamp in
 * double first, so the conversion never overflows. */
static inline int16_t mc_fc_output_s16(int64_t acc, double scale, int32_t lo, int32_t hi)
{
    double r = round((double)acc * scale);

    r = r < lo ? lo : r > hi ? hi : r;
    return (int16_t)(int32_t)r;
}

#ifdef __cplusplus
}
#endif

#endif /* MC_S16_H */
