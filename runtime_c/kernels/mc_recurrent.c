/* Recurrent micro-kernels (mc_recurrent.h), portable C.
 *
 * The int8 LSTM is LiteRT's EvalInteger8x8_16 for the standard cell: each gate is two
 * MatrixBatchVectorMultiplyAccumulate calls (int8 dot products requantized to int16 Q3.12
 * and summed with saturation), then gemmlowp's int16 fixed-point logistic or tanh; the cell
 * state is int16 with a power-of-two scale. The gemmlowp helpers below are FixedPoint<int16_t>
 * as gemmlowp computes it: constants are gemmlowp's int32 raw values divided by 2^16 with
 * rounding (written out here), products round (SaturatingRoundingDoublingHighMul). */
#include <math.h>
#include <string.h>

#include "mc_fixedpoint.h"
#include "mc_recurrent.h"

static int16_t sat16(int32_t v)
{
    return (int16_t)(v < -32768 ? -32768 : v > 32767 ? 32767 : v);
}

/* gemmlowp SaturatingRoundingDoublingHighMul on int16: round(a * b / 2^15), half away. */
static int16_t srdhm16(int16_t a, int16_t b)
{
    const int32_t ab = (int32_t)a * b;
    const int32_t nudge = ab >= 0 ? (1 << 14) : (1 - (1 << 14));

    if (a == -32768 && b == -32768)
        return 32767;
    return (int16_t)((ab + nudge) / (1 << 15));   /* C division truncates, as gemmlowp's */
}

/* gemmlowp SaturatingRoundingMultiplyByPOT<e> on int16. */
static int16_t sat_mul_pot16(int16_t x, int32_t e)
{
    if (e < 0)
        return (int16_t)mc_rounding_divide_by_pot(x, -e);
    if (e > 0) {
        const int32_t threshold = (1 << (15 - e)) - 1;

        if (x > threshold)
            return 32767;
        if (x < -threshold)
            return -32768;
        return (int16_t)(x * (1 << e));
    }
    return x;
}

/* exp(a) for a in [-1/4, 0), Q0.15 (a Taylor series around -1/8). */
static int16_t exp_quarter16(int16_t a)
{
    const int16_t constant_term = 28918;   /* exp(-1/8) */
    const int16_t one_third = 10923;
    const int16_t x = (int16_t)(a + (1 << 12));
    const int16_t x2 = srdhm16(x, x), x3 = srdhm16(x2, x), x4 = srdhm16(x2, x2);
    const int16_t x4_over_4 = sat_mul_pot16(x4, -2);
    const int16_t poly = sat_mul_pot16((int16_t)(srdhm16((int16_t)(x4_over_4 + x3), one_third) + x2), -1);

    return sat16(constant_term + srdhm16(constant_term, (int16_t)(x + poly)));   /* saturating for int16 */
}

/* exp(-2^k) for k = -2..4 in Q0.15: gemmlowp's barrel shifter. */
static const int16_t exp_barrel[7] = {25520, 19875, 12055, 4435, 600, 11, 0};

/* gemmlowp exp_on_negative_values on FixedPoint<int16_t, integer_bits>, result Q0.15. */
static int16_t exp_negative16(int16_t a, int32_t integer_bits)
{
    const int32_t frac = 15 - integer_bits;
    const int32_t quarter = 1 << (frac - 2);
    const int16_t amq = (int16_t)((a & (quarter - 1)) - quarter);
    const int16_t remainder = (int16_t)(amq - a);
    int16_t result = exp_quarter16(sat_mul_pot16(amq, integer_bits));
    int32_t k;

    for (k = -2; k <= 4; ++k) {
        if (integer_bits > k && (remainder & (1 << (frac + k))))
            result = srdhm16(result, exp_barrel[k + 2]);
    }
    if (integer_bits > 5 && a < -(1 << (36 - integer_bits - 16)))   /* below -32: zero */
        result = 0;
    return a == 0 ? 32767 : result;
}

/* gemmlowp's Newton-Raphson 1/(1+a) for a in [0, 1), before the final rescale: Q2.13. */
static int16_t reciprocal16(int16_t a)
{
    const int32_t s = a + 32767;
    const int16_t half_den = (int16_t)((s + (s >= 0 ? 1 : -1)) / 2);   /* RoundingHalfSum */
    int16_t x = (int16_t)(23130 + srdhm16(half_den, -15420));        /* 48/17 - 32/17 d */
    int32_t i;

    for (i = 0; i < 3; ++i) {
        const int16_t one_minus = (int16_t)((1 << 13) - srdhm16(half_den, x));

        x = (int16_t)(x + sat_mul_pot16(srdhm16(x, one_minus), 2));
    }
    return x;
}

