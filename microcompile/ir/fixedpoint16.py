"""The arithmetic of TFLite's 16x8 kernels (int16 activations, int8 weights, int64
accumulators), in numpy int64: what the interpreter (reference/s16.py) and the micro-kernel
declarations (tir/intrinsics_s16.py) both compute, so the two cannot drift apart.

  conv2d_s16 / depthwise_s16 /   int64 sums of x * w + bias, requantized by the int64
  transpose_conv_s16             MultiplyByQuantizedMultiplier (fixedpoint)
  fully_connected_s16            int64 sums, requantized in double: round(acc * scale)
  logistic16 / tanh16            reference_integer_ops::Logistic / Tanh: interpolation in
                                 TFLite's 256-entry sigmoid table
  softmax16, lut_lookup,         reference_ops::SoftmaxInt16 and the 513-entry tables of
  lut_populate_int16             LUTPopulate<int16_t>
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import fixedpoint as fp

INT16_MIN, INT16_MAX = -32768, 32767

# TFLite's sigmoid_table_uint16: sigmoid(k / 24) in Q0.16, k = 0..255, which LiteRT's int16
# LOGISTIC and TANH interpolate. The entries are not a closed formula of k (they are TFLite's
# tuned constants); they were measured through LiteRT's own int16 TANH kernel (an input scale
# of 4/3 * 2^-13 lands on entry k exactly at x = 128 k), and tests/ir/test_s16.py measures
# them again. runtime_c/kernels/mc_s16.c holds the same table.
SIGMOID_TABLE = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
], dtype=np.int64)


def patches(x: np.ndarray, kh: int, kw: int, stride=(1, 1), dilation=(1, 1), padding=(0, 0, 0, 0),
            fill=0) -> np.ndarray:
    """(N, OH, OW, KH, KW, C) view of `x` padded with `fill`: im2col without the copy."""
    sh, sw = stride
    dh, dw = dilation
    top, left, bottom, right = padding
    xp = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=fill)
    n, h, w, c = xp.shape
    oh = (h - ((kh - 1) * dh + 1)) // sh + 1
    ow = (w - ((kw - 1) * dw + 1)) // sw + 1
    s = xp.strides
    return as_strided(xp, (n, oh, ow, kh, kw, c), (s[0], s[1] * sh, s[2] * sw, s[1] * dh, s[2] * dw, s[3]),
                      writeable=False)


@dataclass(frozen=True)
class Requant:
    """A 16x8 kernel's output stage: per-channel multipliers and shifts, then the clamp."""

    mult: object          # [CO] int32
    shift: object         # [CO] int32
    act_min: int
    act_max: int


def _requant(acc, rq: Requant) -> np.ndarray:
    out = fp.multiply_by_quantized_multiplier_int64(acc, np.asarray(rq.mult), np.asarray(rq.shift))
    return np.clip(out, rq.act_min, rq.act_max).astype(np.int16)


def conv2d_s16(x, w, bias, rq: Requant, stride, dilation, padding) -> np.ndarray:
    """x [N,H,W,C] int16, w [CO,KH,KW,C] int8, bias [CO] int64 (or None)."""
    co, kh, kw, ci = w.shape
    cols = patches(np.asarray(x, np.float64), kh, kw, stride, dilation, padding)
    # int16 * int8 products summed in float64 are exact far past any real window.
    acc = np.rint(cols.reshape(-1, kh * kw * ci) @ np.asarray(w, np.float64).reshape(co, -1).T).astype(np.int64)
    if bias is not None:
        acc += np.asarray(bias, np.int64)
    return _requant(acc, rq).reshape(cols.shape[:3] + (co,))


