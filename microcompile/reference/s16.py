"""16x8 quantization (int16 activations, int8 weights, int64 biases): the parameters
(TFLM's "Prepare") and interpreter kernels of every op's int16 variant, registered with
`dtype="int16"` (ops.variant picks them when an activation of the node is int16).

What LiteRT BUILTIN_REF computes, measured op by op (tests/ir/test_interp_ops.py keeps
power-of-two and random scales in its int16 plans):

  conv2d, depthwise_conv2d,   int64 accumulator sum x*w + bias (no input offset: int16
  transpose_conv2d            activations are symmetric), requantized by the int64
                              MultiplyByQuantizedMultiplier (a 16-bit multiplier, one
                              rounding: fixedpoint.multiply_by_quantized_multiplier_int64)
  fully_connected             the same int64 accumulator, requantized in double:
                              round_half_away(acc * s_in * s_w / s_out)
  add, sub                    ADD's int8 arithmetic with a left shift of 15 instead of 20
                              (AddOptions.pot_scale_int16 = false: the general path)
  mul                         MBQM(x1 * x2) as int8's (DOUBLE rounding), int16 clamp
  leaky_relu                  int8's two multipliers (QuantizeLeakyRelu), int16 clamp
  logistic, tanh              reference_integer_ops::Logistic / Tanh: the input rescaled to
                              Q3.12 * 3 (or a power-of-two shift), then linear
                              interpolation in a 256-entry sigmoid table
  softmax                     reference_ops::SoftmaxInt16: exp and 1/(1+x) by linear
                              interpolation in two 513-entry tables (LUTPopulate, double)
  quantize                    int16 <-> int8 and int16 -> int16: MBQM(x - zp_in) + zp_out;
                              float32 -> int16: round half away(x / s) + zp
  dequantize                  float32(double(s) * (x - zp))

int16 tensors have zero point 0 (LiteRT enforces it for every op here but QUANTIZE and
DEQUANTIZE); the parameter functions raise ValueError otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import fixedpoint as fp
from ..ir.graph import Graph, Node
from . import qparams as qp
from .common import windows
from .interp import kernel

_f32 = np.float32
INT16_MIN, INT16_MAX = -32768, 32767

# TFLite's sigmoid_table_uint16: sigmoid(k / 24) in Q0.16, k = 0..255, as LiteRT's int16
# LOGISTIC and TANH interpolate it. The entries are not a closed formula of k (they are
# TFLite's tuned constants); these were measured through LiteRT's own int16 TANH kernel,
# and tests/ir/test_s16.py measures them again.
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


def _q(g: Graph, name: str):
    return qp._q(g, name)


def _symmetric(g: Graph, n: Node, *names: str) -> None:
    for name in names:
        t = g.tensors[name]
        if t.dtype == "int16" and any(t.quant.zero_point):
            raise ValueError(f"{n.name}: int16 {n.op} needs zero point 0 on {name} (TFLite's 16x8 scheme), "
                             f"got {t.quant.zero_point[0]}")


def _act16(g: Graph, n: Node) -> dict:
    lo, hi = fp.activation_range(n.attr("activation", "NONE"), _q(g, n.outputs[0]), "int16")
    return {"act_min": lo, "act_max": hi}


def store_int16(acc, act_min: int = INT16_MIN, act_max: int = INT16_MAX) -> np.ndarray:
    return np.clip(acc, act_min, act_max).astype(np.int16)


# --- parameters ------------------------------------------------------------------------

@qp.prepare("conv2d", "depthwise_conv2d", "transpose_conv2d", dtype="int16")
def conv_params(g: Graph, n: Node) -> qp.ConvParams:
    """16x8 convolutions: per-channel multipliers as int8's, no offsets, int64 rounding."""
    x, w, out = n.inputs[0], n.inputs[1], n.outputs[0]
    _symmetric(g, n, x, out)
    channels = g.tensors[out].shape[-1]
    mult, shift = qp._per_channel_multipliers(_q(g, x).s, qp._channel_scales(_q(g, w), channels), _q(g, out).s)
    return qp.ConvParams(input_offset=0, output_offset=0, output_multiplier=mult, output_shift=shift,
                         rounding=qp.INT64, **_act16(g, n))


