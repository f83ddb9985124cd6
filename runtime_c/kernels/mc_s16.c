/* 16x8 micro-kernels (mc_s16.h), portable C: conv2d, depthwise_conv2d, transpose_conv2d,
 * fully_connected, softmax, logistic and tanh on int16 activations, each the loop nest of
 * TFLite's reference kernel with the same integers (int64 accumulators). */

#include "mc_fixedpoint.h"
#include "mc_s16.h"

/* TFLite's sigmoid_table_uint16: sigmoid(k / 24) in Q0.16 (tuned entries, not a formula of
 * k; measured through LiteRT, see microcompile/reference/s16.py). Logistic and tanh share it:
 * tanh(x) = 2 sigmoid(2x) - 1. */
static const uint16_t mc_sigmoid_table_u16[256] = {
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535
};

void mc_conv_c_s16(int16_t *y, const int16_t *x, const int8_t *w, const int64_t *bias, const int32_t *mult,
                   const int32_t *shift, const mc_conv_s16_params_t *p)
{
    int32_t b, oy, ox, oc, ky, kx, ic;

    for (b = 0; b < p->batch; ++b)
        for (oy = 0; oy < p->out_h; ++oy)
            for (ox = 0; ox < p->out_w; ++ox)
                for (oc = 0; oc < p->out_c; ++oc) {
                    int64_t acc = bias[oc];

                    for (ky = 0; ky < p->k_h; ++ky) {
                        const int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;

                        if (iy < 0 || iy >= p->in_h)
                            continue;   /* TFLite skips padding taps */
                        for (kx = 0; kx < p->k_w; ++kx) {
                            const int32_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;
                            const int16_t *xp;
                            const int8_t *wp;

                            if (ix < 0 || ix >= p->in_w)
                                continue;
                            xp = x + ((b * p->in_h + iy) * p->in_w + ix) * p->in_c;
                            wp = w + ((oc * p->k_h + ky) * p->k_w + kx) * p->in_c;
                            for (ic = 0; ic < p->in_c; ++ic)
                                acc += (int32_t)xp[ic] * wp[ic];
                        }
                    }
                    y[((b * p->out_h + oy) * p->out_w + ox) * p->out_c + oc] =
                        mc_clamp_s16(mc_mul_by_qm_s64(acc, mult[oc], shift[oc]), p->act_min, p->act_max);
                }
}

void mc_depthwise_c_s16(int16_t *y, const int16_t *x, const int8_t *w, const int64_t *bias, const int32_t *mult,
                        const int32_t *shift, const mc_conv_s16_params_t *p)
{
    int32_t b, oy, ox, oc, ky, kx;

    for (b = 0; b < p->batch; ++b)
        for (oy = 0; oy < p->out_h; ++oy)
            for (ox = 0; ox < p->out_w; ++ox)
                for (oc = 0; oc < p->out_c; ++oc) {
                    const int32_t ic = oc / p->depth_multiplier;
                    int64_t acc = bias[oc];

                    for (ky = 0; ky < p->k_h; ++ky) {
                        const int32_t iy = oy * p->stride_h - p->pad_top + ky * p->dil_h;

                        if (iy < 0 || iy >= p->in_h)
                            continue;
                        for (kx = 0; kx < p->k_w; ++kx) {
                            const int32_t ix = ox * p->stride_w - p->pad_left + kx * p->dil_w;

                            if (ix < 0 || ix >= p->in_w)
                                continue;
                            /* weights [1][k_h][k_w][out_c] */
                            acc += (int32_t)x[((b * p->in_h + iy) * p->in_w + ix) * p->in_c + ic] *
                                   w[(ky * p->k_w + kx) * p->out_c + oc];
                        }
                    }
                    y[((b * p->out_h + oy) * p->out_w + ox) * p->out_c + oc] =
                        mc_clamp_s16(mc_mul_by_qm_s64(acc, mult[oc], shift[oc]), p->act_min, p->act_max);
                }
}

void mc_transpose_conv_c_s16(int16_t *y, const int16_t *x, const int8_t *w, const int64_t *bias,
                             const int32_t *mult, const int32_t *shift, const mc_conv_s16_params_t *p)
{
    int32_t b, oy, ox, oc, ky, kx, ic;

    for (b = 0; b < p->batch; ++b)
        for (oy = 0; oy < p->out_h; ++oy)
            for (ox = 0; ox < p->out_w; ++ox)
                for (oc = 0; oc < p->out_c; ++oc) {
                    int64_t acc = bias[oc];

                    for (ky = 0; ky < p->k_h; ++ky) {
                        const int32_t iy = mc_tconv_source_s16(oy, ky, p->stride_h, p->pad_top, p->in_h);

                        if (iy < 0)
                            continue;
                        for (kx = 0; kx < p->k_w; ++kx) {
                            const int32_t ix = mc_tconv_source_s16(ox, kx, p->stride_w, p->pad_left, p->in_w);
                            const int16_t *xp;
                            const int8_t *wp;

                            if (ix < 0)
                                continue;
                            xp = x + ((b * p->in_h + iy) * p->in_w + ix) * p->in_c;
                            wp = w + ((oc * p->k_h + ky) * p->k_w + kx) * p->in_c;
                            for (ic = 0; ic < p->in_c; ++ic)
                                acc += (int32_t)xp[ic] * wp[ic];
                        }
                    }
                    y[((b * p->out_h + oy) * p->out_w + ox) * p->out_c + oc] =
                        mc_clamp_s16(mc_mul_by_qm_s64(acc, mult[oc], shift[oc]), p->act_min, p->act_max);
                }
}

