/* Depthwise micro-kernel (mc_depthwise.h), portable C: cores without the DSP extension
 * (Cortex-M0+/M3) and the host. */
#include "mc_depthwise.h"
#include "mc_requant.h"

void mc_depthwise_c_s8(MC_DEPTHWISE_ARGS)
{
    const int32_t channels = params->channels, kh = params->kh, kw = params->kw;
    const int32_t x_row = params->x_row, x_col = params->x_col, w_row = params->w_row, w_group = params->w_group;
    const int32_t out_offset = params->out_offset, act_min = params->act_min, act_max = params->act_max;

    for (int32_t c = 0; c < channels; ++c) {
        /* Where channel c sits in its packed group (mc_depthwise.h). */
        const int16_t *wc = w + (c / 4) * w_group + (c % 2) * 2 + (c % 4) / 2;
        const int8_t *xc = x + c;
        int32_t acc = bias[c];

        for (int32_t i = 0; i < kh; ++i) {
            for (int32_t j = 0; j < kw; ++j) {
                acc += (int32_t)xc[i * x_row + j * x_col] * wc[i * w_row + j * 4];
            }
        }
        acc = mc_mul_by_qm_pos_rshift(acc, mult[c], rshift[c]) + out_offset;
        acc = acc < act_min ? act_min : acc;
        y[c] = (int8_t)(acc > act_max ? act_max : acc);
    }
}