def depthwise_s16(x, w, bias, rq: Requant, stride, dilation, padding) -> np.ndarray:
    """x [N,H,W,C] int16, w [1,KH,KW,CO] int8 (output channel c reads input c // (CO/C))."""
    _, kh, kw, co = w.shape
    channel_of = np.arange(co) // (co // x.shape[3])
    cols = patches(np.asarray(x, np.float64), kh, kw, stride, dilation, padding)[..., channel_of]
    acc = np.rint(np.einsum("nhwijc,ijc->nhwc", cols, np.asarray(w[0], np.float64))).astype(np.int64)
    if bias is not None:
        acc += np.asarray(bias, np.int64)
    return _requant(acc, rq)


def transpose_conv_s16(x, w, bias, rq: Requant, stride, padding, output_hw) -> np.ndarray:
    """TFLite's TRANSPOSE_CONV: every input pixel scatters its filter into the output."""
    co, kh, kw, ci = w.shape
    nb, ih, iw, _ = x.shape
    sh, sw = stride
    pt, pl = padding[:2]
    oh, ow = output_hw
    xs, ws = np.asarray(x, np.float64), np.asarray(w, np.float64)
    full_h, full_w = max((ih - 1) * sh + kh, pt + oh), max((iw - 1) * sw + kw, pl + ow)
    acc = np.zeros((nb, full_h, full_w, co), np.float64)
    for ky in range(kh):
        for kx in range(kw):
            acc[:, ky:ky + (ih - 1) * sh + 1:sh, kx:kx + (iw - 1) * sw + 1:sw] += xs @ ws[:, ky, kx, :].T
    acc = np.rint(acc[:, pt:pt + oh, pl:pl + ow]).astype(np.int64)
    if bias is not None:
        acc += np.asarray(bias, np.int64)
    return _requant(acc, rq)


def fully_connected_s16(x, w, bias, weights_offset, scale, act_min, act_max) -> np.ndarray:
    """x [..., D] int16, w [U, D] int8: round_half_away(double(acc) * scale[u]) clamped."""
    units, depth = w.shape
    ws = np.asarray(w, np.float64) + weights_offset
    acc = np.rint(np.asarray(x, np.float64).reshape(-1, depth) @ ws.T).astype(np.int64)
    if bias is not None:
        acc += np.asarray(bias, np.int64)
    scaled = fp.tflite_round(acc.astype(np.float64) * np.asarray(scale, np.float64))
    return np.clip(scaled, act_min, act_max).astype(np.int16)


def _rescale(x, input_multiplier: int, input_left_shift: int) -> np.ndarray:
    rnd = (1 << (input_left_shift - 1)) if input_left_shift > 0 else 0
    return (np.asarray(x, np.int64) * input_multiplier + rnd) >> input_left_shift


def _wrap16(v) -> np.ndarray:
    return ((np.asarray(v, np.int64) + 32768) & 0xFFFF) - 32768


def logistic16(x, input_multiplier: int, input_left_shift: int) -> np.ndarray:
    """reference_integer_ops::Logistic (int16): interpolate the sigmoid table in Q0.16 with
    9 fraction bits, mirror negative inputs, round to Q0.15."""
    v = _rescale(x, input_multiplier, input_left_shift)
    a = np.abs(v)
    uh = a >> 9
    idx = np.minimum(uh, 254)
    ua, ub = SIGMOID_TABLE[idx], SIGMOID_TABLE[idx + 1]
    result = np.where(uh >= 255, 0x7FFF << 10, (ua << 9) + (a & 0x1FF) * (ub - ua))
    result = np.where(v >= 0, result + (1 << 9), (1 << 25) - result + (1 << 9) - 1)
    return _wrap16(result >> 10)


def tanh16(x, input_multiplier: int, input_left_shift: int) -> np.ndarray:
    """reference_integer_ops::Tanh (int16): tanh(x) = 2 sigmoid(2x) - 1 on the same table,
    8 fraction bits."""
    v = _rescale(x, input_multiplier, input_left_shift)
    a = np.abs(v)
    uh = a >> 8
    idx = np.minimum(uh, 254)
    ua, ub = SIGMOID_TABLE[idx], SIGMOID_TABLE[idx + 1]
    result = np.where(uh >= 255, 0xFFFF << 8, (ua << 8) + (a & 0xFF) * (ub - ua))
    result = np.where(v >= 0, result - (1 << 23) + (1 << 7), -result + (1 << 23) + (1 << 7) - 1)
    return _wrap16(result >> 8)