/* gemmlowp logistic on FixedPoint<int16_t, 3> (Q3.12), result Q0.15. */
static int16_t logistic16(int16_t a)
{
    const int16_t abs_a = a > 0 ? a : (int16_t)-a;
    const int16_t r = sat_mul_pot16(reciprocal16(exp_negative16((int16_t)-abs_a, 3)), 1);

    if (a == 0)
        return 16384;
    return a > 0 ? r : (int16_t)(32767 - r);
}

/* gemmlowp tanh on FixedPoint<int16_t, integer_bits>, result Q0.15. */
static int16_t tanh16(int16_t a, int32_t integer_bits)
{
    const int16_t n = a < 0 ? a : (int16_t)-a;
    const int16_t t = sat_mul_pot16((int16_t)(reciprocal16(exp_negative16(n, integer_bits + 1)) - (1 << 13)), 2);

    if (a == 0)
        return 0;
    return a < 0 ? (int16_t)-t : t;
}

/* Offset of step t, batch b of a sequence with `width` features per step. */
static int32_t step_offset(int32_t t, int32_t b, int32_t batch, int32_t time, int32_t time_major, int32_t width)
{
    return (time_major ? t * batch + b : b * time + t) * width;
}

void mc_lstm_s8(int8_t *y, const int8_t *x, const int8_t *w, const int8_t *r, const int32_t *input_bias,
                const int32_t *recurrent_bias, const int32_t *gate_scales, int8_t *h, int16_t *c, int16_t *scratch,
                const mc_lstm_s8_params_t *p)
{
    const int32_t n_in = p->input, units = p->units;
    int32_t b, t, k, u, i;

    for (b = 0; b < p->batch; ++b) {
        int8_t *hb = h + b * units;
        int16_t *cb = c + b * units;

        for (t = 0; t < p->time; ++t) {
            const int8_t *xt = x + step_offset(t, b, p->batch, p->time, p->time_major, n_in);
            int8_t *yt = y + step_offset(t, b, p->batch, p->time, p->time_major, units);

            /* The four gates in Q3.12: input, forget, cell, output (from the previous h). */
            for (k = 0; k < 4; ++k) {
                const int32_t *sc = gate_scales + 4 * k;

                for (u = 0; u < units; ++u) {
                    const int8_t *wu = w + (k * units + u) * n_in, *ru = r + (k * units + u) * units;
                    int32_t acc = input_bias[k * units + u], rec = recurrent_bias[k * units + u];
                    int32_t g;

                    for (i = 0; i < n_in; ++i)
                        acc += xt[i] * wu[i];
                    for (i = 0; i < units; ++i)
                        rec += hb[i] * ru[i];
                    g = sat16(mc_mul_by_qm(acc, sc[0], sc[1]));
                    scratch[k * units + u] = sat16(mc_mul_by_qm(rec, sc[2], sc[3]) + g);
                }
            }
            for (u = 0; u < units; ++u) {
                const int16_t ig = logistic16(scratch[u]), fg = logistic16(scratch[units + u]);
                const int16_t cg = tanh16(scratch[2 * units + u], 3), og = logistic16(scratch[3 * units + u]);
                /* cell = f c >> 15 + i g >> (30 + cell scale), summed with saturation */
                const int16_t kept = (int16_t)mc_rounding_divide_by_pot((int32_t)fg * cb[u], 15);
                const int16_t added = (int16_t)mc_rounding_divide_by_pot((int32_t)ig * cg, 30 + p->cell_scale_log2);
                int32_t cell = sat16(kept + added), hv;

                if (p->cell_clip > 0)
                    cell = cell > p->cell_clip ? p->cell_clip : cell < -p->cell_clip ? -p->cell_clip : cell;
                cb[u] = (int16_t)cell;
                hv = mc_mul_by_qm((int32_t)og * tanh16(cb[u], 15 + p->cell_scale_log2), p->hidden_multiplier,
                                  p->hidden_shift) + p->hidden_zero_point;
                scratch[u] = (int16_t)(hv < -128 ? -128 : hv > 127 ? 127 : hv);   /* the new h, until all are done */
            }
            for (u = 0; u < units; ++u) {
                hb[u] = (int8_t)scratch[u];
                yt[u] = hb[u];
            }
        }
    }
}

