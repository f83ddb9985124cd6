"""TFLite Micro's signal-library ops (its audio front end) and CAST.

TFLM's micro_speech example turns 30 ms of 16 kHz audio into 40 log filter-bank energies with
a model of CUSTOM ops from its `signal` library; they compute on plain integers (int16 audio,
uint32 spectra, uint64 filter-bank sums), with no quantization parameters. Each op here is
one of them, bit-exact with TFLM's kernel (ir/signal_math.py, ir/signal_fft.py):

  signal_window            x int16 [..., N] * weights int16 [N] >> shift
  signal_fft_auto_scale    x int16 [N] -> (x << scale_bits int16 [N], scale_bits int32 []):
                           the largest shift that keeps the frame in int16
  signal_rfft              x int16 [..., N] -> int16 [..., 2 * (fft_length / 2 + 1)], real and
                           imaginary parts interleaved: kissfft's 16-bit fixed-point real FFT
                           of the frame zero-padded to fft_length
  signal_energy            complex int16 [2K] -> uint32 [K], re^2 + im^2 on bins
                           start_index..end_index-1; the other bins are 0 (TFLM leaves them
                           unwritten, and its models slice them off)
  signal_filter_bank       uint32 spectrum -> uint64 [num_channels]: triangular filters as
                           weights / unweights with start, offset and width per channel
  signal_filter_bank_square_root
                           uint64 [C], scale_bits int32 [] -> uint32 [C]: sqrt(x) >> scale_bits
  signal_spectral_subtraction
                           uint32 [C] -> (signal, noise estimate), both uint32 [C]: a
                           smoothed noise estimate kept as STATE (input 1, a variable tensor,
                           zero at reset) and subtracted from the signal
  signal_pcan              uint32 [C] signal, noise estimate, gain_lut int16 -> uint32 [C]:
                           per-channel automatic gain control
  signal_filter_bank_log   uint32 [C] -> int16 [C]: output_scale * log(x << correction bits)
  cast                     any numeric dtype to another, as TFLite's CAST (static_cast: int
                           to narrower int keeps the low bits, float to int truncates)

Attributes carry the flexbuffer options of TFLM's kernels under the same names.
"""

from __future__ import annotations

from .graph import Graph, Node
from .ops import OpDef, in_tensor, register
from .signal_fft import check_fft_length
from .signal_math import PCAN_LUT_SIZE

SIGNAL_OPS = ("signal_window", "signal_fft_auto_scale", "signal_rfft", "signal_energy", "signal_filter_bank",
              "signal_filter_bank_square_root", "signal_spectral_subtraction", "signal_pcan",
              "signal_filter_bank_log")
# The options of signal_spectral_subtraction (TFLM's SpectralSubtractionConfig).
SPECTRAL_SUBTRACTION_OPTIONS = ("alternate_one_minus_smoothing", "alternate_smoothing", "clamping",
                                "min_signal_remaining", "one_minus_smoothing", "smoothing", "smoothing_bits",
                                "spectral_subtraction_bits")
CAST_DTYPES = ("int8", "int16", "int32", "uint32", "float32")


def _dtype_problem(g: Graph, n: Node, want: tuple[str, ...]) -> str | None:
    got = tuple(g.tensors[i].dtype for i in n.inputs if i)
    if got != want:
        return f"{n.op} takes {', '.join(want)}, got {', '.join(got)}"
    return None


def _same(dtype: str):
    return lambda g, n: [(in_tensor(g, n, 0).shape, dtype)]


def _check_window(g, n):
    x, w = in_tensor(g, n, 0), in_tensor(g, n, 1)
    if (p := _dtype_problem(g, n, ("int16", "int16"))) is not None:
        return p
    if not w.is_const or w.shape != (x.shape[-1],):
        return f"weights {w.shape} must be a constant of the frame's length {x.shape[-1]}"
    return None if 0 <= n.attrs["shift"] < 32 else f"shift {n.attrs['shift']} outside 0..31"


def _check_rfft(g, n):
    x, length = in_tensor(g, n, 0), n.attrs["fft_length"]
    if (p := _dtype_problem(g, n, ("int16",))) is not None:
        return p
    try:
        check_fft_length(length)
    except ValueError as e:
        return str(e)
    return None if x.shape[-1] <= length else f"frame of {x.shape[-1]} samples is longer than fft_length {length}"