def lut_populate_int16(fn, input_scale: float, input_zp: int, output_scale: float, output_zp: int) -> np.ndarray:
    """TFLite LUTPopulate<int16_t> with FloatT = double: 512 samples plus an end point, each
    corrected by half the interpolation error at its midpoint."""
    def rnd(v):
        return float(fp.tflite_round(np.float64(v)))

    in_min = input_scale * (INT16_MIN - input_zp)
    in_max = input_scale * (INT16_MAX - input_zp)
    out_min = output_scale * (INT16_MIN - output_zp)
    out_max = output_scale * (INT16_MAX - output_zp)
    steps = 512
    step = (in_max - in_min) / steps
    half_step = step / 2
    inv = 65536.0 / (out_max - out_min)
    lut = np.zeros(steps + 1, np.int64)
    for i in range(steps):
        val = fn(in_min + i * step)
        val_mid = fn(in_min + i * step + half_step)
        val_next = fn(in_min + (i + 1) * step)
        sample = rnd(val * inv)
        midpoint_err = rnd((val_next * inv + rnd(val * inv)) / 2) - rnd(val_mid * inv)
        lut[i] = min(max(sample - rnd(midpoint_err / 2), INT16_MIN), INT16_MAX)
    lut[steps] = min(max(rnd(fn(in_max) * inv), INT16_MIN), INT16_MAX)
    return lut


def lut_lookup(value, lut: np.ndarray) -> np.ndarray:
    """TFLite lut_lookup for int16: base lut[256 + (v >> 7)] plus the slope times the low
    7 bits, rounded ((slope * offset + 64) >> 7)."""
    v = np.asarray(value, np.int64)
    index = 256 + (v >> 7)
    base = np.asarray(lut, np.int64)[index]
    slope = _wrap16(np.asarray(lut, np.int64)[index + 1] - base)   # an int16 subtraction
    return _wrap16(base + ((slope * (v & 0x7F) + 64) >> 7))


_RANGE16 = INT16_MAX - INT16_MIN   # 65535


def softmax_luts() -> tuple[np.ndarray, np.ndarray]:
    """SoftmaxPrepare's exp table over [-10, 0] and 1/(1+x) table over [0, 1]."""
    exp_lut = lut_populate_int16(np.exp, 10.0 / _RANGE16, INT16_MAX, 2.0 / _RANGE16, 0)
    recip_lut = lut_populate_int16(lambda v: 1.0 / (1.0 + v), 1.0 / _RANGE16, INT16_MIN, 2.0 / _RANGE16, 0)
    return exp_lut, recip_lut


def softmax16(x, input_multiplier: int, input_left_shift: int, exp_lut, recip_lut) -> np.ndarray:
    """reference_ops::SoftmaxInt16 over the last axis."""
    xi = np.asarray(x, np.int64)
    diff = xi - xi.max(axis=-1, keepdims=True)
    scaled = fp.multiply_by_quantized_multiplier(diff, input_multiplier, input_left_shift)
    exps = lut_lookup(np.clip(scaled + 32767, INT16_MIN, INT16_MAX), exp_lut)     # Q0.15
    sums = exps.sum(axis=-1, keepdims=True)                                       # Q16.15
    headroom_plus_one = fp.count_leading_zeros_u32(sums)
    shifted = ((sums << (headroom_plus_one - 1)) + (1 << 13)) >> 14
    recip = lut_lookup(np.clip(shifted - ((1 << 15) + (1 << 16)), INT16_MIN, INT16_MAX), recip_lut)
    right_shift = 31 - headroom_plus_one
    out = (exps * recip + (np.int64(1) << (right_shift - 1))) >> right_shift
    return np.clip(out, 0, INT16_MAX)