static float sigmoidf(float v)
{
    return 1.0f / (1.0f + expf(-v));
}

void mc_lstm_f32(float *y, const float *x, const float *w, const float *r, const float *b, float *h, float *c,
                 float *scratch, float cell_clip, const mc_lstm_params_t *p)
{
    const int32_t n_in = p->input, units = p->units;
    int32_t bt, t, k, u, i;

    for (bt = 0; bt < p->batch; ++bt) {
        float *hb = h + bt * units, *cb = c + bt * units;

        for (t = 0; t < p->time; ++t) {
            const float *xt = x + step_offset(t, bt, p->batch, p->time, p->time_major, n_in);
            float *yt = y + step_offset(t, bt, p->batch, p->time, p->time_major, units);

            for (k = 0; k < 4; ++k)
                for (u = 0; u < units; ++u) {
                    const float *wu = w + (k * units + u) * n_in, *ru = r + (k * units + u) * units;
                    float acc = b[k * units + u];

                    for (i = 0; i < n_in; ++i)
                        acc += wu[i] * xt[i];
                    for (i = 0; i < units; ++i)
                        acc += ru[i] * hb[i];
                    scratch[k * units + u] = acc;
                }
            for (u = 0; u < units; ++u) {
                float cell = sigmoidf(scratch[units + u]) * cb[u] + sigmoidf(scratch[u]) * tanhf(scratch[2 * units + u]);

                if (cell_clip > 0.0f)
                    cell = cell > cell_clip ? cell_clip : cell < -cell_clip ? -cell_clip : cell;
                cb[u] = cell;
                scratch[u] = sigmoidf(scratch[3 * units + u]) * tanhf(cell);
            }
            for (u = 0; u < units; ++u) {
                hb[u] = scratch[u];
                yt[u] = scratch[u];
            }
        }
    }
}

void mc_gru_f32(float *y, const float *x, const float *w, const float *r, const float *b, float *h, float *scratch,
                const mc_gru_params_t *p)
{
    const int32_t n_in = p->input, units = p->units;
    float *z = scratch, *rg = scratch + units, *hp = scratch + 2 * units, *rh = scratch + 3 * units;
    int32_t bt, t, u, i;

    for (bt = 0; bt < p->batch; ++bt) {
        float *hb = h + bt * units;

        for (t = 0; t < p->time; ++t) {
            const float *xt = x + step_offset(t, bt, p->batch, p->time, p->time_major, n_in);
            float *yt = y + step_offset(t, bt, p->batch, p->time, p->time_major, units);

            memcpy(hp, hb, (size_t)units * sizeof(float));
            for (u = 0; u < units; ++u) {   /* update (z) and reset (r) gates */
                float az = b[u] + b[3 * units + u], ar = b[units + u] + b[4 * units + u];

                for (i = 0; i < n_in; ++i) {
                    az += w[u * n_in + i] * xt[i];
                    ar += w[(units + u) * n_in + i] * xt[i];
                }
                for (i = 0; i < units; ++i) {
                    az += r[u * units + i] * hp[i];
                    ar += r[(units + u) * units + i] * hp[i];
                }
                z[u] = sigmoidf(az);
                rg[u] = sigmoidf(ar);
            }
            if (!p->linear_before_reset)   /* the reset gate scales h before the matmul */
                for (u = 0; u < units; ++u)
                    rh[u] = rg[u] * hp[u];
            for (u = 0; u < units; ++u) {
                const float *wu = w + (2 * units + u) * n_in, *ru = r + (2 * units + u) * units;
                float ax = b[2 * units + u], ah = b[5 * units + u], hh;

                for (i = 0; i < n_in; ++i)
                    ax += wu[i] * xt[i];
                for (i = 0; i < units; ++i)
                    ah += ru[i] * (p->linear_before_reset ? hp[i] : rh[i]);
                hh = tanhf(p->linear_before_reset ? ax + rg[u] * ah : ax + ah);
                hb[u] = (1.0f - z[u]) * hh + z[u] * hp[u];
                yt[u] = hb[u];
            }
        }
    }
}

/* Drop each filter's oldest memory slot (TFLite shifts the whole state left by one; the
 * last slot of every filter is then overwritten with the new feature). */
#define MC_SHIFT_STATE(state, count) memmove((state), (state) + 1, ((size_t)(count) - 1) * sizeof(*(state)))