@dataclass(frozen=True)
class FullyConnectedParams:
    """16x8 fully_connected (reference_integer_ops::FullyConnected[PerChannel] with float
    scales, which LiteRT runs for int16): acc = bias + sum x * (w + weights_offset) in int64,
    out = clamp(round_half_away(double(acc) * effective_scale[c])). The effective scale is
    double(s_in) * double(s_w[c]) / double(s_out) of the float32 scales; no integer
    multiplier reproduces that double product's rounding, so the kernel multiplies in double
    (once per output, not per MAC). Measured against LiteRT BUILTIN_REF."""

    weights_offset: int
    effective_scale: tuple[float, ...]
    act_min: int
    act_max: int
    per_channel: bool


@qp.prepare("fully_connected", dtype="int16")
def fully_connected_params(g: Graph, n: Node) -> FullyConnectedParams:
    x, w, out = n.inputs[0], n.inputs[1], n.outputs[0]
    _symmetric(g, n, x, out)
    qx, qw, qo = _q(g, x), _q(g, w), _q(g, out)
    per_channel = qw.per_channel and len(qw.scale) > 1
    scales = qw.scale if per_channel else qw.scale[:1]
    eff = tuple(float(_f32(qx.s)) * float(_f32(s)) / float(_f32(qo.s)) for s in scales)
    return FullyConnectedParams(weights_offset=0 if per_channel else -qw.zero_point[0], effective_scale=eff,
                                per_channel=per_channel, **_act16(g, n))


ADD_LEFT_SHIFT_16 = 15   # TFLite's headroom for the general int16 ADD / SUB


@qp.prepare("add", "sub", dtype="int16")
def add_params(g: Graph, n: Node) -> qp.AddParams:
    _symmetric(g, n, *n.inputs, n.outputs[0])
    q1, q2, qo = _q(g, n.inputs[0]), _q(g, n.inputs[1]), _q(g, n.outputs[0])
    s1, s2, so = (float(_f32(q.s)) for q in (q1, q2, qo))
    twice_max = 2.0 * max(s1, s2)
    m1, sh1 = fp.quantize_multiplier_smaller_than_one_exp(s1 / twice_max)
    m2, sh2 = fp.quantize_multiplier_smaller_than_one_exp(s2 / twice_max)
    mo, sho = fp.quantize_multiplier_smaller_than_one_exp(twice_max / ((1 << ADD_LEFT_SHIFT_16) * so))
    return qp.AddParams(input1_offset=0, input2_offset=0, output_offset=0, left_shift=ADD_LEFT_SHIFT_16,
                        input1_multiplier=m1, input1_shift=sh1, input2_multiplier=m2, input2_shift=sh2,
                        output_multiplier=mo, output_shift=sho, **_act16(g, n))


@dataclass(frozen=True)
class MulParams:
    """int16 mul: out = clamp(MBQM(x1 * x2, M, shift)), M from float32(s1 * s2) / s_out."""

    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int
    rounding: str = qp.DOUBLE


@qp.prepare("mul", dtype="int16")
def mul_params(g: Graph, n: Node) -> MulParams:
    _symmetric(g, n, *n.inputs, n.outputs[0])
    q1, q2, qo = _q(g, n.inputs[0]), _q(g, n.inputs[1]), _q(g, n.outputs[0])
    m, s = fp.quantize_multiplier(float(_f32(q1.s) * _f32(q2.s) / _f32(qo.s)))
    return MulParams(m, s, **_act16(g, n))


@dataclass(frozen=True)
class LeakyReluParams:
    """int16 leaky_relu (QuantizeLeakyRelu): x >= 0: MBQM(x, M_id); else MBQM(x, M_alpha)."""

    identity_multiplier: int
    identity_shift: int
    alpha_multiplier: int
    alpha_shift: int
    rounding: str = qp.DOUBLE


