"""The signal-library micro-kernels of runtime_c/include/mc_signal.h (TFLM's audio front end:
SignalWindow, SignalFilterBank, SignalFilterBankSquareRoot, SignalFilterBankSpectralSubtraction,
SignalPCAN, SignalFilterBankLog): declarations and Python semantics (ir/signal_math.py). The
spectral subtraction's noise-estimate state is written in place: its declaration lists it
among the written arguments.

    mc_window_s16(y, x, weights, &mc_window_params_t)
    mc_filter_bank_u32(y, x, weights, unweights, channel_frequency_starts, channel_weight_starts,
                       channel_widths, &mc_filter_bank_params_t)
    mc_filter_bank_sqrt_u64(y, x, scale_bits, &mc_filter_bank_sqrt_params_t)
    mc_spectral_subtraction_u32(y, noise_out, x, noise_state, &mc_spectral_subtraction_params_t)
    mc_pcan_u32(y, x, noise_estimate, gain_lut, &mc_pcan_params_t)
    mc_filter_bank_log_u32(y, x, &mc_filter_bank_log_params_t)
"""

from __future__ import annotations

import numpy as np

from ..ir import signal_math as sm
from .intrinsics import StructType, intrinsic
from .intrinsics import pointer_store as _store, pointer_view as _view

WINDOW_PARAMS = StructType("mc_window_params_t", ("frames", "size", "shift"))
FILTER_BANK_PARAMS = StructType("mc_filter_bank_params_t", ("num_channels",))
FILTER_BANK_SQRT_PARAMS = StructType("mc_filter_bank_sqrt_params_t", ("channels",))
SPECTRAL_SUBTRACTION_PARAMS = StructType("mc_spectral_subtraction_params_t", (
    "num_channels", "smoothing", "one_minus_smoothing", "alternate_smoothing", "alternate_one_minus_smoothing",
    "min_signal_remaining", "smoothing_bits", "spectral_subtraction_bits", "clamping"))
PCAN_PARAMS = StructType("mc_pcan_params_t", ("channels", "snr_shift"))
FILTER_BANK_LOG_PARAMS = StructType("mc_filter_bank_log_params_t", ("channels", "input_correction_bits",
                                                                    "output_scale"))

_H = "mc_signal.h"


@intrinsic("mc_window_s16", ("handle",) * 3 + (WINDOW_PARAMS,), "void", _H, extern=True, writes=(0,))
def _window_s16(y, x, weights, p: dict):
    n = p["frames"] * p["size"]
    _store(y, sm.window(_view(x, n), _view(weights, p["size"]), p["shift"]))


@intrinsic("mc_filter_bank_u32", ("handle",) * 7 + (FILTER_BANK_PARAMS,), "void", _H, extern=True, writes=(0,))
def _filter_bank_u32(y, x, weights, unweights, *args):
    freq_starts, weight_starts, widths, p = args     # mc_filter_bank_u32's arguments, in its order
    n = p["num_channels"] + 1
    fs, ws, wd = _view(freq_starts, n), _view(weight_starts, n), _view(widths, n)
    span = np.maximum(wd.astype(np.int64), 0)
    read = span > 0     # a channel of width <= 0 reads nothing, whatever its starts say
    x_len = int(max((fs.astype(np.int64) + span)[read].max(initial=0), 0))
    w_len = int(max((ws.astype(np.int64) + span)[read].max(initial=0), 0))
    _store(y, sm.filter_bank(_view(x, x_len), _view(weights, w_len), _view(unweights, w_len), fs, ws, wd,
                             p["num_channels"]))


@intrinsic("mc_filter_bank_sqrt_u64", ("handle",) * 3 + (FILTER_BANK_SQRT_PARAMS,), "void", _H, extern=True,
           writes=(0,))
def _filter_bank_sqrt_u64(y, x, scale_bits, p: dict):
    _store(y, sm.filter_bank_square_root(_view(x, p["channels"]), int(_view(scale_bits, 1)[0])))


def spectral_subtraction_config(p: dict) -> sm.SpectralSubtractionConfig:
    """The signal_math config of a mc_spectral_subtraction_params_t's field values."""
    return sm.SpectralSubtractionConfig(
        p["num_channels"], p["smoothing"], p["one_minus_smoothing"], p["alternate_smoothing"],
        p["alternate_one_minus_smoothing"], p["min_signal_remaining"], p["smoothing_bits"],
        p["spectral_subtraction_bits"], bool(p["clamping"]))


@intrinsic("mc_spectral_subtraction_u32", ("handle",) * 4 + (SPECTRAL_SUBTRACTION_PARAMS,), "void", _H,
           extern=True, writes=(0, 1, 3))
def _spectral_subtraction_u32(y, noise_out, x, noise_state, p: dict):
    n = p["num_channels"]
    signal, noise = sm.spectral_subtraction(_view(x, n), _view(noise_state, n), spectral_subtraction_config(p))
    _store(y, signal)
    _store(noise_out, noise)


@intrinsic("mc_pcan_u32", ("handle",) * 4 + (PCAN_PARAMS,), "void", _H, extern=True, writes=(0,))
def _pcan_u32(y, x, noise_estimate, gain_lut, p: dict):
    n = p["channels"]
    _store(y, sm.pcan(_view(x, n), _view(noise_estimate, n), _view(gain_lut, sm.PCAN_LUT_SIZE), p["snr_shift"]))


@intrinsic("mc_filter_bank_log_u32", ("handle", "handle", FILTER_BANK_LOG_PARAMS), "void", _H, extern=True,
           writes=(0,))
def _filter_bank_log_u32(y, x, p: dict):
    _store(y, sm.filter_bank_log(_view(x, p["channels"]), p["input_correction_bits"], p["output_scale"]))
