/* mc_signal.h: TFLite Micro's signal-library ops of the audio front end (micro_speech's
 * audio preprocessor), bit-exact with TFLM's kernels:
 *
 *   mc_window_s16                 SignalWindow                    (signal/src/window.cc)
 *   mc_filter_bank_u32            SignalFilterBank                (filter_bank.cc)
 *   mc_filter_bank_sqrt_u64       SignalFilterBankSquareRoot      (filter_bank_square_root.cc, square_root_64.cc)
 *   mc_spectral_subtraction_u32   SignalFilterBankSpectralSubtraction (filter_bank_spectral_subtraction.cc)
 *   mc_pcan_u32                   SignalPCAN                      (pcan_argc_fixed.cc)
 *   mc_filter_bank_log_u32        SignalFilterBankLog             (filter_bank_log.cc, log.cc)
 *
 * Integer only; parameters come in `static const` structs (flash), one per call site. The
 * spectral subtraction's noise estimate is state: it lives in the model's state buffer
 * (zeroed at reset), the kernel updates it in place and also copies it to the op's second
 * output. The elementwise kernels (window, spectral subtraction, PCAN) allow y == x. */
#ifndef MC_SIGNAL_H
#define MC_SIGNAL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int32_t frames;              /* the input is frames runs of size samples, each windowed */
    int32_t size;                /* the window's length */
    int32_t shift;               /* 0..31 */
} mc_window_params_t;

typedef struct {
    int32_t num_channels;        /* outputs; the channel arrays hold num_channels + 1 entries */
} mc_filter_bank_params_t;

typedef struct {
    int32_t channels;
} mc_filter_bank_sqrt_params_t;

typedef struct {
    int32_t num_channels;
    int32_t smoothing, one_minus_smoothing;                       /* even channels, as uint32 */
    int32_t alternate_smoothing, alternate_one_minus_smoothing;   /* odd channels, as uint32 */
    int32_t min_signal_remaining;                                 /* as uint32 */
    int32_t smoothing_bits;                                       /* 0..31 */
    int32_t spectral_subtraction_bits;                            /* 0..63 */
    int32_t clamping;                                             /* 0 or 1 */
} mc_spectral_subtraction_params_t;

typedef struct {
    int32_t channels;
    int32_t snr_shift;           /* 0..63 */
} mc_pcan_params_t;

typedef struct {
    int32_t channels;
    int32_t input_correction_bits;   /* 0..31 */
    int32_t output_scale;            /* as uint32 */
} mc_filter_bank_log_params_t;

/* x, y [frames][size]; weights [size]. */
void mc_window_s16(int16_t *y, const int16_t *x, const int16_t *weights, const mc_window_params_t *params);
/* y [num_channels] uint64; x the power spectrum; weights, unweights indexed by the channel
 * weight starts; channel_* [num_channels + 1]. */
void mc_filter_bank_u32(uint64_t *y, const uint32_t *x, const int16_t *weights, const int16_t *unweights,
                        const int16_t *channel_frequency_starts, const int16_t *channel_weight_starts,
                        const int16_t *channel_widths, const mc_filter_bank_params_t *params);
/* scale_bits: the op's int32 scalar input (a runtime value), taken modulo 32. */
void mc_filter_bank_sqrt_u64(uint32_t *y, const uint64_t *x, const int32_t *scale_bits,
                             const mc_filter_bank_sqrt_params_t *params);
/* y, noise_out, x, noise_state [num_channels]; noise_state is read and updated in place. */
void mc_spectral_subtraction_u32(uint32_t *y, uint32_t *noise_out, const uint32_t *x, uint32_t *noise_state,
                                 const mc_spectral_subtraction_params_t *params);
/* y, x, noise_estimate [channels]; gain_lut [125]. */
void mc_pcan_u32(uint32_t *y, const uint32_t *x, const uint32_t *noise_estimate, const int16_t *gain_lut,
                 const mc_pcan_params_t *params);
void mc_filter_bank_log_u32(int16_t *y, const uint32_t *x, const mc_filter_bank_log_params_t *params);

#ifdef __cplusplus
}
#endif

#endif /* MC_SIGNAL_H */