@qp.prepare("leaky_relu", dtype="int16")
def leaky_relu_params(g: Graph, n: Node) -> LeakyReluParams:
    _symmetric(g, n, n.inputs[0], n.outputs[0])
    qi, qo = _q(g, n.inputs[0]), _q(g, n.outputs[0])
    # LeakyReluPrepare: float products and quotients, then widened to double.
    mi, si = fp.quantize_multiplier(float(_f32(qi.s) / _f32(qo.s)))
    ma, sa = fp.quantize_multiplier(float(_f32(qi.s) * _f32(n.attr("alpha", 0.2)) / _f32(qo.s)))
    return LeakyReluParams(mi, si, ma, sa)


@dataclass(frozen=True)
class SigmoidTableParams:
    """int16 logistic / tanh: input_data = (x * input_multiplier + round) >> input_left_shift
    brings the input to the table's Q3.12 * 3 scale. Power-of-two input scales use the
    multiplier 3 << shift (input_multiplier 0 in LiteRT's OpData)."""

    input_multiplier: int
    input_left_shift: int


def _checked_log2(x: float) -> tuple[bool, int]:
    """TFLite CheckedLog2 (float arithmetic): (is a power of two within 1e-3, rounded log2)."""
    x_log2 = _f32(np.log(_f32(x))) * _f32(1.0 / np.log(_f32(2.0)))
    rounded = _f32(fp.tflite_round(x_log2))
    return bool(abs(x_log2 - rounded) < _f32(1e-3)), int(rounded)


@qp.prepare("logistic", "tanh", dtype="int16")
def sigmoid_table_params(g: Graph, n: Node) -> SigmoidTableParams:
    """SigmoidPrepare / TanhPrepare for int16 (kInputIntegerBits 3, output scale 2^-15)."""
    _symmetric(g, n, n.inputs[0], n.outputs[0])
    qi, qo = _q(g, n.inputs[0]), _q(g, n.outputs[0])
    out_pot, out_log2 = _checked_log2(qo.s)
    if not out_pot or out_log2 != -15:
        raise ValueError(f"{n.name}: int16 {n.op} output must have scale 1/32768, got {qo.s}")
    pot, log2 = _checked_log2(qi.s)
    left_shift = 12 + log2
    pot = pot and (left_shift == 0 or (n.op == "tanh" and left_shift == 1))
    if pot:
        return SigmoidTableParams(3 << left_shift, 0)
    multiplier = float(_f32(qi.s)) * 4096.0 * 3.0
    left_shift = 0
    while multiplier <= 32767.0 / 2.0 and left_shift <= 30:
        left_shift += 1
        multiplier *= 2.0
    return SigmoidTableParams(int(multiplier), left_shift)


@dataclass(frozen=True, eq=False)
class SoftmaxParams:
    """int16 softmax (reference_ops::SoftmaxInt16): the input difference to the row max is
    rescaled by MBQM(input_multiplier, input_left_shift) so that [-65535, 0] spans
    [-10, 0], exp() and 1/(1+x) come from two 513-entry interpolation tables."""

    input_multiplier: int
    input_left_shift: int
    exp_lut: np.ndarray
    one_over_one_plus_x_lut: np.ndarray


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
        midpoint_interp = rnd((val_next * inv + rnd(val * inv)) / 2)
        midpoint_err = midpoint_interp - rnd(val_mid * inv)
        bias = rnd(midpoint_err / 2)
        lut[i] = min(max(sample - bias, INT16_MIN), INT16_MAX)
    lut[steps] = min(max(rnd(fn(in_max) * inv), INT16_MIN), INT16_MAX)
    return lut


def lut_lookup(value, lut: np.ndarray) -> np.ndarray:
    """TFLite lut_lookup for int16: base lut[256 + (v >> 7)] plus the slope times the low
    7 bits, rounded ((slope * offset + 64) >> 7)."""
    v = np.asarray(value, np.int64)
    index = 256 + (v >> 7)
    offset = v & 0x7F
    base = lut[index]
    slope = ((lut[index + 1] - base + 32768) & 0xFFFF) - 32768   # int16 subtraction
    return (((base + ((slope * offset + 64) >> 7)) + 32768) & 0xFFFF) - 32768