def _infer_rfft(g, n):
    x = in_tensor(g, n, 0)
    return [((*x.shape[:-1], 2 * (n.attrs["fft_length"] // 2 + 1)), "int16")]


def _check_energy(g, n):
    x = in_tensor(g, n, 0)
    if (p := _dtype_problem(g, n, ("int16",))) is not None:
        return p
    if len(x.shape) != 1:    # TFLM's kernel takes one spectrum
        return f"SignalEnergy takes a 1-D spectrum, got shape {x.shape}"
    bins = x.shape[-1] // 2
    if x.shape[-1] % 2 or not 0 <= n.attrs["start_index"] <= n.attrs["end_index"] <= bins:
        return f"bins {n.attrs['start_index']}..{n.attrs['end_index']} do not fit a spectrum of {x.shape[-1]} values"
    return None


def _check_filter_bank(g, n):
    if (p := _dtype_problem(g, n, ("uint32",) + ("int16",) * 5)) is not None:
        return p
    c = n.attrs["num_channels"]
    w, uw = in_tensor(g, n, 1), in_tensor(g, n, 2)
    if not all(in_tensor(g, n, k).is_const for k in range(1, 6)):
        return "the filter bank's tables must be constants"
    if w.shape != uw.shape or any(in_tensor(g, n, k).shape != (c + 1,) for k in (3, 4, 5)):
        return f"tables {[in_tensor(g, n, k).shape for k in range(1, 6)]} do not fit {c} channels"
    starts, offsets, widths = (in_tensor(g, n, k).data.astype(int) for k in (3, 4, 5))
    span = widths.clip(0)     # a channel of width <= 0 reads nothing
    n_bins, n_weights = in_tensor(g, n, 0).shape[-1], w.shape[0]
    if ((span > 0) & ((starts < 0) | (offsets < 0) | (starts + span > n_bins) | (offsets + span > n_weights))).any():
        return f"a channel reads past the {n_bins} spectrum bins or the {n_weights} weights"
    return None


def _check_square_root(g, n):
    s = in_tensor(g, n, 1)
    return _dtype_problem(g, n, ("uint64", "int32")) or (None if s.size == 1 else f"scale_bits has shape {s.shape}")


def _check_spectral_subtraction(g, n):
    x, state = in_tensor(g, n, 0), in_tensor(g, n, 1)
    if (p := _dtype_problem(g, n, ("uint32", "uint32"))) is not None:
        return p
    if state.shape != x.shape or not state.variable:
        return "the noise estimate (input 1) must be a variable tensor of the input's shape"
    if not 0 <= n.attrs["smoothing_bits"] <= 31 or not 0 <= n.attrs["spectral_subtraction_bits"] <= 63:
        return "smoothing_bits must be in 0..31 and spectral_subtraction_bits in 0..63 (wider shifts are undefined)"
    return None


def _check_pcan(g, n):
    x, noise, lut = (in_tensor(g, n, k) for k in range(3))
    if (p := _dtype_problem(g, n, ("uint32", "uint32", "int16"))) is not None:
        return p
    if noise.shape != x.shape or not lut.is_const or lut.size < PCAN_LUT_SIZE:
        return f"the noise estimate must have the signal's shape and gain_lut be a constant of {PCAN_LUT_SIZE} entries"
    return None if 0 <= n.attrs["snr_shift"] <= 63 else f"snr_shift {n.attrs['snr_shift']} outside 0..63"


def _check_log(g, n):
    bits = n.attrs["input_correction_bits"]
    return _dtype_problem(g, n, ("uint32",)) or (None if 0 <= bits <= 31 else f"input_correction_bits {bits} outside 0..31")


def _check_cast(g, n):
    src, dst = in_tensor(g, n, 0).dtype, n.attrs["to"]
    if src not in CAST_DTYPES or dst not in CAST_DTYPES:
        return f"CAST from {src} to {dst} (supported: {', '.join(CAST_DTYPES)})"
    return None


_SIGNAL = dict(plain_ints=True)
register(OpDef("signal_window", ("input", "weights"), attrs={"shift": 0}, infer=_same("int16"),
               check=_check_window, macs=lambda g, n: in_tensor(g, n, 0).size, **_SIGNAL))
register(OpDef("signal_fft_auto_scale", ("input",), infer=lambda g, n: [(in_tensor(g, n, 0).shape, "int16"),
                                                                        ((), "int32")],
               check=lambda g, n: _dtype_problem(g, n, ("int16",)), **_SIGNAL))
register(OpDef("signal_rfft", ("input",), attrs={"fft_length": 0}, infer=_infer_rfft, check=_check_rfft,
               macs=lambda g, n: in_tensor(g, n, 0).size // in_tensor(g, n, 0).shape[-1]
               * n.attrs["fft_length"].bit_length() * n.attrs["fft_length"] * 2, **_SIGNAL))
register(OpDef("signal_energy", ("input",), attrs={"start_index": 0, "end_index": 0},
               infer=lambda g, n: [((*in_tensor(g, n, 0).shape[:-1], in_tensor(g, n, 0).shape[-1] // 2), "uint32")],
               check=_check_energy, **_SIGNAL))
register(OpDef("signal_filter_bank", ("input", "weights", "unweights", "channel_frequency_starts",
                                      "channel_weight_starts", "channel_widths"),
               attrs={"num_channels": 0}, infer=lambda g, n: [((n.attrs["num_channels"],), "uint64")],
               check=_check_filter_bank, macs=lambda g, n: 2 * in_tensor(g, n, 1).size, **_SIGNAL))
register(OpDef("signal_filter_bank_square_root", ("input", "scale_bits"), infer=_same("uint32"),
               check=_check_square_root, **_SIGNAL))
register(OpDef("signal_spectral_subtraction", ("input", "noise_state"),
               attrs={k: 0 for k in SPECTRAL_SUBTRACTION_OPTIONS},
               infer=lambda g, n: [(in_tensor(g, n, 0).shape, "uint32")] * 2, check=_check_spectral_subtraction,
               **_SIGNAL))
register(OpDef("signal_pcan", ("input", "noise_estimate", "gain_lut"), attrs={"snr_shift": 0},
               infer=_same("uint32"), check=_check_pcan, **_SIGNAL))
register(OpDef("signal_filter_bank_log", ("input",), attrs={"input_correction_bits": 0, "output_scale": 1},
               infer=_same("int16"), check=_check_log, **_SIGNAL))
register(OpDef("cast", ("input",), attrs={"to": "int32"}, infer=lambda g, n: [(in_tensor(g, n, 0).shape,
                                                                               n.attrs["to"])],
               check=_check_cast, **_SIGNAL))
