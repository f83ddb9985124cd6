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
  quantize                    int16 <-> int8, int16 -> int16, int16 <-> int32: MBQM(x - zp_in) + zp_out;
                              float32 -> int16: round half away(x / s) + zp
  dequantize                  float32(double(s) * (x - zp))

int16 tensors have zero point 0 (LiteRT enforces it for every op here but QUANTIZE and
DEQUANTIZE); the parameter functions raise ValueError otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import fixedpoint as fp, fixedpoint16 as fp16
from ..ir.graph import Graph, Node
from . import qparams as qp
from .interp import kernel

_f32 = np.float32
INT16_MIN, INT16_MAX = fp16.INT16_MIN, fp16.INT16_MAX



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


@qp.prepare("softmax", dtype="int16")
def softmax_params(g: Graph, n: Node) -> SoftmaxParams:
    _symmetric(g, n, n.inputs[0], n.outputs[0])
    qi, qo = _q(g, n.inputs[0]), _q(g, n.outputs[0])
    if abs(qo.s - 1 / 32768) > 0.001 / 32768:
        raise ValueError(f"{n.name}: int16 softmax output must have scale 1/32768, got {qo.s}")
    exp_lut, recip_lut = fp16.softmax_luts()
    beta = float(_f32(n.attr("beta", 1.0)))
    # input->params.scale * params->beta is a float product, then divided in double.
    m, s = fp.quantize_multiplier(float(_f32(qi.s) * _f32(beta)) / (10.0 / 65535.0))
    return SoftmaxParams(m, s, exp_lut, recip_lut)


@dataclass(frozen=True)
class RequantizeParams:
    """int8/int16/int32 -> int8/int16/int32 QUANTIZE (reference_ops::Requantize):
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


_RANGES = {"int8": (-128, 127), "int16": (INT16_MIN, INT16_MAX), "int32": (-(1 << 31), (1 << 31) - 1)}


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

def store_int16(acc, act_min: int = INT16_MIN, act_max: int = INT16_MAX) -> np.ndarray:
    return np.clip(acc, act_min, act_max).astype(np.int16)


def _requant(p) -> fp16.Requant:
    return fp16.Requant(p.output_multiplier, p.output_shift, p.act_min, p.act_max)


@kernel("conv2d", dtype="int16")
def _conv2d(g, n, x, w, bias):
    p = conv_params(g, n)
    return fp16.conv2d_s16(x, w, bias, _requant(p), n.attrs.get("stride", (1, 1)), n.attrs.get("dilation", (1, 1)),
                           n.attrs.get("padding", (0, 0, 0, 0)))


@kernel("depthwise_conv2d", dtype="int16")
def _depthwise_conv2d(g, n, x, w, bias):
    p = conv_params(g, n)
    return fp16.depthwise_s16(x, w, bias, _requant(p), n.attrs.get("stride", (1, 1)),
                              n.attrs.get("dilation", (1, 1)), n.attrs.get("padding", (0, 0, 0, 0)))


@kernel("transpose_conv2d", dtype="int16")
def _transpose_conv2d(g, n, x, w, bias):
    p = conv_params(g, n)
    return fp16.transpose_conv_s16(x, w, bias, _requant(p), n.attrs["stride"], n.attrs["padding"],
                                   n.attrs["output_hw"])


@kernel("fully_connected", dtype="int16")
def _fully_connected(g, n, x, w, bias):
    p = fully_connected_params(g, n)
    return fp16.fully_connected_s16(x, w, bias, p.weights_offset, p.effective_scale, p.act_min, p.act_max)


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


@kernel("logistic", dtype="int16")
def _logistic(g, n, x):
    p = sigmoid_table_params(g, n)
    return fp16.logistic16(x, p.input_multiplier, p.input_left_shift).astype(np.int16)


@kernel("tanh", dtype="int16")
def _tanh(g, n, x):
    p = sigmoid_table_params(g, n)
    return fp16.tanh16(x, p.input_multiplier, p.input_left_shift).astype(np.int16)


@kernel("softmax", dtype="int16")
def _softmax(g, n, x):
    p = softmax_params(g, n)
    return fp16.softmax16(x, p.input_multiplier, p.input_left_shift, p.exp_lut,
                          p.one_over_one_plus_x_lut).astype(np.int16)


def requantize16(x, p: RequantizeParams) -> np.ndarray:
    """Requantize with TFLM's int32 arithmetic: x - zp_in and + zp_out wrap (only an int32
    tensor can reach the wrap), then the clamp to the output type."""
    v = fp.multiply_by_quantized_multiplier(fp.wrap32(np.asarray(x, np.int64) - p.input_zero_point), p.multiplier,
                                            p.shift)
    return np.clip(fp.wrap32(v + p.output_zero_point), p.out_min, p.out_max)


@kernel("quantize", dtype="int16")
def _quantize(g, n, x):
    p = quantize_params(g, n)
    out_dtype = {"int8": np.int8, "int16": np.int16, "int32": np.int32}[g.tensors[n.outputs[0]].dtype]
    if isinstance(p, QuantizeParams):
        q = fp.tflite_round((x.astype(_f32) / _f32(p.scale)).astype(_f32).astype(np.float64))
        lo, hi = _RANGES[g.tensors[n.outputs[0]].dtype]
        return np.clip(q + p.zero_point, lo, hi).astype(out_dtype)
    return requantize16(x, p).astype(out_dtype)


@kernel("dequantize", dtype="int16")
def _dequantize(g, n, x):
    q = _q(g, n.inputs[0])
    return ((x.astype(np.float64) - q.zp) * float(_f32(q.s))).astype(np.float32)
