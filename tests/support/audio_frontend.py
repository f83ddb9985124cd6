"""An audio front end made by the project itself: TFLite Micro's micro_speech preprocessor
rebuilt op for op in our graph IR (30 ms of 16 kHz int16 audio -> 40 log mel energies, int8
or float32), with tables computed here: a Hann window in Q12, a mel filter bank laid out as
TFLM's filter_bank_ops builds one, a PCAN gain table as its wide_dynamic_func_lut. Written
with microcompile's own writer (CUSTOM ops with flexbuffer options), it runs in TFLM's
interpreter, the oracle. TFLM's own preprocessor files are not in the repository; where a
TFLM checkout is at hand, benchmarks/tflm_models.py runs them too.
"""

from __future__ import annotations

import numpy as np

from microcompile.ir import Graph, Node, Tensor, verify
from microcompile.ir import signal_math as sm

FRAME, FFT_LENGTH, CHANNELS = 480, 512, 40
SAMPLE_RATE, LOWER_HZ, UPPER_HZ = 16000.0, 125.0, 7500.0
START, END = 5, 241     # the spectrum bins the filter bank reads
# TFLM's preprocessor's noise reduction options.
SPECTRAL_SUBTRACTION = {"alternate_one_minus_smoothing": 15401, "alternate_smoothing": 983, "clamping": False,
                        "min_signal_remaining": 819, "one_minus_smoothing": 15975, "smoothing": 409,
                        "smoothing_bits": 10, "spectral_subtraction_bits": 14}


def _mel(f):
    return 1127.0 * np.log1p(np.asarray(f, np.float64) / 700.0)


