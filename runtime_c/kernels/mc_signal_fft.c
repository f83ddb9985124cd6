/* TFLite Micro signal-library kernels (mc_signal_fft.h), portable C: SignalFftAutoScale,
 * SignalRfft int16 and SignalEnergy, bit-exact with TFLM.
 *
 * The RFFT is kissfft v130's kiss_fftr with FIXED_POINT=16, the code TFLM runs: a complex FFT
 * of fft_length/2 points over (even, odd) sample pairs, then kiss_fftr's split into the real
 * spectrum. kissfft recurses (kf_work); the butterflies of one stage are independent, so this
 * runs the same stages iteratively, deepest first, after placing the inputs where kf_work's
 * leaf copies put them. Every value is stored as int16 exactly where kissfft stores one
 * (kiss_fft_cpx temporaries included): the stores wrap and products round with sround, no
 * saturation, so intermediate overflow reproduces TFLM's. */
#include "mc_signal_fft.h"

/* kissfft's kiss_fft_cpx for FIXED_POINT=16. */
typedef struct {
    int16_t r, i;
} cpx16;

static cpx16 mk(int32_t r, int32_t i)
{
    cpx16 c;

    c.r = (int16_t)r;    /* kissfft's int16 store: wraps */
    c.i = (int16_t)i;
    return c;
}

static cpx16 at(const int16_t *b, int32_t e)
{
    return mk(b[2 * e], b[2 * e + 1]);
}

static void put(int16_t *b, int32_t e, cpx16 c)
{
    b[2 * e] = c.r;
    b[2 * e + 1] = c.i;
}

/* sround: a Q15 product rounded half up, truncated to int16. */
static int16_t sround(int32_t x)
{
    return (int16_t)((x + (1 << 14)) >> 15);
}

/* C_FIXDIV: divide by the radix as a Q15 multiply by SAMP_MAX / p. */
static cpx16 fixdiv(cpx16 c, int32_t p)
{
    return mk(sround(c.r * (32767 / p)), sround(c.i * (32767 / p)));
}

/* C_MUL; the int32 sum of two products of int16 by a twiddle (|w| <= 32767) cannot overflow. */
static cpx16 cmul(cpx16 a, cpx16 b)
{
    return mk(sround((int32_t)a.r * b.r - (int32_t)a.i * b.i), sround((int32_t)a.r * b.i + (int32_t)a.i * b.r));
}

static void bfly2(cpx16 *a)
{
    const cpx16 f = a[0], t = a[1];

    a[0] = mk(f.r + t.r, f.i + t.i);
    a[1] = mk(f.r - t.r, f.i - t.i);
}

static void bfly4(cpx16 *a)
{
    const cpx16 s5 = mk(a[0].r - a[2].r, a[0].i - a[2].i);
    const cpx16 f0 = mk(a[0].r + a[2].r, a[0].i + a[2].i);
    const cpx16 s3 = mk(a[1].r + a[3].r, a[1].i + a[3].i);
    const cpx16 s4 = mk(a[1].r - a[3].r, a[1].i - a[3].i);

    a[0] = mk(f0.r + s3.r, f0.i + s3.i);
    a[2] = mk(f0.r - s3.r, f0.i - s3.i);
    a[1] = mk(s5.r + s4.i, s5.i - s4.r);    /* forward transform */
    a[3] = mk(s5.r - s4.i, s5.i + s4.r);
}

static void bfly3(cpx16 *a, cpx16 epi3)
{
    const cpx16 s3 = mk(a[1].r + a[2].r, a[1].i + a[2].i);
    const cpx16 d = mk(a[1].r - a[2].r, a[1].i - a[2].i);
    const cpx16 s0 = mk(sround((int32_t)d.r * epi3.i), sround((int32_t)d.i * epi3.i));
    const cpx16 h = mk(a[0].r - (s3.r >> 1), a[0].i - (s3.i >> 1));    /* HALF_OF: an arithmetic shift */

    a[0] = mk(a[0].r + s3.r, a[0].i + s3.i);
    a[2] = mk(h.r + s0.i, h.i - s0.r);
    a[1] = mk(h.r - s0.i, h.i + s0.r);
}

static int16_t smul(int16_t a, int16_t b)
{
    return sround((int32_t)a * b);
}

static void bfly5(cpx16 *a, cpx16 ya, cpx16 yb)
{
    const cpx16 s0 = a[0];
    const cpx16 s7 = mk(a[1].r + a[4].r, a[1].i + a[4].i), s10 = mk(a[1].r - a[4].r, a[1].i - a[4].i);
    const cpx16 s8 = mk(a[2].r + a[3].r, a[2].i + a[3].i), s9 = mk(a[2].r - a[3].r, a[2].i - a[3].i);
    const cpx16 s5 = mk(s0.r + smul(s7.r, ya.r) + smul(s8.r, yb.r), s0.i + smul(s7.i, ya.r) + smul(s8.i, yb.r));
    const cpx16 s6 = mk(smul(s10.i, ya.i) + smul(s9.i, yb.i), -smul(s10.r, ya.i) - smul(s9.r, yb.i));
    const cpx16 s11 = mk(s0.r + smul(s7.r, yb.r) + smul(s8.r, ya.r), s0.i + smul(s7.i, yb.r) + smul(s8.i, ya.r));
    const cpx16 s12 = mk(-smul(s10.i, yb.i) + smul(s9.i, ya.i), smul(s10.r, yb.i) - smul(s9.r, ya.i));

    a[0] = mk(s0.r + s7.r + s8.r, s0.i + s7.i + s8.i);
    a[1] = mk(s5.r - s6.r, s5.i - s6.i);
    a[4] = mk(s5.r + s6.r, s5.i + s6.i);
    a[2] = mk(s11.r + s12.r, s11.i + s12.i);
    a[3] = mk(s11.r - s12.r, s11.i - s12.i);
}

