/* mc_softmax.h: softmax micro-kernels. */
#ifndef MC_SOFTMAX_H
#define MC_SOFTMAX_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* int8 softmax over the last axis of a [rows, depth] tensor, bit-exact with TFLite's
 * reference_ops::Softmax (gemmlowp fixed-point exp, no lookup table). The output is
 * quantized with scale 1/256 and zero point -128. The parameters come from
 * microcompile/reference/qparams.py softmax_params (PreprocessSoftmaxScaling and
 * CalculateInputRadius, computed on the host). depth <= 4096 keeps the Q12.19 sum in range. */
typedef struct {
    int32_t rows, depth;           /* the tensor as [rows, depth]; softmax over depth */
    int32_t input_multiplier;      /* beta * input scale as a Q31 multiplier ... */
    int32_t input_left_shift;      /* ... and its left shift */
    int32_t diff_min;              /* x - max below this gives exp 0 (CalculateInputRadius) */
} mc_softmax_params_t;

void mc_softmax_s8(const int8_t *input, int8_t *output, const mc_softmax_params_t *params);

/* The same with int16 output (scale 1/65536, zero point -32768), TFLite's Softmax<int8_t,
 * int16_t>: the last rounding keeps 16 bits instead of 8. */
void mc_softmax_s8_s16(const int8_t *input, int16_t *output, const mc_softmax_params_t *params);

/* The same two with the exp looked up: exp_table[d] is the Q0.31 exp of the scaled difference
 * -d (d = 0..255, every difference two int8 values can have), the value the kernels above
 * compute, tabulated on the host for these parameters (1 KiB of flash). */
void mc_softmax_s8_table(const int8_t *input, int8_t *output, const int32_t *exp_table,
                         const mc_softmax_params_t *params);
void mc_softmax_s8_s16_table(const int8_t *input, int16_t *output, const int32_t *exp_table,
                             const mc_softmax_params_t *params);

#ifdef __cplusplus
}
#endif

#endif /* MC_SOFTMAX_H */
