/* mc_log_softmax.h: int8 log-softmax micro-kernel. */
#ifndef MC_LOG_SOFTMAX_H
#define MC_LOG_SOFTMAX_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* int8 log-softmax over the last axis of a [rows, depth] tensor, bit-exact with TFLite's
 * reference_integer_ops::LogSoftmax (gemmlowp fixed point). The output is quantized with
 * scale 16/256 and zero point 127.
 *
 * exp_table[k] is exp(-k * input_scale) as a Q12.19 summand for k = max - x in 0..255, and
 * 0 where -k is below the cutoff diff_min; it and every other parameter come from
 * microcompile/reference/elementwise.py (log_softmax_params) and ir/fixedpoint_log.exp_q12.
 * depth <= 4096 keeps the Q12.19 sum in range. */
typedef struct {
    int32_t rows, depth;           /* the tensor as [rows, depth]; log-softmax over depth */
    int32_t input_multiplier;      /* input scale in Q5.26 as a multiplier ... */
    int32_t input_left_shift;      /* ... and its left shift */
    int32_t reverse_multiplier;    /* the inverse scaling, for the cutoff ... */
    int32_t reverse_shift;         /* ... and its right shift */
    int32_t diff_min;              /* the smallest x - max that is not -128 */
} mc_log_softmax_params_t;

void mc_log_softmax_s8(const int8_t *input, int8_t *output, const int32_t *exp_table,
                       const mc_log_softmax_params_t *params);

#ifdef __cplusplus
}
#endif

#endif /* MC_LOG_SOFTMAX_H */