def mel_filter_bank(spectrum_size: int, num_channels: int, sample_rate: float, lower: float, upper: float,
                    block: int = 1, align: int = 1):
    """A mel filter bank laid out as TFLM's filter_bank_ops builds one: weights in Q12, bands
    starting at a multiple of `align` and padded to `block` weights, zero-width channels
    pointed at one shared run of zero weights."""
    centers = _mel(lower) + (_mel(upper) - _mel(lower)) / (num_channels + 1) * np.arange(1, num_channels + 2)
    hz_per_bin = sample_rate / 2 / (spectrum_size - 1)
    fs, ws, wd = (np.zeros(num_channels + 1, np.int16) for _ in range(3))
    actual = []
    start, weight_index, zeros = int(round(1 + lower / hz_per_bin)), 0, False
    for chan in range(num_channels + 1):
        f = start
        while _mel(f * hz_per_bin) <= centers[chan]:
            f += 1
        actual.append((start, f - start))
        if f == start:
            fs[chan], ws[chan], wd[chan] = 0, 0, block
            if not zeros:
                zeros = True
                ws[:chan] += block
                weight_index += block
        else:
            aligned = start // align * align
            padded = -(-(start - aligned + f - start) // block) * block
            fs[chan], ws[chan], wd[chan] = aligned, weight_index, padded
            weight_index += padded
        start = f
    weights, unweights = np.zeros(weight_index, np.int16), np.zeros(weight_index, np.int16)
    for chan, (first, width) in enumerate(actual):
        below = _mel(lower) if chan == 0 else centers[chan - 1]
        for j in range(width):
            v = (centers[chan] - _mel((first + j) * hz_per_bin)) / (centers[chan] - below)
            k = ws[chan] + first - fs[chan] + j
            weights[k], unweights[k] = int(v * 4096), int((1 - v) * 4096)
    assert first + width < spectrum_size
    return weights, unweights, fs, ws, wd


def pcan_lut(strength: float, offset: float, input_bits: int, gain_bits: int) -> np.ndarray:
    """The gain LUT TFLM's wide_dynamic_func_lut builds (in float64, close enough to be realistic)."""
    def gain(x):
        g = 2.0**gain_bits * (x / 2.0**input_bits + offset) ** -strength
        return min(int(g + 0.5), 32767)
    lut = np.zeros(sm.PCAN_LUT_SIZE + 1, np.int64)
    lut[0], lut[1] = gain(0), gain(1)
    for interval in range(2, 33):
        x0 = 1 << (interval - 1)
        x1, x2 = x0 + (x0 >> 1), (x0 + x0 - 1) if interval == 32 else 2 * x0
        y0, y1, y2 = gain(x0), gain(x1), gain(x2)
        a1 = 4 * (y1 - y0) - (y2 - y0)
        lut[4 * interval - 6:4 * interval - 2] = [y0, a1, (y2 - y0) - a1, 0]
    return lut[:sm.PCAN_LUT_SIZE].astype(np.int16)


def _i32(v: int) -> np.ndarray:
    return np.array(v, np.int32)


def audio_frontend_graph(output: str = "int8") -> Graph:
    """The preprocessor, its features as int8 (TFLM's int8 model: round(log * 256 / 666) - 128
    on int32, clipped) or float32 (TFLM's float model: log / 64)."""
    spectrum = FFT_LENGTH // 2 + 1
    hann = np.round(4096 * np.hanning(FRAME + 2)[1:-1]).astype(np.int16)
    weights, unweights, fs, ws, wd = mel_filter_bank(spectrum, CHANNELS, SAMPLE_RATE, LOWER_HZ, UPPER_HZ)
    t: dict[str, Tensor] = {}
    nodes: list[Node] = []

    def tensor(name, shape, dtype, data=None, **kw):
        t[name] = Tensor(name, tuple(shape), dtype, data=data, **kw)
        return name

    def node(op, ins, outs, **attrs):
        nodes.append(Node(op, outs[0].replace("/", "_"), tuple(ins), tuple(outs), attrs))

    x = tensor("audio", (1, FRAME), "int16")
    node("signal_window", [x, tensor("hann_q12", (FRAME,), "int16", hann)], [tensor("windowed", (1, FRAME), "int16")],
         shift=12)
    node("reshape", ["windowed"], [tensor("frame", (FRAME,), "int16")], shape=(FRAME,))
    node("signal_fft_auto_scale", ["frame"], [tensor("scaled", (FRAME,), "int16"), tensor("scale_bits", (), "int32")])
    node("signal_rfft", ["scaled"], [tensor("spectrum", (2 * spectrum,), "int16")], fft_length=FFT_LENGTH)
    node("signal_energy", ["spectrum"], [tensor("energy", (spectrum,), "uint32")], start_index=START, end_index=END)
    # As TFLM's model: the bins the energy left unwritten are replaced by zeros.
    node("cast", ["energy"], [tensor("energy_i32", (spectrum,), "int32")], to="int32")
    node("strided_slice", ["energy_i32"], [tensor("used_bins", (END - START,), "int32")], begin=(START,), end=(END,),
         strides=(1,), begin_mask=0, end_mask=0, ellipsis_mask=0, new_axis_mask=0, shrink_axis_mask=0, offset=False)
    node("concatenation", [tensor("zeros_lo", (START,), "int32", np.zeros(START, np.int32)), "used_bins",
                           tensor("zeros_hi", (spectrum - END,), "int32", np.zeros(spectrum - END, np.int32))],
         [tensor("bins", (spectrum,), "int32")], axis=0)
    node("cast", ["bins"], [tensor("bins_u32", (spectrum,), "uint32")], to="uint32")
    tables = [tensor(n, v.shape, "int16", v) for n, v in (("weights", weights), ("unweights", unweights),
                                                           ("channel_frequency_starts", fs),
                                                           ("channel_weight_starts", ws), ("channel_widths", wd))]
    node("signal_filter_bank", ["bins_u32", *tables], [tensor("mel", (CHANNELS,), "uint64")], num_channels=CHANNELS)
    node("signal_filter_bank_square_root", ["mel", "scale_bits"], [tensor("mel_sqrt", (CHANNELS,), "uint32")])
    state = tensor("noise_state", (CHANNELS,), "uint32", variable=True)
    node("signal_spectral_subtraction", ["mel_sqrt", state],
         [tensor("denoised", (CHANNELS,), "uint32"), tensor("noise_estimate", (CHANNELS,), "uint32")],
         **SPECTRAL_SUBTRACTION)
    node("signal_pcan", ["denoised", "noise_estimate", tensor("gain_lut", (sm.PCAN_LUT_SIZE,), "int16",
                                                              pcan_lut(0.95, 80.0, 6, 21))],
         [tensor("pcan", (CHANNELS,), "uint32")], snr_shift=6)
    node("signal_filter_bank_log", ["pcan"], [tensor("log_mel", (CHANNELS,), "int16")], input_correction_bits=3,
         output_scale=64)
    if output == "float":
        node("cast", ["log_mel"], [tensor("log_f32", (CHANNELS,), "float32")], to="float32")
        node("mul", ["log_f32", tensor("one_64th", (), "float32", np.array(1 / 64, np.float32))],
             [tensor("features", (CHANNELS,), "float32")])
    else:
        node("cast", ["log_mel"], [tensor("log_i32", (CHANNELS,), "int32")], to="int32")
        step = "log_i32"
        for op, name, value in (("mul", "times_256", 256), ("add", "plus_333", 333), ("div", "over_666", 666),
                                ("add", "minus_128", -128), ("minimum", "at_most_127", 127),
                                ("maximum", "at_least_m128", -128)):
            node(op, [step, tensor(f"{name}_c", (), "int32", _i32(value))], [tensor(name, (CHANNELS,), "int32")],
                 **({"activation": "NONE"} if op in ("mul", "add", "div") else {}))
            step = name
        node("cast", [step], [tensor("features", (CHANNELS,), "int8")], to="int8")
    return verify(Graph(f"audio_frontend_{output}", t, tuple(nodes), (x,), ("features",)))
