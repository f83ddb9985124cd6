/* Signal-library micro-kernels (mc_signal.h), portable C99, equal bit for bit to TFLite
 * Micro's SignalWindow, SignalFilterBank, SignalFilterBankSquareRoot,
 * SignalFilterBankSpectralSubtraction, SignalPCAN and SignalFilterBankLog (signal/src/ in
 * tflite-micro). TFLM's arithmetic is unsigned and wraps in places (uint32 shifts that drop
 * top bits, uint64 sums of sign-extended int16 weights, an int16 gain read as uint32, the
 * log's final uint32 scaling): the code below keeps the same types at every step so that it
 * wraps in the same places. Right shifts of negative int32 values are arithmetic, as TFLM
 * relies on too (gcc, clang and armcc all define them so). */
#include "mc_signal.h"

/* Bit length of x (TFLM's MostSignificantBit32), for x > 0. */
static int32_t bit_length32(uint32_t x)
{
#if defined(__GNUC__)
    return 32 - __builtin_clz(x);
#else
    int32_t n = 0;

    while (x) {
        x >>= 1;
        ++n;
    }
    return n;
#endif
}

void mc_window_s16(int16_t *y, const int16_t *x, const int16_t *weights, const mc_window_params_t *params)
{
    const int32_t size = params->size, shift = params->shift;
    int32_t f, i;

    for (f = 0; f < params->frames; ++f) {
        for (i = 0; i < size; ++i) {
            const int32_t raw = ((int32_t)x[i] * weights[i]) >> shift;   /* |x w| <= 2^30 */

            y[i] = (int16_t)(raw < -32768 ? -32768 : raw > 32767 ? 32767 : raw);
        }
        x += size;
        y += size;
    }
}

/* Channel c's sum is its weights over its band plus channel c-1's unweights over c-1's band
 * (TFLM's channel 0 is only the scratch that holds the first unweights). An int16 weight
 * converts to uint64 modulo 2^64, so a negative one wraps as in TFLM. */
void mc_filter_bank_u32(uint64_t *y, const uint32_t *x, const int16_t *weights, const int16_t *unweights,
                        const int16_t *channel_frequency_starts, const int16_t *channel_weight_starts,
                        const int16_t *channel_widths, const mc_filter_bank_params_t *params)
{
    uint64_t carry = 0;   /* the previous channel's unweighted sum */
    int32_t c, j;

    for (c = 0; c <= params->num_channels; ++c) {
        const uint32_t *xs = x + channel_frequency_starts[c];
        const int16_t *w = weights + channel_weight_starts[c];
        const int16_t *u = unweights + channel_weight_starts[c];
        const int32_t width = channel_widths[c];
        uint64_t acc_w = carry, acc_u = 0;

        for (j = 0; j < width; ++j) {
            acc_w += (uint64_t)w[j] * xs[j];
            acc_u += (uint64_t)u[j] * xs[j];
        }
        if (c > 0)
            y[c - 1] = acc_w;
        carry = acc_u;
    }
}

/* floor(sqrt(num)) by the bitwise method, then + 1 when the remainder exceeds the root
 * (round to nearest; no ties), unless that would overflow TFLM's result type: Sqrt32 returns
 * uint16 (the cap 0xFFFF applies to every num below 2^32, TFLM's 32-bit shortcut) and Sqrt64
 * uint32. No division: Cortex-M has no 64-bit divide. */
static uint32_t sqrt32_rounded(uint32_t num)
{
    uint32_t res = 0, bit = (uint32_t)1 << 30;

    while (bit > num)
        bit >>= 2;
    while (bit) {
        if (num >= res + bit) {
            num -= res + bit;
            res = (res >> 1) + bit;
        } else {
            res >>= 1;
        }
        bit >>= 2;
    }
    return num > res && res != 0xFFFFu ? res + 1 : res;
}

/* The same on 64 bits: a second copy because 64-bit shifts and compares take several
 * instructions each on Armv7-M, and most filter-bank sums fit 32 bits. */
