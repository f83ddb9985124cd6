/* 16x8 micro-kernels (mc_s16.h) for Armv7E-M cores with the DSP extension (Cortex-M4/M7/M33),
 * copied into a project only when the board's core has DSP.
 *
 * The weights arrive widened to int16 (compile time), so one 32-bit load of two input
 * channels and one of two weights feed SMLALD: x0*w0 + x1*w1 into a 64-bit accumulator,
 * two MACs per instruction with no overflow to think about. Depthwise convolution reduces
 * over taps, not channels: it keeps two channels' accumulators and multiplies the bottom and
 * top halves separately (SMLALBB / SMLALTT). Results are those of the portable kernels
 * (the same integer sums), so mc_s16.c's comments apply. */
#include <string.h>

#include "mc_dsp.h"
#include "mc_s16.h"

/* acc += bottom(x) * bottom(y) and top(x) * top(y): ACLE has no 64-bit SMLALxy. */
static inline int64_t smlalbb(int64_t acc, int32_t x, int32_t y)
{
    __asm__("smlalbb %Q0, %R0, %1, %2" : "+r"(acc) : "r"(x), "r"(y));
    return acc;
}

static inline int64_t smlaltt(int64_t acc, int32_t x, int32_t y)
{
    __asm__("smlaltt %Q0, %R0, %1, %2" : "+r"(acc) : "r"(x), "r"(y));
    return acc;
}

/* Two dot products of length n sharing the loads of x: acc0 += x.w0, acc1 += x.w1. */
static void dot2(const int16_t *x, const int16_t *w0, const int16_t *w1, int32_t n, int64_t *acc0, int64_t *acc1)
{
    int64_t s0 = *acc0, s1 = *acc1;
    int32_t k = 0;

    for (; k + 2 <= n; k += 2) {
        const int32_t xv = ld32(x + k);

        s0 = __smlald(xv, ld32(w0 + k), s0);
        s1 = __smlald(xv, ld32(w1 + k), s1);
    }
    if (k < n) {
        s0 += (int32_t)x[k] * w0[k];
        s1 += (int32_t)x[k] * w1[k];
    }
    *acc0 = s0;
    *acc1 = s1;
}

static int64_t dot(const int16_t *x, const int16_t *w, int32_t n, int64_t acc)
{
    int32_t k = 0;

    for (; k + 2 <= n; k += 2)
        acc = __smlald(ld32(x + k), ld32(w + k), acc);
    if (k < n)
        acc += (int32_t)x[k] * w[k];
    return acc;
}

/* The in-bounds tap range [lo, hi) of a window starting at `origin` (dilation 1). */
static void tap_range(int32_t origin, int32_t k, int32_t size, int32_t *lo, int32_t *hi)
{
    *lo = origin < 0 ? -origin : 0;
    *hi = origin + k > size ? size - origin : k;
}

void mc_conv_dsp_s16(int16_t *y, const int16_t *x, const int16_t *w, const int64_t *bias, const int32_t *mult,
                     const int32_t *shift, const mc_conv_s16_params_t *p)
{
    const int32_t row = p->k_w * p->in_c;   /* weights of one filter row */
    int32_t b, oy, ox, oc, ky, kx;

    for (b = 0; b < p->batch; ++b)
        for (oy = 0; oy < p->out_h; ++oy)
            for (ox = 0; ox < p->out_w; ++ox) {
                const int32_t y0 = oy * p->stride_h - p->pad_top, x0 = ox * p->stride_w - p->pad_left;
                int16_t *out = y + ((b * p->out_h + oy) * p->out_w + ox) * p->out_c;
                int32_t kx_lo = 0, kx_hi = p->k_w;

                if (p->dil_w == 1)   /* one contiguous run of taps per filter row */
                    tap_range(x0, p->k_w, p->in_w, &kx_lo, &kx_hi);
                for (oc = 0; oc < p->out_c; oc += 2) {
                    const int32_t pair = oc + 1 < p->out_c;
                    const int16_t *w0 = w + oc * p->k_h * row, *w1 = pair ? w0 + p->k_h * row : w0;
                    int64_t acc0 = bias[oc], acc1 = pair ? bias[oc + 1] : 0;

                    for (ky = 0; ky < p->k_h; ++ky) {
                        const int32_t iy = y0 + ky * p->dil_h;
                        const int16_t *xr;

                        if (iy < 0 || iy >= p->in_h)
                            continue;
                        xr = x + ((b * p->in_h + iy) * p->in_w) * p->in_c;
                        if (p->dil_w == 1) {
                            if (kx_hi > kx_lo)
                                dot2(xr + (x0 + kx_lo) * p->in_c, w0 + ky * row + kx_lo * p->in_c,
                                     w1 + ky * row + kx_lo * p->in_c, (kx_hi - kx_lo) * p->in_c, &acc0, &acc1);
                            continue;
                        }
                        for (kx = 0; kx < p->k_w; ++kx) {
                            const int32_t ix = x0 + kx * p->dil_w;

                            if (ix >= 0 && ix < p->in_w)
                                dot2(xr + ix * p->in_c, w0 + ky * row + kx * p->in_c, w1 + ky * row + kx * p->in_c,
                                     p->in_c, &acc0, &acc1);
                        }
                    }
                    out[oc] = mc_clamp_s16(mc_mul_by_qm_s64(acc0, mult[oc], shift[oc]), p->act_min, p->act_max);
                    if (pair)
                        out[oc + 1] = mc_clamp_s16(mc_mul_by_qm_s64(acc1, mult[oc + 1], shift[oc + 1]), p->act_min,
                                                   p->act_max);
                }
            }
}

