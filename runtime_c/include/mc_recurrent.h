/* mc_recurrent.h: recurrent micro-kernels (LSTM, GRU, SVDF), bit-exact with TFLite's
 * reference kernels for int8 (LiteRT's integer 8x8_16 LSTM, EvalIntegerSVDF) and within
 * float32 rounding for float (TFLite's LstmStepFloat / EvalFloatSVDF, ONNX's GRU).
 *
 * Every kernel runs a whole sequence (time steps in the input's layout: [batch][time][...],
 * or [time][batch][...] with time_major) and updates its state arrays in place: they live
 * in the model's state buffer and carry over to the next inference (or, for a stateless
 * ONNX op, in scratch the generated code first fills with the initial state).
 *
 * Gates are stacked in TFLite's order: input, forget, cell, output (LSTM); ONNX's z, r, h
 * (GRU). Shapes come in `static const` parameter structs (flash), one per call site.
 * Scratch is supplied by the caller from the arena. */
#ifndef MC_RECURRENT_H
#define MC_RECURRENT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t batch, time, input, units;
    int32_t time_major;
} mc_lstm_params_t;

typedef struct {
    int32_t batch, time, input, units;
    int32_t time_major;
    int32_t cell_scale_log2;     /* the int16 cell state's scale is 2^cell_scale_log2 */
    int32_t hidden_multiplier;   /* tanh(c) * o (Q0.15 * Q0.15) to the int8 hidden state */
    int32_t hidden_shift;
    int32_t hidden_zero_point;
    int32_t cell_clip;           /* quantized; 0: no clipping */
} mc_lstm_s8_params_t;

typedef struct {
    int32_t batch, time, input, units;
    int32_t time_major;
    int32_t linear_before_reset;
} mc_gru_params_t;

typedef struct {
    int32_t batch, input, filters, memory, rank;
    int32_t activation;          /* 0 none, 1 relu, 2 relu6, 3 relu_n1_to_1 */
} mc_svdf_params_t;

typedef struct {
    int32_t batch, input, filters, memory, rank;
    int32_t input_zero_point, output_zero_point;
    int32_t scale_1_multiplier, scale_1_shift;   /* input * weights_feature -> state */
    int32_t scale_2_multiplier, scale_2_shift;   /* state * weights_time -> output */
} mc_svdf_s8_params_t;

/* w [4][units][input], r [4][units][units], b [4][units]; h, c [batch][units];
 * scratch [4][units]; cell_clip 0: none. */
void mc_lstm_f32(float *y, const float *x, const float *w, const float *r, const float *b, float *h, float *c,
                 float *scratch, float cell_clip, const mc_lstm_params_t *params);
/* int8 weights; input_bias [4][units] has -zp_in * rowsum(w) folded in, recurrent_bias
 * [4][units] is -zp_h * rowsum(r); gate_scales [4][4]: input multiplier, input shift,
 * recurrent multiplier, recurrent shift of each gate (to Q3.12); h int8, c int16;
 * scratch [4][units] int16. */
void mc_lstm_s8(int8_t *y, const int8_t *x, const int8_t *w, const int8_t *r, const int32_t *input_bias,
                const int32_t *recurrent_bias, const int32_t *gate_scales, int8_t *h, int16_t *c, int16_t *scratch,
                const mc_lstm_s8_params_t *params);
/* w [3][units][input], r [3][units][units], b [6][units] (input biases then recurrent ones);
 * h [batch][units]; scratch [4][units]. */
void mc_gru_f32(float *y, const float *x, const float *w, const float *r, const float *b, float *h, float *scratch,
                const mc_gru_params_t *params);
/* weights_feature [filters][input], weights_time [filters][memory], bias [filters/rank];
 * state [batch][filters][memory]; scratch [filters]. */
void mc_svdf_f32(float *y, const float *x, const float *wf, const float *wt, const float *bias, float *state,
                 float *scratch, const mc_svdf_params_t *params);
void mc_svdf_s8(int8_t *y, const int8_t *x, const int8_t *wf, const int16_t *wt, const int32_t *bias, int16_t *state,
                int32_t *scratch, const mc_svdf_s8_params_t *params);
/* TFLM's int8 variant: int8 weights_time and state, the new state entry saturated to int8. */
void mc_svdf_s8_s8state(int8_t *y, const int8_t *x, const int8_t *wf, const int8_t *wt, const int32_t *bias,
                        int8_t *state, int32_t *scratch, const mc_svdf_s8_params_t *params);

#ifdef __cplusplus
}
#endif

#endif /* MC_RECURRENT_H */