static uint32_t sqrt64_rounded(uint64_t num)
{
    uint64_t res = 0, bit = (uint64_t)1 << 62;

    if ((num >> 32) == 0)
        return sqrt32_rounded((uint32_t)num);
    while (bit > num)
        bit >>= 2;
    while (bit) {
        if (num >= res + bit) {
            num -= res + bit;
            res = (res >> 1) + bit;
        } else {
            res >>= 1;
        }
        bit >>= 2;
    }
    return (uint32_t)(num > res && res != 0xFFFFFFFFu ? res + 1 : res);
}

void mc_filter_bank_sqrt_u64(uint32_t *y, const uint64_t *x, const int32_t *scale_bits,
                             const mc_filter_bank_sqrt_params_t *params)
{
    /* TFLM's shift by scale_bits is undefined outside 0..31; modulo 32 is what its x86 host
     * build does, and keeps this one defined. */
    const uint32_t shift = (uint32_t)*scale_bits & 31u;
    int32_t i;

    for (i = 0; i < params->channels; ++i)
        y[i] = sqrt64_rounded(x[i]) >> shift;
}

void mc_spectral_subtraction_u32(uint32_t *y, uint32_t *noise_out, const uint32_t *x, uint32_t *noise_state,
                                 const mc_spectral_subtraction_params_t *params)
{
    const uint32_t sb = (uint32_t)params->smoothing_bits, ssb = (uint32_t)params->spectral_subtraction_bits;
    const uint32_t min_remaining = (uint32_t)params->min_signal_remaining;
    int32_t i;

    for (i = 0; i < params->num_channels; ++i) {
        const int odd = i & 1;   /* odd channels take the alternate coefficients */
        const uint32_t smoothing = (uint32_t)(odd ? params->alternate_smoothing : params->smoothing);
        const uint32_t one_minus = (uint32_t)(odd ? params->alternate_one_minus_smoothing
                                                  : params->one_minus_smoothing);
        const uint32_t in = x[i];
        const uint32_t scaled = in << sb;   /* uint32: the top bits are lost, as in TFLM */
        uint32_t estimate = (uint32_t)(((uint64_t)scaled * smoothing + (uint64_t)noise_state[i] * one_minus) >> ssb);
        uint32_t floor_value, subtracted;

        noise_state[i] = estimate;
        if (estimate > scaled) {   /* never subtract more than the signal */
            estimate = scaled;
            if (params->clamping)
                noise_state[i] = estimate;
        }
        floor_value = (uint32_t)(((uint64_t)in * min_remaining) >> ssb);
        subtracted = (scaled - estimate) >> sb;
        noise_out[i] = noise_state[i];
        y[i] = subtracted > floor_value ? subtracted : floor_value;
    }
}

/* TFLM's WideDynamicFunction: the gain for a noise level x. Above 2, a quadratic in the 10
 * bits below x's leading one, its coefficients lut[4 msb - 6 + 0..2] (msb up to 32, so the
 * LUT has 125 entries). |r| stays below 2^31 at every step for any int16 LUT. */
static int16_t pcan_gain(uint32_t x, const int16_t *lut)
{
    int32_t interval, frac, r;

    if (x <= 2)
        return lut[x];
    interval = bit_length32(x);
    lut += 4 * interval - 6;
    frac = (int32_t)((interval < 11 ? x << (11 - interval) : x >> (interval - 11)) & 0x3FFu);
    r = ((int32_t)lut[2] * frac) >> 5;
    r = (r + (int32_t)lut[1] * 32) * frac;
    r = ((r + (1 << 14)) >> 15) + lut[0];
    return (int16_t)(((r + 32768) & 0xFFFF) - 32768);   /* TFLM's int16 return wraps */
}