/* depth_multiplier 1 only (the code generator picks the portable kernel otherwise). */
/* The taps k in [0, k_n) with 0 <= o0 + k * dil < in_n: [*lo, *hi), found once per output
 * pixel instead of tested per tap and channel pair. */
static void dilated_tap_range(int32_t o0, int32_t dil, int32_t k_n, int32_t in_n, int32_t *lo, int32_t *hi)
{
    int32_t k0 = 0, k1 = k_n;

    while (k0 < k1 && o0 + k0 * dil < 0)
        ++k0;
    while (k1 > k0 && o0 + (k1 - 1) * dil >= in_n)
        --k1;
    *lo = k0;
    *hi = k1;
}

void mc_depthwise_dsp_s16(int16_t *y, const int16_t *x, const int16_t *w, const int64_t *bias,
                          const int32_t *mult, const int32_t *shift, const mc_conv_s16_params_t *p)
{
    const int32_t c = p->out_c, row_step = p->dil_h * p->in_w * c, col_step = p->dil_w * c;
    int32_t b, oy, ox, oc, ky, kx;

    for (b = 0; b < p->batch; ++b)
        for (oy = 0; oy < p->out_h; ++oy) {
            const int32_t y0 = oy * p->stride_h - p->pad_top;
            int32_t ky0, ky1;

            dilated_tap_range(y0, p->dil_h, p->k_h, p->in_h, &ky0, &ky1);
            for (ox = 0; ox < p->out_w; ++ox) {
                const int32_t x0 = ox * p->stride_w - p->pad_left;
                int16_t *out = y + ((b * p->out_h + oy) * p->out_w + ox) * c;
                const int16_t *x_tap, *w_tap;   /* tap (ky0, kx0), channel 0 */
                int32_t kx0, kx1;

                dilated_tap_range(x0, p->dil_w, p->k_w, p->in_w, &kx0, &kx1);
                x_tap = x + ((b * p->in_h + y0 + ky0 * p->dil_h) * p->in_w + x0 + kx0 * p->dil_w) * c;
                w_tap = w + (ky0 * p->k_w + kx0) * c;
                for (oc = 0; oc + 2 <= c; oc += 2) {
                    /* two channels: their inputs and weights are adjacent int16 pairs */
                    int64_t acc0 = bias[oc], acc1 = bias[oc + 1];
                    const int16_t *xr = x_tap + oc, *wr = w_tap + oc;

                    for (ky = ky0; ky < ky1; ++ky, xr += row_step, wr += p->k_w * c) {
                        const int16_t *xp = xr, *wp = wr;

                        for (kx = kx0; kx < kx1; ++kx, xp += col_step, wp += c) {
                            const int32_t xv = ld32(xp), wv = ld32(wp);

                            acc0 = smlalbb(acc0, xv, wv);
                            acc1 = smlaltt(acc1, xv, wv);
                        }
                    }
                    out[oc] = mc_clamp_s16(mc_mul_by_qm_s64(acc0, mult[oc], shift[oc]), p->act_min, p->act_max);
                    out[oc + 1] = mc_clamp_s16(mc_mul_by_qm_s64(acc1, mult[oc + 1], shift[oc + 1]), p->act_min,
                                               p->act_max);
                }
                if (oc < c) {   /* an odd last channel */
                    int64_t acc = bias[oc];
                    const int16_t *xr = x_tap + oc, *wr = w_tap + oc;

                    for (ky = ky0; ky < ky1; ++ky, xr += row_step, wr += p->k_w * c)
                        for (kx = 0; kx < kx1 - kx0; ++kx)
                            acc += (int32_t)xr[kx * col_step] * wr[kx * c];
                    out[oc] = mc_clamp_s16(mc_mul_by_qm_s64(acc, mult[oc], shift[oc]), p->act_min, p->act_max);
                }
            }
        }
}

void mc_transpose_conv_dsp_s16(int16_t *y, const int16_t *x, const int16_t *w, const int64_t *bias,
                               const int32_t *mult, const int32_t *shift, const mc_conv_s16_params_t *p)
{
    int32_t b, oy, ox, oc, ky, kx;

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

                            if (ix >= 0)
                                acc = dot(x + ((b * p->in_h + iy) * p->in_w + ix) * p->in_c,
                                          w + ((oc * p->k_h + ky) * p->k_w + kx) * p->in_c, p->in_c, acc);
                        }
                    }
                    y[((b * p->out_h + oy) * p->out_w + ox) * p->out_c + oc] =
                        mc_clamp_s16(mc_mul_by_qm_s64(acc, mult[oc], shift[oc]), p->act_min, p->act_max);
                }
}

/* weights_offset 0 only (symmetric weights; the code generator picks the portable kernel
 * otherwise). */
void mc_fc_dsp_s16(int16_t *y, const int16_t *x, const int16_t *w, const int64_t *bias, const double *scale,
                   const mc_fc_s16_params_t *p)
{
    int32_t r, u;

    for (r = 0; r < p->rows; ++r) {
        const int16_t *xr = x + r * p->depth;
        int16_t *yr = y + r * p->units;

        for (u = 0; u < p->units; u += 2) {
            const int32_t pair = u + 1 < p->units;
            const int16_t *w0 = w + u * p->depth;
            int64_t acc0 = bias[u], acc1 = pair ? bias[u + 1] : 0;

            dot2(xr, w0, pair ? w0 + p->depth : w0, p->depth, &acc0, &acc1);
            yr[u] = mc_fc_output_s16(acc0, scale[p->per_channel ? u : 0], p->act_min, p->act_max);
            if (pair)
                yr[u + 1] = mc_fc_output_s16(acc1, scale[p->per_channel ? u + 1 : 0], p->act_min, p->act_max);
        }
    }
}
