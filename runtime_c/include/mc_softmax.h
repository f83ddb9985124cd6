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
 * microcompile/ir/qparams.py softmax_params (PreprocessSoftmaxScaling and
 * CalculateInputRadius, computed on the host). depth <= 4096 keeps the Q12.19 sum in range. */
void mc_softmax_s8(const int8_t *input, int8_t *output, int32_t rows, int32_t depth,
                   int32_t input_multiplier, int32_t input_left_shift, int32_t diff_min);

#ifdef __cplusplus
}
#endif

#endif /* MC_SOFTMAX_H */