_RANGE16 = INT16_MAX - INT16_MIN   # 65535


@qp.prepare("softmax", dtype="int16")
def softmax_params(g: Graph, n: Node) -> SoftmaxParams:
    _symmetric(g, n, n.inputs[0], n.outputs[0])
    qi, qo = _q(g, n.inputs[0]), _q(g, n.outputs[0])
    if abs(qo.s - 1 / 32768) > 0.001 / 32768:
        raise ValueError(f"{n.name}: int16 softmax output must have scale 1/32768, got {qo.s}")
    exp_lut = lut_populate_int16(np.exp, 10.0 / _RANGE16, INT16_MAX, 2.0 / _RANGE16, 0)
    recip_lut = lut_populate_int16(lambda v: 1.0 / (1.0 + v), 1.0 / _RANGE16, INT16_MIN, 2.0 / _RANGE16, 0)
    beta = float(_f32(n.attr("beta", 1.0)))
    # input->params.scale * params->beta is a float product, then divided in double.
    m, s = fp.quantize_multiplier(float(_f32(qi.s) * _f32(beta)) / (10.0 / 65535.0))
    return SoftmaxParams(m, s, exp_lut, recip_lut)


@dataclass(frozen=True)
class RequantizeParams:
    """int8/int16 -> int8/int16 QUANTIZE (reference_ops::Requantize):
    out = clamp(MBQM(x - input_zero_point, M, shift) + output_zero_point), M = s_in / s_out."""

    multiplier: int
    shift: int
    input_zero_point: int
    output_zero_point: int
    out_min: int
    out_max: int


@dataclass(frozen=True)
class QuantizeParams:
    """float32 -> int16: q = clamp(round_half_away(x / scale) + zero_point)."""

    scale: float
    zero_point: int


_RANGES = {"int8": (-128, 127), "int16": (INT16_MIN, INT16_MAX)}


@qp.prepare("quantize", dtype="int16")
def quantize_params(g: Graph, n: Node):
    xt, yt = g.tensors[n.inputs[0]], g.tensors[n.outputs[0]]
    qo = _q(g, n.outputs[0])
    if xt.dtype == "float32":
        return QuantizeParams(float(_f32(qo.s)), qo.zp)
    qi = _q(g, n.inputs[0])
    m, s = fp.quantize_multiplier(float(_f32(qi.s)) / float(_f32(qo.s)))
    return RequantizeParams(m, s, qi.zp, qo.zp, *_RANGES[yt.dtype])


# --- kernels ---------------------------------------------------------------------------

def _requant(acc, p) -> np.ndarray:
    return fp.multiply_by_quantized_multiplier_int64(acc, np.array(p.output_multiplier), np.array(p.output_shift))


@kernel("conv2d", dtype="int16")
def _conv2d(g, n, x, w, bias):
    co, kh, kw, ci = w.shape
    p = conv_params(g, n)
    cols = windows(x.astype(np.float64), n, kh, kw)
    acc = np.rint(cols.reshape(-1, kh * kw * ci) @ w.reshape(co, -1).T.astype(np.float64)).astype(np.int64)
    if bias is not None:
        acc += bias.astype(np.int64)
    return store_int16(_requant(acc, p).reshape(cols.shape[:3] + (co,)), p.act_min, p.act_max)


@kernel("depthwise_conv2d", dtype="int16")
def _depthwise_conv2d(g, n, x, w, bias):
    _, kh, kw, co = w.shape
    p = conv_params(g, n)
    channel_of = np.arange(co) // (co // x.shape[3])
    cols = windows(x.astype(np.float64), n, kh, kw)[..., channel_of]
    acc = np.rint(np.einsum("nhwijc,ijc->nhwc", cols, w[0].astype(np.float64))).astype(np.int64)
    if bias is not None:
        acc += bias.astype(np.int64)
    return store_int16(_requant(acc, p), p.act_min, p.act_max)


