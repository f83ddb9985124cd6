"""The arithmetic of TFLite Micro's signal-library ops (the audio front end of TFLM's
micro_speech example), in numpy, bit for bit as TFLM computes it: what the micro-kernel
declarations (tir/intrinsics_signal.py) run, equal to runtime_c/kernels/mc_signal.c.

  window                      SignalWindow: (x * w) >> shift, saturated to int16, per frame
  filter_bank                 SignalFilterBank (FilterbankAccumulateChannels): uint64 sums of
                              int16 weights times uint32 power, modulo 2^64
  filter_bank_square_root     SignalFilterBankSquareRoot: Sqrt64 (rounded, capped), >> scale_bits
  spectral_subtraction        SignalFilterBankSpectralSubtraction: a noise estimate (the
                              state, updated in place) low-pass filtered and subtracted
  pcan                        SignalPCAN (ApplyPcanAutoGainControlFixed): per-channel gain
                              from a piecewise-quadratic LUT, then the "shrink" curve
  filter_bank_log             SignalFilterBankLog (Log32): log2 by a segment LUT, times ln 2,
                              times output_scale, clipped to int16

C's unsigned arithmetic is kept explicit: uint32 values are carried in int64 / uint64 arrays
and wrapped with `& 0xFFFFFFFF` exactly where TFLM's uint32 expressions wrap; uint64 sums use
numpy uint64 arrays, whose array arithmetic wraps modulo 2^64 as C's does.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

_U32 = 0xFFFFFFFF

# TFLM's signal/src/log.cc kLogLut: log2(1 + k/128) - k/128 in 1/65536 units, k = 0..128
# (the table there has one more padding zero that no index reaches).
LOG_LUT = (
    0, 224, 442, 654, 861, 1063, 1259, 1450, 1636, 1817, 1992, 2163, 2329, 2490, 2646, 2797,
    2944, 3087, 3224, 3358, 3487, 3611, 3732, 3848, 3960, 4068, 4172, 4272, 4368, 4460, 4549, 4633,
    4714, 4791, 4864, 4934, 5001, 5063, 5123, 5178, 5231, 5280, 5326, 5368, 5408, 5444, 5477, 5507,
    5533, 5557, 5578, 5595, 5610, 5622, 5631, 5637, 5640, 5641, 5638, 5633, 5626, 5615, 5602, 5586,
    5568, 5547, 5524, 5498, 5470, 5439, 5406, 5370, 5332, 5291, 5249, 5203, 5156, 5106, 5054, 5000,
    4944, 4885, 4825, 4762, 4697, 4630, 4561, 4490, 4416, 4341, 4264, 4184, 4103, 4020, 3935, 3848,
    3759, 3668, 3575, 3481, 3384, 3286, 3186, 3084, 2981, 2875, 2768, 2659, 2549, 2437, 2323, 2207,
    2090, 1971, 1851, 1729, 1605, 1480, 1353, 1224, 1094, 963, 830, 695, 559, 421, 282, 142,
    0)
LOG_COEFF = 45426          # ln(2) in Q16
PCAN_LUT_SIZE = 125        # WideDynamicFunction reads lut[4 * 32 - 6 + 2] for a noise of 2^31 or more


def _bit_length(x) -> np.ndarray:
    """C's MostSignificantBit32 for x > 0 (the bit length; 0 for 0), exact below 2^53."""
    return np.frexp(np.asarray(x, np.float64))[1].astype(np.int64)


def _u32(x) -> np.ndarray:
    return np.asarray(x, np.int64) & _U32


# --- SignalWindow ------------------------------------------------------------------------------

def window(x, weights, shift: int) -> np.ndarray:
    """ApplyWindow on each run of len(weights) elements of x (TFLM windows the flat input frame
    by frame); int16 out, x's shape."""
    x = np.asarray(x, np.int16)
    w = np.asarray(weights, np.int16).reshape(-1)
    assert x.size % w.size == 0, f"window: input size {x.size} is not a multiple of {w.size} weights"
    assert 0 <= shift <= 31, f"window: shift {shift} outside 0..31"
    raw = (x.reshape(-1, w.size).astype(np.int32) * w.astype(np.int32)) >> shift   # fits int32: |x w| <= 2^30
    return np.clip(raw, -32768, 32767).astype(np.int16).reshape(x.shape)


# --- SignalFilterBank --------------------------------------------------------------------------

def _segment_sums(values: np.ndarray, widths: np.ndarray) -> np.ndarray:
    """Sums of consecutive runs of `widths` elements, modulo 2^64."""
    cs = np.concatenate([np.zeros(1, np.uint64), np.cumsum(values, dtype=np.uint64)])
    ends = np.cumsum(widths)
    return cs[ends] - cs[ends - widths]


