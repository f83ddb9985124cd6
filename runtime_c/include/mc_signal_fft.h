/* mc_signal_fft.h: three ops of TFLite Micro's signal library (the micro_speech audio front
 * end), bit-exact with TFLM's kernels: SignalFftAutoScale (tflm_signal::FftAutoScale),
 * SignalRfft with T=int16 (kissfft v130 FIXED_POINT=16 kiss_fftr, as TFLM patches and wraps
 * it) and SignalEnergy (tflm_signal::SpectrumToEnergy). Python semantics:
 * microcompile/ir/signal_fft.py.
 *
 * Integer only, no libm, no malloc: the RFFT's twiddles and factors are constant tables that
 * microcompile computes (signal_fft.rfft_tables), and it needs no scratch (it works in its
 * output row). Complex values are interleaved int16 (re, im). */
#ifndef MC_SIGNAL_FFT_H
#define MC_SIGNAL_FFT_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t size;            /* elements of x and y */
} mc_fft_auto_scale_params_t;

typedef struct {
    int32_t rows;            /* independent transforms (the input's leading dimensions) */
    int32_t input_length;    /* samples per input row, <= fft_length; the rest are zeros */
    int32_t fft_length;      /* even; fft_length/2 >= 2 a product of 2, 3, 5 */
    int32_t stages;          /* entries of the factors table (kissfft's radix, remaining length) */
} mc_rfft_params_t;

typedef struct {
    int32_t length;          /* complex inputs = outputs */
    int32_t start_index, end_index;
} mc_energy_params_t;

/* y[i] = x[i] << scale_bits (wrapping to int16), *scale_bits = max(0, 15 - bit length of
 * TFLM's MaxAbs16(x)), with MaxAbs16's int16 quirk for -32768. */
void mc_fft_auto_scale_s16(int16_t *y, int32_t *scale_bits, const int16_t *x, const mc_fft_auto_scale_params_t *params);
/* x [rows][input_length] -> y [rows][fft_length/2 + 1][2], the DFT / fft_length as kissfft
 * computes it. twiddles [fft_length/2][2], super_twiddles [fft_length/4][2], factors
 * [stages][2]. y must not overlap x. No scratch. */
void mc_rfft_s16(int16_t *y, const int16_t *x, const int16_t *twiddles, const int16_t *super_twiddles,
                 const int32_t *factors, const mc_rfft_params_t *params);
/* x [length][2] -> y [length]: re^2 + im^2 in [start_index, end_index), 0 elsewhere (TFLM
 * leaves those outputs unwritten). */
void mc_energy_s16(uint32_t *y, const int16_t *x, const mc_energy_params_t *params);

#ifdef __cplusplus
}
#endif

#endif /* MC_SIGNAL_FFT_H */