@kernel("transpose_conv2d", dtype="int16")
def _transpose_conv2d(g, n, x, w, bias):
    co, kh, kw, ci = w.shape
    nb, ih, iw, _ = x.shape
    sh, sw = n.attrs["stride"]
    pt, pl = n.attrs["padding"][:2]
    oh, ow = n.attrs["output_hw"]
    p = conv_params(g, n)
    xs, ws = x.astype(np.float64), w.astype(np.float64)
    full_h, full_w = max((ih - 1) * sh + kh, pt + oh), max((iw - 1) * sw + kw, pl + ow)
    acc = np.zeros((nb, full_h, full_w, co), np.float64)
    for ky in range(kh):
        for kx in range(kw):
            acc[:, ky:ky + (ih - 1) * sh + 1:sh, kx:kx + (iw - 1) * sw + 1:sw] += xs @ ws[:, ky, kx, :].T
    acc = np.rint(acc[:, pt:pt + oh, pl:pl + ow]).astype(np.int64)
    if bias is not None:
        acc += bias.astype(np.int64)
    return store_int16(_requant(acc, p), p.act_min, p.act_max)


@kernel("fully_connected", dtype="int16")
def _fully_connected(g, n, x, w, bias):
    units, depth = w.shape
    p = fully_connected_params(g, n)
    ws = w.astype(np.float64) + p.weights_offset
    acc = np.rint(x.reshape(-1, depth).astype(np.float64) @ ws.T).astype(np.int64)
    if bias is not None:
        acc += bias.astype(np.int64)
    scaled = fp.tflite_round(acc.astype(np.float64) * np.array(p.effective_scale, np.float64))
    return store_int16(np.clip(scaled, -2**31, 2**31 - 1), p.act_min, p.act_max)


def rescaled(v, p: qp.AddParams, which: int) -> np.ndarray:
    """ADD/SUB's per-input rescale to the common scale: MBQMSmallerThanOneExp(x << shift)."""
    mult, shift = ((p.input1_multiplier, p.input1_shift) if which == 1 else (p.input2_multiplier, p.input2_shift))
    return fp.multiply_by_quantized_multiplier_smaller_than_one_exp(np.asarray(v, np.int64) << p.left_shift,
                                                                    mult, shift)


@kernel("add", "sub", dtype="int16")
def _add_sub(g, n, a, b):
    p = add_params(g, n)
    x1, x2 = rescaled(a, p, 1), rescaled(b, p, 2)
    total = x1 + x2 if n.op == "add" else x1 - x2
    out = fp.multiply_by_quantized_multiplier_smaller_than_one_exp(total, p.output_multiplier, p.output_shift)
    return store_int16(out, p.act_min, p.act_max)


@kernel("mul", dtype="int16")
def _mul(g, n, a, b):
    p = mul_params(g, n)
    out = fp.multiply_by_quantized_multiplier(a.astype(np.int64) * b.astype(np.int64), p.output_multiplier,
                                              p.output_shift)
    return store_int16(out, p.act_min, p.act_max)


@kernel("leaky_relu", dtype="int16")
def _leaky_relu(g, n, x):
    p = leaky_relu_params(g, n)
    v = x.astype(np.int64)
    out = np.where(v >= 0, fp.multiply_by_quantized_multiplier(v, p.identity_multiplier, p.identity_shift),
                   fp.multiply_by_quantized_multiplier(v, p.alpha_multiplier, p.alpha_shift))
    return store_int16(out)


def logistic16(x, p: SigmoidTableParams) -> np.ndarray:
    """reference_integer_ops::Logistic (int16): interpolate sigmoid_table in Q0.16 with 9
    fraction bits, mirror negative inputs, round to Q0.15."""
    rnd = (1 << (p.input_left_shift - 1)) if p.input_left_shift > 0 else 0
    v = (np.asarray(x, np.int64) * p.input_multiplier + rnd) >> p.input_left_shift
    a = np.abs(v)
    uh = a >> 9
    idx = np.minimum(uh, 254)
    ua, ub = SIGMOID_TABLE[idx], SIGMOID_TABLE[idx + 1]
    result = np.where(uh >= 255, 0x7FFF << 10, (ua << 9) + (a & 0x1FF) * (ub - ua))
    result = np.where(v >= 0, result + (1 << 9), (1 << 25) - result + (1 << 9) - 1)
    return (((result >> 10) + 32768) & 0xFFFF) - 32768