void mc_pcan_u32(uint32_t *y, const uint32_t *x, const uint32_t *noise_estimate, const int16_t *gain_lut,
                 const mc_pcan_params_t *params)
{
    const uint32_t snr_shift = (uint32_t)params->snr_shift;
    int32_t i;

    for (i = 0; i < params->channels; ++i) {
        /* the int16 gain is used as uint32: a negative gain is 2^32 + g, as in TFLM */
        const uint32_t gain = (uint32_t)(int32_t)pcan_gain(noise_estimate[i], gain_lut);
        const uint32_t snr = (uint32_t)(((uint64_t)x[i] * gain) >> snr_shift);

        /* PcanShrink: snr has 12 fractional bits, the output 6: x^2/4 below 2, else x - 1 */
        y[i] = snr < (2u << 12) ? (snr * snr) >> 20 : (snr >> 6) - (1u << 6);
    }
}

/* TFLM's kLogLut (signal/src/log.cc): log2(1 + k/128) - k/128 in units of 2^-16, k = 0..128. */
static const uint16_t log_lut[129] = {
    0,    224,  442,  654,  861,  1063, 1259, 1450, 1636, 1817, 1992, 2163, 2329, 2490, 2646, 2797,
    2944, 3087, 3224, 3358, 3487, 3611, 3732, 3848, 3960, 4068, 4172, 4272, 4368, 4460, 4549, 4633,
    4714, 4791, 4864, 4934, 5001, 5063, 5123, 5178, 5231, 5280, 5326, 5368, 5408, 5444, 5477, 5507,
    5533, 5557, 5578, 5595, 5610, 5622, 5631, 5637, 5640, 5641, 5638, 5633, 5626, 5615, 5602, 5586,
    5568, 5547, 5524, 5498, 5470, 5439, 5406, 5370, 5332, 5291, 5249, 5203, 5156, 5106, 5054, 5000,
    4944, 4885, 4825, 4762, 4697, 4630, 4561, 4490, 4416, 4341, 4264, 4184, 4103, 4020, 3935, 3848,
    3759, 3668, 3575, 3481, 3384, 3286, 3186, 3084, 2981, 2875, 2768, 2659, 2549, 2437, 2323, 2207,
    2090, 1971, 1851, 1729, 1605, 1480, 1353, 1224, 1094, 963,  830,  695,  559,  421,  282,  142,
    0};

/* TFLM's Log32 for x > 1: log2(x) in Q16 (the integer part, plus the fraction corrected by
 * the table with linear interpolation), times ln 2 (45426 in Q16), times out_scale, rounded.
 * The last product is uint32 and wraps for a large out_scale, as TFLM's does. */
static uint32_t log32(uint32_t x, uint32_t out_scale)
{
    const int32_t integer = bit_length32(x) - 1;
    int32_t frac = (int32_t)(x - ((uint32_t)1 << integer));
    int32_t seg, c0, c1;
    uint32_t log2, loge;

    if (integer < 16)
        frac <<= 16 - integer;
    else
        frac >>= integer - 16;
    seg = frac >> 9;   /* 128 segments of 512 */
    c0 = log_lut[seg];
    c1 = log_lut[seg + 1];
    log2 = ((uint32_t)integer << 16) + (uint32_t)(frac + c0 + (((c1 - c0) * (frac - (seg << 9))) >> 16));
    loge = (uint32_t)(((uint64_t)45426u * log2 + 32768u) >> 16);
    return (out_scale * loge + 32768u) >> 16;
}

void mc_filter_bank_log_u32(int16_t *y, const uint32_t *x, const mc_filter_bank_log_params_t *params)
{
    const uint32_t bits = (uint32_t)params->input_correction_bits, scale = (uint32_t)params->output_scale;
    int32_t i;

    for (i = 0; i < params->channels; ++i) {
        const uint32_t scaled = x[i] << bits;   /* uint32: the top bits are lost, as in TFLM */
        const uint32_t value = scaled > 1 ? log32(scaled, scale) : 0;

        y[i] = (int16_t)(value < 32767u ? value : 32767u);
    }
}
