"""The TFLM signal-library micro-kernels of runtime_c/include/mc_signal_fft.h: declarations and
Python semantics (ir/signal_fft.py, bit-exact with TFLM). The RFFT's tables are pointers to
constant arrays (signal_fft.rfft_tables); its semantics recompute the same tables from
fft_length, and it needs no scratch.

    mc_fft_auto_scale_s16(y, scale_bits, x, &mc_fft_auto_scale_params_t)
    mc_rfft_s16(y, x, twiddles, super_twiddles, factors, &mc_rfft_params_t)
    mc_energy_s16(y, x, &mc_energy_params_t)
"""

from __future__ import annotations

from ..ir import signal_fft as sf
from .intrinsics import StructType, intrinsic
from .intrinsics import pointer_store as _store, pointer_view as _view

FFT_AUTO_SCALE_PARAMS = StructType("mc_fft_auto_scale_params_t", ("size",))
RFFT_PARAMS = StructType("mc_rfft_params_t", ("rows", "input_length", "fft_length", "stages"))
ENERGY_PARAMS = StructType("mc_energy_params_t", ("length", "start_index", "end_index"))

_H = "mc_signal_fft.h"


@intrinsic("mc_fft_auto_scale_s16", ("handle", "handle", "handle", FFT_AUTO_SCALE_PARAMS), "void", _H,
           extern=True, writes=(0, 1))
def _fft_auto_scale_s16(y, scale_bits, x, p: dict):
    out, scale = sf.fft_auto_scale(_view(x, p["size"]))
    _store(y, out)
    _store(scale_bits, scale)


@intrinsic("mc_rfft_s16", ("handle",) * 5 + (RFFT_PARAMS,), "void", _H, extern=True, writes=(0,))
def _rfft_s16(y, x, twiddles, super_twiddles, factors, p: dict):
    rows, n = p["rows"], p["input_length"]
    _store(y, sf.rfft_int16(_view(x, rows * n).reshape(rows, n), p["fft_length"]))


@intrinsic("mc_energy_s16", ("handle", "handle", ENERGY_PARAMS), "void", _H, extern=True, writes=(0,))
def _energy_s16(y, x, p: dict):
    _store(y, sf.energy(_view(x, 2 * p["length"]), p["start_index"], p["end_index"]))