def tanh16(x, p: SigmoidTableParams) -> np.ndarray:
    """reference_integer_ops::Tanh (int16): tanh(x) = 2 sigmoid(2x) - 1 on the same table,
    8 fraction bits."""
    rnd = (1 << (p.input_left_shift - 1)) if p.input_left_shift > 0 else 0
    v = (np.asarray(x, np.int64) * p.input_multiplier + rnd) >> p.input_left_shift
    a = np.abs(v)
    uh = a >> 8
    idx = np.minimum(uh, 254)
    ua, ub = SIGMOID_TABLE[idx], SIGMOID_TABLE[idx + 1]
    result = np.where(uh >= 255, 0xFFFF << 8, (ua << 8) + (a & 0xFF) * (ub - ua))
    result = np.where(v >= 0, result - (1 << 23) + (1 << 7), -result + (1 << 23) + (1 << 7) - 1)
    return (((result >> 8) + 32768) & 0xFFFF) - 32768


@kernel("logistic", dtype="int16")
def _logistic(g, n, x):
    return logistic16(x, sigmoid_table_params(g, n)).astype(np.int16)


@kernel("tanh", dtype="int16")
def _tanh(g, n, x):
    return tanh16(x, sigmoid_table_params(g, n)).astype(np.int16)


def softmax16(x, p: SoftmaxParams) -> np.ndarray:
    """reference_ops::SoftmaxInt16 over the last axis."""
    xi = np.asarray(x, np.int64)
    diff = xi - xi.max(axis=-1, keepdims=True)
    scaled = fp.multiply_by_quantized_multiplier(diff, p.input_multiplier, p.input_left_shift)
    sym = np.clip(scaled + 32767, INT16_MIN, INT16_MAX)
    exps = lut_lookup(sym, p.exp_lut)                                   # Q0.15
    sums = exps.sum(axis=-1, keepdims=True)                             # Q16.15
    headroom_plus_one = fp.count_leading_zeros_u32(sums)
    shifted = ((sums << (headroom_plus_one - 1)) + (1 << 13)) >> 14
    sym_sum = np.clip(shifted - ((1 << 15) + (1 << 16)), INT16_MIN, INT16_MAX)
    recip = lut_lookup(sym_sum, p.one_over_one_plus_x_lut)              # Q0.15
    right_shift = 31 - headroom_plus_one
    out = (exps * recip + (np.int64(1) << (right_shift - 1))) >> right_shift
    return np.clip(out, 0, INT16_MAX)


@kernel("softmax", dtype="int16")
def _softmax(g, n, x):
    return softmax16(x, softmax_params(g, n)).astype(np.int16)


def requantize16(x, p: RequantizeParams) -> np.ndarray:
    v = fp.multiply_by_quantized_multiplier(np.asarray(x, np.int64) - p.input_zero_point, p.multiplier, p.shift)
    return np.clip(v + p.output_zero_point, p.out_min, p.out_max)


@kernel("quantize", dtype="int16")
def _quantize(g, n, x):
    p = quantize_params(g, n)
    out_dtype = np.int16 if g.tensors[n.outputs[0]].dtype == "int16" else np.int8
    if isinstance(p, QuantizeParams):
        q = fp.tflite_round((x.astype(_f32) / _f32(p.scale)).astype(_f32).astype(np.float64))
        lo, hi = _RANGES[g.tensors[n.outputs[0]].dtype]
        return np.clip(q + p.zero_point, lo, hi).astype(out_dtype)
    return requantize16(x, p).astype(out_dtype)


@kernel("dequantize", dtype="int16")
def _dequantize(g, n, x):
    q = _q(g, n.inputs[0])
    return ((x.astype(np.float64) - q.zp) * float(_f32(q.s))).astype(np.float32)