/* One kissfft butterfly of radix p (kf_bfly2/3/4/5) over the p * m values at f. */
static void butterfly(int16_t *f, const int16_t *tw, int32_t fstride, int32_t p, int32_t m)
{
    int32_t u, j;

    for (u = 0; u < m; u++) {
        cpx16 a[5];

        for (j = 0; j < p; j++) {
            a[j] = fixdiv(at(f, u + j * m), p);
            if (j > 0)
                a[j] = cmul(a[j], at(tw, j * u * fstride));
        }
        if (p == 2)
            bfly2(a);
        else if (p == 3)
            bfly3(a, at(tw, fstride * m));
        else if (p == 4)
            bfly4(a);
        else
            bfly5(a, at(tw, fstride * m), at(tw, 2 * fstride * m));
        for (j = 0; j < p; j++)
            put(f, u + j * m, a[j]);
    }
}

/* Where kf_work's leaf copies take buffer entry j from: a mixed-radix digit reversal. */
static int32_t leaf_source(int32_t j, const int32_t *factors, int32_t stages)
{
    int32_t s, source = 0, stride = 1;

    for (s = 0; s < stages; s++) {
        const int32_t m = factors[2 * s + 1];

        source += (j / m) * stride;
        j %= m;
        stride *= factors[2 * s];
    }
    return source;
}

/* kiss_fftr: the complex FFT of the (even, odd) pairs, in y, then its real split in place
 * (entries k and ncfft - k are read before either is written; entry ncfft is new). */
static void rfft_row(int16_t *y, const int16_t *x, const int16_t *tw, const int16_t *super_tw,
                     const int32_t *factors, const mc_rfft_params_t *params)
{
    const int32_t ncfft = params->fft_length / 2, n = params->input_length;
    int32_t j, s, k;
    cpx16 dc;

    for (j = 0; j < ncfft; j++) {
        const int32_t e = 2 * leaf_source(j, factors, params->stages);    /* samples e, e + 1; zero padded */

        put(y, j, mk(e < n ? x[e] : 0, e + 1 < n ? x[e + 1] : 0));
    }
    for (s = params->stages - 1; s >= 0; s--) {
        const int32_t p = factors[2 * s], m = factors[2 * s + 1], fstride = ncfft / (p * m);

        for (j = 0; j < fstride; j++)
            butterfly(y + 2 * j * p * m, tw, fstride, p, m);
    }

    dc = fixdiv(at(y, 0), 2);
    put(y, 0, mk(dc.r + dc.i, 0));
    put(y, ncfft, mk(dc.r - dc.i, 0));
    for (k = 1; k <= ncfft / 2; k++) {
        const cpx16 fpk = fixdiv(at(y, k), 2), nk = at(y, ncfft - k);
        const cpx16 fpnk = fixdiv(mk(nk.r, -nk.i), 2);
        const cpx16 f1k = mk(fpk.r + fpnk.r, fpk.i + fpnk.i), f2k = mk(fpk.r - fpnk.r, fpk.i - fpnk.i);
        const cpx16 t = cmul(f2k, at(super_tw, k - 1));

        /* HALF_OF of the int sums (not of int16 stores); at k = ncfft/2 the second store wins */
        put(y, k, mk((f1k.r + t.r) >> 1, (f1k.i + t.i) >> 1));
        put(y, ncfft - k, mk((f1k.r - t.r) >> 1, (t.i - f1k.i) >> 1));
    }
}

void mc_rfft_s16(int16_t *y, const int16_t *x, const int16_t *twiddles, const int16_t *super_twiddles,
                 const int32_t *factors, const mc_rfft_params_t *params)
{
    int32_t r;

    for (r = 0; r < params->rows; r++)
        rfft_row(y + r * (params->fft_length + 2), x + r * params->input_length, twiddles, super_twiddles, factors,
                 params);
}

void mc_fft_auto_scale_s16(int16_t *y, int32_t *scale_bits, const int16_t *x, const mc_fft_auto_scale_params_t *params)
{
    int16_t max = 0;
    int32_t i, scale = 0;

    /* TFLM's MaxAbs16, int16 running maximum included: -(-32768) stores as -32768 */
    for (i = 0; i < params->size; i++) {
        const int16_t v = x[i];

        if (v > max)
            max = v;
        else if (-v > max)
            max = (int16_t)-v;
    }
    /* 15 - MostSignificantBit32(max); that is 32 for 0 and for a negative max (GCC builds), so 0 */
    if (max > 0) {
        int32_t m = max;

        for (scale = 15; m > 0; m >>= 1)
            scale--;
    }
    for (i = 0; i < params->size; i++)
        y[i] = (int16_t)(x[i] * ((int32_t)1 << scale));    /* wraps, as TFLM's int16 store */
    *scale_bits = scale;
}

void mc_energy_s16(uint32_t *y, const int16_t *x, const mc_energy_params_t *params)
{
    int32_t i;

    for (i = 0; i < params->length; i++) {
        const int32_t re = x[2 * i], im = x[2 * i + 1];

        /* each square <= 2^30; their sum can reach 2^31, which TFLM's int32 sum wraps to the same uint32 */
        y[i] = i < params->start_index || i >= params->end_index ? 0u : (uint32_t)(re * re) + (uint32_t)(im * im);
    }
}