void mc_svdf_f32(float *y, const float *x, const float *wf, const float *wt, const float *bias, float *state,
                 float *scratch, const mc_svdf_params_t *p)
{
    const int32_t f_n = p->filters, m = p->memory, units = p->filters / p->rank;
    int32_t b, f, i, u, k;

    MC_SHIFT_STATE(state, p->batch * f_n * m);
    for (b = 0; b < p->batch; ++b) {
        float *sb = state + b * f_n * m;
        float *yb = y + b * units;

        for (f = 0; f < f_n; ++f) {
            float acc = 0.0f;

            for (i = 0; i < p->input; ++i)
                acc += wf[f * p->input + i] * x[b * p->input + i];
            sb[f * m + m - 1] = acc;
        }
        for (f = 0; f < f_n; ++f) {
            float acc = 0.0f;

            for (i = 0; i < m; ++i)
                acc += wt[f * m + i] * sb[f * m + i];
            scratch[f] = acc;
        }
        for (u = 0; u < units; ++u) {
            float v = 0.0f;

            for (k = 0; k < p->rank; ++k)
                v += scratch[u * p->rank + k];
            v += bias[u];
            if (p->activation != 0 && v < (p->activation == 3 ? -1.0f : 0.0f))
                v = p->activation == 3 ? -1.0f : 0.0f;
            if ((p->activation == 2 && v > 6.0f) || (p->activation == 3 && v > 1.0f))
                v = p->activation == 2 ? 6.0f : 1.0f;
            yb[u] = v;
        }
    }
}

/* The int8 SVDF body for state and weights_time of type STATE_T (int16_t, or TFLM's int8_t
 * variant), the new state entry saturated by SATURATE. */
#define MC_SVDF_S8_BODY(STATE_T, SATURATE)                                                              \
    const int32_t f_n = p->filters, m = p->memory, units = p->filters / p->rank;                       \
    int32_t b, f, i, u, k;                                                                              \
                                                                                                        \
    MC_SHIFT_STATE(state, p->batch * f_n * m);                                                          \
    for (b = 0; b < p->batch; ++b) {                                                                    \
        STATE_T *sb = state + b * f_n * m;                                                              \
        int8_t *yb = y + b * units;                                                                     \
                                                                                                        \
        for (f = 0; f < f_n; ++f) {                                                                     \
            int32_t acc = 0;                                                                            \
                                                                                                        \
            for (i = 0; i < p->input; ++i)                                                              \
                acc += wf[f * p->input + i] * (x[b * p->input + i] - p->input_zero_point);              \
            sb[f * m + m - 1] = SATURATE(mc_mul_by_qm(acc, p->scale_1_multiplier, p->scale_1_shift));  \
        }                                                                                               \
        /* int32 sums that wrap on overflow, as TFLite's (unsigned arithmetic keeps it defined) */    \
        for (f = 0; f < f_n; ++f) {                                                                     \
            uint32_t acc = 0;                                                                           \
                                                                                                        \
            for (i = 0; i < m; ++i)                                                                     \
                acc += (uint32_t)(wt[f * m + i] * sb[f * m + i]);                                       \
            scratch[f] = (int32_t)acc;                                                                  \
        }                                                                                               \
        for (u = 0; u < units; ++u) {                                                                   \
            uint32_t sum = (uint32_t)bias[u];                                                           \
            int32_t v;                                                                                  \
                                                                                                        \
            for (k = 0; k < p->rank; ++k)                                                               \
                sum += (uint32_t)scratch[u * p->rank + k];                                              \
            v = mc_mul_by_qm((int32_t)sum, p->scale_2_multiplier, p->scale_2_shift) + p->output_zero_point; \
            yb[u] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);                                      \
        }                                                                                               \
    }

static int8_t sat8(int32_t v) { return (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v); }

void mc_svdf_s8(int8_t *y, const int8_t *x, const int8_t *wf, const int16_t *wt, const int32_t *bias, int16_t *state,
                int32_t *scratch, const mc_svdf_s8_params_t *p)
{
    MC_SVDF_S8_BODY(int16_t, sat16)
}

void mc_svdf_s8_s8state(int8_t *y, const int8_t *x, const int8_t *wf, const int8_t *wt, const int32_t *bias,
                        int8_t *state, int32_t *scratch, const mc_svdf_s8_params_t *p)
{
    MC_SVDF_S8_BODY(int8_t, sat8)
}