void mc_fc_c_s16(int16_t *y, const int16_t *x, const int8_t *w, const int64_t *bias, const double *scale,
                 const mc_fc_s16_params_t *p)
{
    int32_t r, u, d;

    for (r = 0; r < p->rows; ++r)
        for (u = 0; u < p->units; ++u) {
            const int16_t *xr = x + r * p->depth;
            const int8_t *wu = w + u * p->depth;
            int64_t acc = bias[u];

            for (d = 0; d < p->depth; ++d)
                acc += (int32_t)xr[d] * (wu[d] + p->weights_offset);
            y[r * p->units + u] = mc_fc_output_s16(acc, scale[p->per_channel ? u : 0], p->act_min, p->act_max);
        }
}

/* TFLite lut_lookup for int16: base at 256 + (v >> 7), plus the slope times v's low 7 bits. */
static int16_t lut_lookup(int16_t v, const int16_t *lut)
{
    const int32_t index = 256 + (v >> 7);
    const int32_t offset = v & 0x7f;
    const int16_t base = lut[index];
    const int16_t slope = (int16_t)(lut[index + 1] - lut[index]);

    return (int16_t)(base + ((slope * offset + 64) >> 7));
}

static int16_t sat16(int32_t v)
{
    return (int16_t)(v < -32768 ? -32768 : v > 32767 ? 32767 : v);
}

void mc_softmax_s16(const int16_t *x, int16_t *y, const int16_t *exp_lut, const int16_t *recip_lut,
                    const mc_softmax_s16_params_t *p)
{
    int32_t r, c;

    for (r = 0; r < p->rows; ++r) {
        const int16_t *xr = x + r * p->depth;
        int16_t *yr = y + r * p->depth;
        int16_t max_in_row = -32768;
        int32_t sum = 0;   /* Q16.15 */

        for (c = 0; c < p->depth; ++c)
            max_in_row = xr[c] > max_in_row ? xr[c] : max_in_row;
        /* exp(x - max) in Q0.15, cached in the output (TFLite's own trick). */
        for (c = 0; c < p->depth; ++c) {
            /* MultiplyByQuantizedMultiplier: [-65535, 0] -> [-10, 0] */
            const int32_t scaled = mc_mul_by_qm(xr[c] - max_in_row, p->input_multiplier, p->input_left_shift);

            yr[c] = lut_lookup(sat16(scaled + 32767), exp_lut);
            sum += yr[c];
        }
        {
            const int32_t headroom_plus_one = __builtin_clz((uint32_t)sum);
            const int32_t shifted = (int32_t)((((int64_t)sum << (headroom_plus_one - 1)) + (1 << 13)) >> 14);
            const int16_t recip = lut_lookup(sat16(shifted - ((1 << 15) + (1 << 16))), recip_lut);
            const int32_t right_shift = 31 - headroom_plus_one;

            for (c = 0; c < p->depth; ++c) {
                const int32_t v = (int32_t)(((int64_t)yr[c] * recip + ((int64_t)1 << (right_shift - 1))) >> right_shift);

                yr[c] = (int16_t)(v < 0 ? 0 : v > 32767 ? 32767 : v);
            }
        }
    }
}

static int32_t rescale_input(int16_t v, const mc_sigmoid_s16_params_t *p)
{
    const int32_t round = p->input_left_shift > 0 ? 1 << (p->input_left_shift - 1) : 0;

    return (v * p->input_multiplier + round) >> p->input_left_shift;
}

void mc_logistic_s16(const int16_t *x, int16_t *y, const mc_sigmoid_s16_params_t *p)
{
    int32_t i;

    for (i = 0; i < p->size; ++i) {
        const int32_t v = rescale_input(x[i], p);
        const uint32_t a = (uint32_t)(v < 0 ? -v : v);
        const uint32_t uh = a >> 9;   /* 7 bits of input conversion + the 3/4 of the scale */
        uint32_t result;

        if (uh >= 255) {
            result = 0x7FFFu << 10;
        } else {
            const uint32_t ua = mc_sigmoid_table_u16[uh], ub = mc_sigmoid_table_u16[uh + 1];

            result = (ua << 9) + (a & 0x1ffu) * (ub - ua);
        }
        result = v >= 0 ? result + (1u << 9) : (1u << (16 + 9)) - result + (1u << 9) - 1u;
        y[i] = (int16_t)(result >> 10);
    }
}

void mc_tanh_s16(const int16_t *x, int16_t *y, const mc_sigmoid_s16_params_t *p)
{
    int32_t i;

    for (i = 0; i < p->size; ++i) {
        const int32_t v = rescale_input(x[i], p);
        const uint32_t a = (uint32_t)(v < 0 ? -v : v);
        const uint32_t uh = a >> 8;
        int32_t result;

        if (uh >= 255) {
            result = 0xFFFF << 8;
        } else {
            const uint32_t ua = mc_sigmoid_table_u16[uh], ub = mc_sigmoid_table_u16[uh + 1];

            result = (int32_t)((ua << 8) + (a & 0xffu) * (ub - ua));
        }
        result = v >= 0 ? result - (1 << (14 + 9)) + (1 << (9 - 2)) : -result + (1 << (14 + 9)) + (1 << (9 - 2)) - 1;
        y[i] = (int16_t)(result >> (9 - 1));
    }
}