def filter_bank(x, weights, unweights, channel_frequency_starts, channel_weight_starts, channel_widths,
                num_channels: int) -> np.ndarray:
    """FilterbankAccumulateChannels: num_channels + 1 channels (channel 0 is scratch), each
    the sum of weights * x over its band plus the previous channel's unweights * x; returns
    channels 1..num_channels, uint64. A negative int16 weight multiplies as 2^64 + w (C's
    conversion to uint64): every product and sum wraps modulo 2^64."""
    n = int(num_channels)
    x = np.asarray(x, np.uint32).reshape(-1)
    fs = np.asarray(channel_frequency_starts, np.int64).reshape(-1)[:n + 1]
    ws = np.asarray(channel_weight_starts, np.int64).reshape(-1)[:n + 1]
    wd = np.maximum(np.asarray(channel_widths, np.int64).reshape(-1)[:n + 1], 0)   # a width <= 0 adds nothing
    assert len(fs) == len(ws) == len(wd) == n + 1, "filter_bank: needs num_channels + 1 channel entries"
    chan = np.repeat(np.arange(n + 1), wd)
    j = np.arange(int(wd.sum())) - np.repeat(np.cumsum(wd) - wd, wd)
    xi, wi = fs[chan] + j, ws[chan] + j
    w = np.asarray(weights, np.int16).reshape(-1)
    u = np.asarray(unweights, np.int16).reshape(-1)
    assert (xi >= 0).all() and (xi < x.size).all(), "filter_bank: a band reaches outside the input"
    assert (wi >= 0).all() and (wi < min(w.size, u.size)).all(), "filter_bank: a band reaches outside the weights"
    xv = x[xi].astype(np.uint64)
    weighted = _segment_sums(w[wi].astype(np.int64).astype(np.uint64) * xv, wd)
    unweighted = _segment_sums(u[wi].astype(np.int64).astype(np.uint64) * xv, wd)
    return weighted[1:] + unweighted[:-1]


# --- SignalFilterBankSquareRoot ----------------------------------------------------------------

def sqrt64(x) -> np.ndarray:
    """TFLM's Sqrt64: floor(sqrt(x)) by the bitwise method, rounded up when the remainder
    exceeds the root (i.e. to nearest), capped at 0xFFFF below 2^32 (Sqrt32, the uint16 path)
    and at 0xFFFFFFFF above. uint64 out."""
    num = np.asarray(x, np.uint64).reshape(-1).copy()
    small = num < np.uint64(1 << 32)
    res = np.zeros_like(num)
    bit = np.uint64(1 << 62)
    for _ in range(32):     # starting above x's top power of 4 only adds iterations that keep res = 0
        trial = res + bit
        take = num >= trial
        num = np.where(take, num - trial, num)
        res = np.where(take, (res >> np.uint64(1)) + bit, res >> np.uint64(1))
        bit >>= np.uint64(2)
    cap = np.where(small, np.uint64(0xFFFF), np.uint64(_U32))
    res = np.where((num > res) & (res != cap), res + np.uint64(1), res)
    return res.reshape(np.shape(x))


def filter_bank_square_root(x, scale_bits: int) -> np.ndarray:
    """FilterbankSqrt: Sqrt64(x) >> scale_bits, uint32 out. A shift outside 0..31 is undefined
    in TFLM's C++; like the C kernel (and x86, where TFLM's host build runs) the count is
    taken modulo 32."""
    s = int(scale_bits) & 31
    return (sqrt64(x) >> np.uint64(s)).astype(np.uint32)


# --- SignalFilterBankSpectralSubtraction -------------------------------------------------------

@dataclass(frozen=True)
class SpectralSubtractionConfig:
    """The op's options (TFLM's SpectralSubtractionConfig); coefficients are in units of
    2^-spectral_subtraction_bits and taken as uint32 (an int32 option's bits)."""

    num_channels: int
    smoothing: int
    one_minus_smoothing: int
    alternate_smoothing: int
    alternate_one_minus_smoothing: int
    min_signal_remaining: int
    smoothing_bits: int
    spectral_subtraction_bits: int
    clamping: bool


def spectral_subtraction(x, noise: np.ndarray, config: SpectralSubtractionConfig) -> tuple[np.ndarray, np.ndarray]:
    """FilterbankSpectralSubtraction over config.num_channels channels. `noise` (uint32, the
    op's persistent noise estimate, zero after Prepare/Reset) is updated in place; returns
    (signal, a copy of the new noise estimate), both uint32."""
    c = config
    n = int(c.num_channels)
    assert 0 <= c.smoothing_bits <= 31 and 0 <= c.spectral_subtraction_bits <= 63, \
        "spectral_subtraction: shift out of range"
    sb, ssb = np.uint64(c.smoothing_bits), np.uint64(c.spectral_subtraction_bits)
    xin = np.asarray(x, np.uint32).reshape(-1)[:n].astype(np.uint64)
    odd = (np.arange(n) & 1).astype(bool)    # odd channels take the alternate coefficients
    smoothing = np.where(odd, c.alternate_smoothing & _U32, c.smoothing & _U32).astype(np.uint64)
    one_minus = np.where(odd, c.alternate_one_minus_smoothing & _U32, c.one_minus_smoothing & _U32).astype(np.uint64)
    scaled = (xin << sb) & np.uint64(_U32)                   # uint32 shift: the top bits are lost
    old = noise[:n].astype(np.uint64)
    est = ((scaled * smoothing + old * one_minus) >> ssb) & np.uint64(_U32)   # 64-bit sum wraps, then uint32
    over = est > scaled
    noise[:n] = np.where(over & bool(c.clamping), scaled, est).astype(np.uint32)
    est = np.where(over, scaled, est)
    floor = ((xin * np.uint64(c.min_signal_remaining & _U32)) >> ssb) & np.uint64(_U32)
    subtracted = (scaled - est) >> sb
    return np.maximum(subtracted, floor).astype(np.uint32), noise[:n].copy()


