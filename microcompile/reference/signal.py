"""Interpreter kernels of TFLite Micro's signal ops and CAST (ir/ops_signal.py): the
arithmetic is ir/signal_math.py's and ir/signal_fft.py's, which the C kernels' Python
semantics run too."""

from __future__ import annotations

from ..ir import signal_fft as sf
from ..ir import signal_math as sm
from ..ir.ops_signal import SPECTRAL_SUBTRACTION_OPTIONS
from . import plain
from .common import state_array
from .interp import kernel


@kernel("cast")
def _cast(g, n, x):
    return plain.cast(x, n.attrs["to"])


@kernel("signal_window")
def _window(g, n, x, weights):
    return sm.window(x, weights, n.attrs["shift"])


@kernel("signal_fft_auto_scale")
def _fft_auto_scale(g, n, x):
    return list(sf.fft_auto_scale(x))


@kernel("signal_rfft")
def _rfft(g, n, x):
    return sf.rfft_int16(x, n.attrs["fft_length"])


@kernel("signal_energy")
def _energy(g, n, x):
    return sf.energy(x, n.attrs["start_index"], n.attrs["end_index"])


@kernel("signal_filter_bank")
def _filter_bank(g, n, x, *tables):
    return sm.filter_bank(x, *tables, n.attrs["num_channels"])


@kernel("signal_filter_bank_square_root")
def _filter_bank_square_root(g, n, x, scale_bits):
    return sm.filter_bank_square_root(x, scale_bits)


def spectral_subtraction_config(g, n) -> sm.SpectralSubtractionConfig:
    a = n.attrs
    return sm.SpectralSubtractionConfig(num_channels=g.tensors[n.inputs[0]].size,
                                        **{k: a[k] for k in SPECTRAL_SUBTRACTION_OPTIONS})


@kernel("signal_spectral_subtraction")
def _spectral_subtraction(g, n, x, noise):
    state = state_array(g, n.inputs[1], noise)     # a variable tensor (always, from the reader)
    return list(sm.spectral_subtraction(x, state, spectral_subtraction_config(g, n)))


@kernel("signal_pcan")
def _pcan(g, n, x, noise, gain_lut):
    return sm.pcan(x, noise, gain_lut, n.attrs["snr_shift"])


@kernel("signal_filter_bank_log")
def _filter_bank_log(g, n, x):
    return sm.filter_bank_log(x, n.attrs["input_correction_bits"], n.attrs["output_scale"])