# --- SignalPCAN --------------------------------------------------------------------------------

def pcan_gain(noise_estimate, gain_lut) -> np.ndarray:
    """WideDynamicFunction: int16 gain per noise level (lut[x] for x <= 2, otherwise a
    quadratic in the 10 bits below x's leading one, with coefficients lut[4 msb(x) - 6 + 0..2])."""
    x = _u32(noise_estimate)
    lut = np.asarray(gain_lut, np.int64).reshape(-1)
    assert lut.size >= PCAN_LUT_SIZE, f"pcan: the gain LUT has {lut.size} entries, needs {PCAN_LUT_SIZE}"
    small = x <= 2
    interval = np.where(small, 2, _bit_length(x))
    base = 4 * interval - 6
    frac = np.where(interval < 11, x << np.maximum(11 - interval, 0), x >> np.maximum(interval - 11, 0)) & 0x3FF
    r = (lut[base + 2] * frac) >> 5                       # arithmetic shift: floor, as gcc's >> on int32
    r = (r + lut[base + 1] * 32) * frac                   # |r| < 2^31: no int32 overflow here
    r = ((r + (1 << 14)) >> 15) + lut[base]
    r = ((r + 32768) & 0xFFFF) - 32768                    # the int16 return value wraps
    return np.where(small, lut[np.minimum(x, 2)], r)


def pcan(x, noise_estimate, gain_lut, snr_shift: int) -> np.ndarray:
    """ApplyPcanAutoGainControlFixed: snr = (x * gain) >> snr_shift (the int16 gain as uint32,
    so a negative one is 2^32 + g), then PcanShrink (x^2 / 4 below 2, x - 1 above; 12
    fractional bits in, 6 out). uint32 out."""
    assert 0 <= snr_shift <= 63, f"pcan: snr_shift {snr_shift} outside 0..63"
    gain = (pcan_gain(noise_estimate, gain_lut) & _U32).astype(np.uint64)
    snr = ((np.asarray(x, np.uint32).astype(np.uint64) * gain) >> np.uint64(snr_shift)) & np.uint64(_U32)
    snr = snr.astype(np.int64)
    out = np.where(snr < (2 << 12), (snr * snr) >> 20, (snr >> 6) - 64)
    return out.astype(np.uint32)


# --- SignalFilterBankLog -----------------------------------------------------------------------

def log32(x, out_scale: int) -> np.ndarray:
    """TFLM's Log32 for x > 1: round(ln(x) * out_scale) by a 128-segment log2 table; the
    final out_scale * loge + 2^15 is uint32 arithmetic and wraps. uint32 values as int64."""
    x = _u32(x)
    integer = _bit_length(x) - 1
    frac = x - (np.int64(1) << integer)
    frac = np.where(integer < 16, frac << np.maximum(16 - integer, 0), frac >> np.maximum(integer - 16, 0))
    seg = frac >> 9
    lut = np.asarray(LOG_LUT, np.int64)
    c0, c1 = lut[seg], lut[seg + 1]
    fraction = frac + c0 + (((c1 - c0) * (frac - (seg << 9))) >> 16)
    log2 = ((integer << 16) + fraction) & _U32
    loge = ((LOG_COEFF * log2 + (1 << 15)) >> 16) & _U32
    return (((int(out_scale) & _U32) * loge + (1 << 15)) & _U32) >> 16


def filter_bank_log(x, input_correction_bits: int, output_scale: int) -> np.ndarray:
    """FilterbankLog: Log32(x << input_correction_bits) (a uint32 shift: top bits are lost),
    capped at 32767; 0 where the shifted value is 0 or 1. int16 out."""
    assert 0 <= input_correction_bits <= 31, f"filter_bank_log: input_correction_bits {input_correction_bits}"
    scaled = (_u32(x) << input_correction_bits) & _U32
    live = scaled > 1
    value = log32(np.where(live, scaled, 2), output_scale)
    return np.where(live, np.minimum(value, 32767), 0).astype(np.int16)
