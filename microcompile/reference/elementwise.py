"""The elementwise family (ops_elementwise): kernel parameters, TFLM "Prepare" style, and the
interpreter kernels that use them.

Each record holds every integer the int8 kernel needs; the numpy interpreter and the C
lowering both read them. What LiteRT BUILTIN_REF computes, measured op by op (power-of-two
and random scales; tests/ir/test_interp_ops.py keeps both in its plans):

  sub                 ADD's arithmetic (AddParams, left_shift 20), x1' - x2'
  mul                 out = MBQM((x1 - zp1) * (x2 - zp2), M, shift) + zp_out, DOUBLE rounding;
                      M from float32(s1 * s2) / s_out (float arithmetic, then widened)
  maximum, minimum    raw int8 max/min: no rescaling even when the scales differ
  squared_difference  inputs << 7, rescaled to 2*max(s1,s2) (smaller-than-one-exp), the
                      int32 difference squared, rescaled by (2*max)^2 / (2^14 * s_out)
  prelu               x >= zp: MBQM(x - zp, M1, s1); else MBQM((x - zp) * (a - zp_a), M2, s2);
                      M1 = float32(s_in / s_out), M2 = float32(s_in * s_a / s_out)
  log_softmax         reference_integer_ops::LogSoftmax (gemmlowp exp, log, Q5.26), output
                      scale 16/256, zero point 127

Unary ops whose output is a pure function of the input byte run as a 256-entry table
(`int8_table`): the table IS the reference arithmetic evaluated once per possible input.

  leaky_relu          x >= zp: MBQM(x - zp, M_id); else MBQM(x - zp, M_alpha) (QuantizeLeakyRelu)
  logistic, tanh      LiteRT's LUTPopulate: dequantize, f(x) in float32, round(f * (1/s_out)) + zp
  hard_swish          reference_ops::HardSwish: int16 fixed point, "reluish" multiplier
  quantize int8->int8 MBQM(x - zp_in, M, shift) + zp_out, M = double(s_in) / double(s_out)
  dequantize          float32(double(s) * (x - zp))
  rsqrt               RsqrtEvalQuantizedInt8: fixed-point 1/sqrt(x - zp_in) (Newton-Raphson) on
                      1 << 20, MBQM by QuantizeMultiplier(1 / (sqrtf(s_in) * s_out)) >> 20;
                      x = zp_in: 127; x < zp_in: LiteRT fails the Invoke, the table holds 127

float32 -> int8 quantize is computed, not tabled: round_half_away(x / s) + zp, clamped.
float32 kernels follow TFLite's reference kernels in float32 arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..ir import fixedpoint as fp
from ..ir.fixedpoint_log import LogSoftmaxParams, log_softmax_int8
from ..ir.graph import Graph, Node
from . import plain, qparams as qp
from .common import clamp_float, requantize, store_int8
from .interp import kernel

_f32 = np.float32


@dataclass(frozen=True)
class MulParams:
    input1_offset: int
    input2_offset: int
    output_offset: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int
    rounding: str = qp.DOUBLE


@dataclass(frozen=True)
class PreluParams:
    input_offset: int
    alpha_offset: int
    output_offset: int
    identity_multiplier: int
    identity_shift: int
    alpha_multiplier: int
    alpha_shift: int
    rounding: str = qp.DOUBLE


@dataclass(frozen=True)
class QuantizeParams:
    """float32 -> int8: q = clamp(round(x / scale) + zero_point), rounding half away from zero
    (TFLite) or, for ONNX's QuantizeLinear (rounding="onnx"), half to even."""

    scale: float
    zero_point: int
    half_even: bool = False


def _q(g: Graph, name: str):
    return qp._q(g, name)


def _is_float(g: Graph, n: Node) -> bool:
    return g.tensors[n.inputs[0]].dtype == "float32"


@qp.prepare("sub")
def sub_params(g: Graph, n: Node):
    """SUB's Prepare is ADD's (left shift 20, both inputs rescaled to 2*max scale)."""
    return qp.add_params(g, n)


@qp.prepare("mul")
def mul_params(g: Graph, n: Node):
    if _is_float(g, n):
        return qp._float_act(n)
    q1, q2, qo = _q(g, n.inputs[0]), _q(g, n.inputs[1]), _q(g, n.outputs[0])
    m, s = fp.quantize_multiplier(float(_f32(q1.s) * _f32(q2.s) / _f32(qo.s)))
    return MulParams(-q1.zp, -q2.zp, qo.zp, m, s, **qp._act_kw(g, n), rounding=qp.rounding(n, qp.DOUBLE))


SQUARED_DIFFERENCE_LEFT_SHIFT = 7


@qp.prepare("squared_difference")
def squared_difference_params(g: Graph, n: Node):
    """AddParams layout with left_shift 7; no fused activation (full int8 range)."""
    if _is_float(g, n):
        return None
    q1, q2, qo = _q(g, n.inputs[0]), _q(g, n.inputs[1]), _q(g, n.outputs[0])
    s1, s2, so = (float(_f32(q.s)) for q in (q1, q2, qo))
    twice_max = 2.0 * max(s1, s2)
    m1, sh1 = fp.quantize_multiplier_smaller_than_one_exp(s1 / twice_max)
    m2, sh2 = fp.quantize_multiplier_smaller_than_one_exp(s2 / twice_max)
    real_out = twice_max * twice_max / ((1 << (2 * SQUARED_DIFFERENCE_LEFT_SHIFT)) * so)
    mo, sho = fp.quantize_multiplier_smaller_than_one_exp(real_out)
    return qp.AddParams(input1_offset=-q1.zp, input2_offset=-q2.zp, output_offset=qo.zp,
                        left_shift=SQUARED_DIFFERENCE_LEFT_SHIFT, input1_multiplier=m1, input1_shift=sh1,
                        input2_multiplier=m2, input2_shift=sh2, output_multiplier=mo, output_shift=sho,
                        act_min=-128, act_max=127)


@qp.prepare("prelu")
def prelu_params(g: Graph, n: Node):
    if _is_float(g, n):
        return None
    qi, qa, qo = _q(g, n.inputs[0]), _q(g, n.inputs[1]), _q(g, n.outputs[0])
    m1, s1 = fp.quantize_multiplier(float(_f32(qi.s) / _f32(qo.s)))
    m2, s2 = fp.quantize_multiplier(float(_f32(qi.s) * _f32(qa.s) / _f32(qo.s)))
    return PreluParams(-qi.zp, -qa.zp, qo.zp, m1, s1, m2, s2)


LOG_SOFTMAX_SCALED_DIFF_INTEGER_BITS = 5
LOG_SOFTMAX_OUTPUT_SCALE = 16.0 / 256
LOG_SOFTMAX_OUTPUT_ZERO_POINT = 127


@qp.prepare("log_softmax")
def log_softmax_params(g: Graph, n: Node):
    if _is_float(g, n):
        return None
    qi, qo = _q(g, n.inputs[0]), _q(g, n.outputs[0])
    if qo.zp != LOG_SOFTMAX_OUTPUT_ZERO_POINT or float(_f32(qo.s)) != LOG_SOFTMAX_OUTPUT_SCALE:
        raise fp.KernelParamsError(f"int8 log_softmax output must be scale 16/256, zero point 127 (it is "
                                   f"{qo.s:g} / {qo.zp})")
    bits = LOG_SOFTMAX_SCALED_DIFF_INTEGER_BITS
    mult, left_shift = fp.preprocess_softmax_scaling(1.0, float(_f32(qi.s)), bits)
    # PreprocessLogSoftmaxScalingExp: the inverse of the input scaling, for the cutoff.
    reverse = float(1 << (31 - left_shift)) / float(mult)
    rmult, rshift = fp.quantize_multiplier_smaller_than_one_exp(reverse)
    return LogSoftmaxParams(mult, left_shift, rmult, -rshift,
                            -fp.calculate_input_radius(bits, left_shift))


def quantize_params(g: Graph, n: Node):
    """float32 -> int8 only; int8 -> int8 requantization is a table (int8_table)."""
    if not _is_float(g, n):
        return None
    qo = _q(g, n.outputs[0])
    return QuantizeParams(float(_f32(qo.s)), qo.zp, n.attrs.get("rounding", "tflite") == "onnx")


# --- 256-entry tables for the pure unary int8 ops ------------------------------------------

INT8_VALUES = np.arange(-128, 128, dtype=np.int64)


def _clamp8(v) -> np.ndarray:
    return np.clip(v, -128, 127).astype(np.int8)


def _leaky_relu_table(g, n, qi, qo):
    alpha = _f32(n.attr("alpha", 0.2))
    m_a, s_a = fp.quantize_multiplier(float(_f32(qi.s) * alpha / _f32(qo.s)))
    m_i, s_i = fp.quantize_multiplier(float(_f32(qi.s) / _f32(qo.s)))
    x = INT8_VALUES - qi.zp
    out = np.where(x >= 0, fp.multiply_by_quantized_multiplier(x, m_i, s_i),
                   fp.multiply_by_quantized_multiplier(x, m_a, s_a))
    return _clamp8(out + qo.zp)


def _float_lut(qi, qo, transform):
    """LiteRT LUTPopulate: every step in float32, round half away from zero."""
    x = (_f32(qi.s) * (INT8_VALUES - qi.zp).astype(np.float32)).astype(np.float32)
    y = transform(x).astype(np.float32)
    rescaled = fp.tflite_round((y * (_f32(1.0) / _f32(qo.s))).astype(np.float32))
    return _clamp8(rescaled.astype(np.float64) + qo.zp)


def _correctly_rounded(fn):
    """libm's float functions are correctly rounded for these inputs in practice: evaluate
    in double, round once to float32."""
    return lambda x: fn(x.astype(np.float64)).astype(np.float32)


def _sigmoid_f32(x):
    e = _correctly_rounded(np.exp)(-x)
    return (_f32(1.0) / (_f32(1.0) + e).astype(np.float32)).astype(np.float32)


def _logistic_table(g, n, qi, qo):
    return _float_lut(qi, qo, _sigmoid_f32)


def _tanh_table(g, n, qi, qo):
    return _float_lut(qi, qo, _correctly_rounded(np.tanh))


def _requantize_table(g, n, qi, qo):
    m, s = fp.quantize_multiplier(float(_f32(qi.s)) / float(_f32(qo.s)))
    if n.attrs.get("rounding", "tflite") == "onnx":   # DequantizeLinear -> QuantizeLinear: one rounding, to even
        return _clamp8(fp.multiply_by_quantized_multiplier_single_round_even(INT8_VALUES - qi.zp, m, s) + qo.zp)
    return _clamp8(fp.multiply_by_quantized_multiplier(INT8_VALUES - qi.zp, m, s) + qo.zp)


def _dequantize_table(g, n, qi, qo):
    return ((INT8_VALUES - qi.zp).astype(np.float64) * float(_f32(qi.s))).astype(np.float32)


def _hard_swish_table(g, n, qi, qo):
    return fp_hard_swish(INT8_VALUES, qi.zp, float(_f32(qi.s)), qo.zp, float(_f32(qo.s)))


def _abs_table(g, n, qi, qo):
    """LiteRT's AbsEval: |x - zp_in|, then requantized with QuantizeMultiplier(s_in / s_out)
    unless the scales are equal, + zp_out, clamped."""
    value = np.abs(INT8_VALUES.astype(np.int64) - qi.zp)
    if _f32(qi.s) != _f32(qo.s):
        m, s = fp.quantize_multiplier(float(_f32(qi.s)) / float(_f32(qo.s)))
        value = fp.multiply_by_quantized_multiplier(value, m, s)
    return _clamp8(value + qo.zp)


def _gelu_lut_transform(approximate: bool):
    """LiteRT's GELU transform as its LUT evaluates it: a float32 input, the formula in double
    (its constants are double), the result rounded once to float32."""
    def transform(x):
        xd = x.astype(np.float64)
        if approximate:
            inner = (x + np.float32(0.044715) * x * x * x).astype(np.float32).astype(np.float64)
            t = np.tanh((2 / math.sqrt(math.pi)) * math.sqrt(0.5) * inner)
            return (0.5 * xd * (1.0 + t)).astype(np.float32)
        return (0.5 * xd * (1.0 + _ERF(xd * math.sqrt(0.5)).astype(np.float64))).astype(np.float32)
    return transform


def _gelu_table(g, n, qi, qo):
    return _float_lut(qi, qo, _gelu_lut_transform(bool(n.attrs.get("approximate", False))))


RSQRT_SHIFT = 20   # LiteRT's kShift: 1/sqrt(x - zp) is carried as an integer in units of 2^-20


def rsqrt_multiplier(qi, qo) -> tuple[int, int]:
    """SetRsqrtOutputMultiplier: QuantizeMultiplier(1 / (sqrtf(s_in) * s_out)), the product in
    float32, its reciprocal in double. The second requantization shifts right by the
    multiplier's shift + 20 bits, which C cannot do past 31: such a shift (sqrt(s_in) * s_out
    above 2^12, where no output step is representable) is refused."""
    real = 1.0 / float(np.sqrt(_f32(qi.s)) * _f32(qo.s))
    mult, shift = fp.quantize_multiplier(real)
    if shift - RSQRT_SHIFT < -31:
        raise fp.KernelParamsError(f"int8 rsqrt: sqrt(input scale) * output scale is {1 / real:g}, beyond the "
                                   f"2^12 its fixed-point arithmetic can scale down by")
    return mult, shift


def _rsqrt_table(g, n, qi, qo):
    """LiteRT's RsqrtEvalQuantizedInt8 (TFLM's RsqrtEvalQuantized): v = x - zp_in; the inverse
    square root of v as a fixed-point multiplier (GetInvSqrtQuantizedMultiplierExp, reverse
    shift -1), applied to 1 << 20; that rescaled by rsqrt_multiplier, 2^-20 undone, + zp_out.

    v = 0 gives 127 ("any value close to 0 represents the max output value"). v < 0 makes
    LiteRT fail the Invoke ("Rsqrt is only defined for positive values"), a check per element
    that a table cannot make: those entries are 127 as well, the value of the nearest valid
    input (a variance is never below zero, and the converter and our PTQ give a non-negative
    tensor the zero point -128, so that no input lies below it)."""
    mult, shift = rsqrt_multiplier(qi, qo)
    v = INT8_VALUES - qi.zp
    inv_mult, inv_shift = fp.get_inv_sqrt_quantized_multiplier_exp(np.maximum(v, 1), -1)
    scaled = fp.multiply_by_quantized_multiplier(1, inv_mult, inv_shift + RSQRT_SHIFT)
    out = fp.multiply_by_quantized_multiplier(scaled, mult, shift - RSQRT_SHIFT)
    return np.where(v > 0, _clamp8(out + qo.zp), np.int8(127)).astype(np.int8)


_TABLES = {"leaky_relu": _leaky_relu_table, "logistic": _logistic_table, "tanh": _tanh_table,
           "hard_swish": _hard_swish_table, "abs": _abs_table, "gelu": _gelu_table, "rsqrt": _rsqrt_table,
           "quantize": _requantize_table, "dequantize": _dequantize_table}


def int8_table(g: Graph, n: Node) -> np.ndarray:
    """out[k] = op(int8 value k - 128): int8 for the int8 -> int8 ops, float32 for dequantize."""
    qi = _q(g, n.inputs[0])
    qo = g.tensors[n.outputs[0]].quant
    return _TABLES[n.op](g, n, qi, qo)


def uses_table(g: Graph, n: Node) -> bool:
    return n.op in _TABLES and g.tensors[n.inputs[0]].dtype == "int8"


@qp.prepare(*_TABLES)
def unary_params(g: Graph, n: Node):
    """The Prepare of the table ops: an int8 op's 256-entry table (LiteRT's Prepare builds the
    same LUTs, and refuses the scales it cannot compute with); float32 -> int8 quantize's
    QuantizeParams; None for the other float32 ops."""
    if uses_table(g, n):
        return int8_table(g, n)
    return quantize_params(g, n) if n.op == "quantize" else None


# --- hard_swish (reference_ops::HardSwish), int16 fixed point ---------------------------

def _sat16(x):
    return np.clip(x, -32768, 32767)


def _srdhm16(a, b):
    """gemmlowp SaturatingRoundingDoublingHighMul on int16: round(a*b / 2^15)."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    num = ab + nudge
    high = np.where(num >= 0, num >> 15, -((-num) >> 15))
    return np.where((a == -32768) & (b == -32768), 32767, high)


def _sdhm16(a, b):
    """SaturatingDoublingHighMul (no rounding): (a*b) / 2^15 truncated toward zero."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    ab = a * b
    high = np.where(ab >= 0, ab >> 15, -((-ab) >> 15))
    return np.where((a == -32768) & (b == -32768), 32767, high)


def _sat_left_shift16(x, e: int):
    return _sat16(np.asarray(x, np.int64) << e)


def _down_scale_to_int16(m32: int) -> int:
    """DownScaleInt32ToInt16Multiplier."""
    if m32 >= (1 << 31) - 1 - (1 << 15):
        return 32767
    return (m32 + (1 << 15)) >> 16


def hard_swish_multipliers(in_s: float, out_s: float) -> tuple[int, int, int, int]:
    """(output_multiplier_int16, output_exponent, reluish_multiplier_int16, reluish_exponent),
    from float32 arithmetic as HardSwishPrepare."""
    hires = _f32(1.0 / 128.0) * _f32(in_s)
    om, oe = fp.quantize_multiplier(float(_f32(hires / _f32(out_s))))
    rm, re = fp.quantize_multiplier(float(_f32(hires / _f32(3.0 / 32768.0))))
    return _down_scale_to_int16(om), oe, _down_scale_to_int16(rm), re


def fp_hard_swish(x, in_zp: int, in_s: float, out_zp: int, out_s: float) -> np.ndarray:
    om, oe, rm, re = hard_swish_multipliers(in_s, out_s)
    v = np.asarray(x, np.int64) - in_zp
    hires = _sat16(v * 128)   # int16 wraps in C; |v| <= 255 so v*128 fits
    preshift = _srdhm16(hires, om)
    reluish = hires
    if re > 0:
        reluish = _sat_left_shift16(reluish, re - 1)
    reluish = _srdhm16(reluish, rm)
    if re > 0:
        reluish = _sat_left_shift16(reluish, 1)
    if re < 0:
        reluish = fp.rounding_divide_by_pot(reluish, -re)
    reluish = (reluish + (1 << 15)) >> 1
    out = fp.rounding_divide_by_pot(_sdhm16(reluish, preshift), -oe)
    return _clamp8(out + out_zp)


# --- interpreter kernels --------------------------------------------------------------

def _int8(graph, node) -> bool:
    return graph.tensors[node.inputs[0]].dtype == "int8"


def _rescaled_inputs(p, a, b):
    """ADD-style: both inputs shifted left and rescaled to the common scale."""
    def scaled(v, offset, mult, shift):
        shifted = (v.astype(np.int64) + offset) << p.left_shift
        return fp.multiply_by_quantized_multiplier_smaller_than_one_exp(shifted, mult, shift)
    return (scaled(a, p.input1_offset, p.input1_multiplier, p.input1_shift),
            scaled(b, p.input2_offset, p.input2_multiplier, p.input2_shift))


@kernel("sub")
def _sub(graph, node, a, b):
    if plain.is_int32(graph, node):
        return plain.binary_int32("sub", a, b, node.attrs.get("activation", "NONE"))
    p = sub_params(graph, node)
    if not _int8(graph, node):
        return clamp_float(a.astype(_f32) - b.astype(_f32), p)
    x1, x2 = _rescaled_inputs(p, a, b)
    out = fp.multiply_by_quantized_multiplier_smaller_than_one_exp(x1 - x2, p.output_multiplier, p.output_shift)
    return store_int8(out, p.output_offset, p.act_min, p.act_max)


@kernel("mul")
def _mul(graph, node, a, b):
    if plain.is_int32(graph, node):
        return plain.binary_int32("mul", a, b, node.attrs.get("activation", "NONE"))
    p = mul_params(graph, node)
    if not _int8(graph, node):
        return clamp_float(a.astype(_f32) * b.astype(_f32), p)
    prod = (a.astype(np.int64) + p.input1_offset) * (b.astype(np.int64) + p.input2_offset)
    out = requantize(prod, p.output_multiplier, p.output_shift, p.rounding)
    return store_int8(out, p.output_offset, p.act_min, p.act_max)


@kernel("div")
def _div(graph, node, a, b):
    if plain.is_int32(graph, node):
        return plain.binary_int32("div", a, b, node.attrs.get("activation", "NONE"))
    # float32 (verify rejects int8): IEEE division, then the fused clamp.
    return clamp_float(a.astype(_f32) / b.astype(_f32), mul_params(graph, node))


@kernel("maximum")
def _maximum(graph, node, a, b):
    return np.maximum(a, b)


@kernel("minimum")
def _minimum(graph, node, a, b):
    return np.minimum(a, b)


@kernel("where")
def _where(graph, node, condition, x, y):
    return np.where(condition != 0, x, y)


@kernel("squared_difference")
def _squared_difference(graph, node, a, b):
    if not _int8(graph, node):
        d = (a.astype(_f32) - b.astype(_f32)).astype(_f32)
        return (d * d).astype(_f32)
    p = squared_difference_params(graph, node)
    x1, x2 = _rescaled_inputs(p, a, b)
    diff = x1 - x2
    out = fp.multiply_by_quantized_multiplier_smaller_than_one_exp(diff * diff, p.output_multiplier,
                                                                   p.output_shift)
    return store_int8(out, p.output_offset, p.act_min, p.act_max)


@kernel("prelu")
def _prelu(graph, node, x, alpha):
    if not _int8(graph, node):
        xf = x.astype(_f32)
        return np.where(xf >= 0, xf, (xf * alpha.astype(_f32)).astype(_f32))
    p = prelu_params(graph, node)
    v = x.astype(np.int64) + p.input_offset
    va = alpha.astype(np.int64) + p.alpha_offset
    pos = fp.multiply_by_quantized_multiplier(v, p.identity_multiplier, p.identity_shift)
    neg = fp.multiply_by_quantized_multiplier(v * va, p.alpha_multiplier, p.alpha_shift)
    return store_int8(np.where(v >= 0, pos, neg), p.output_offset, -128, 127)


def _table(graph, node, x):
    """Any int8 op of TABLES: index its 256-entry table."""
    return int8_table(graph, node)[x.astype(np.int64) + 128]


def _float_unary(fn):
    def kernel(graph, node, x):
        if _int8(graph, node):
            return _table(graph, node, x)
        return fn(node, x.astype(_f32)).astype(_f32)
    return kernel


def _leaky_relu_f(node, x):
    return np.where(x > 0, x, (x * _f32(node.attr("alpha", 0.2))).astype(_f32))


def _logistic_f(node, x):
    return _f32(1) / (_f32(1) + np.exp(-x).astype(_f32))


def _tanh_f(node, x):
    return np.tanh(x)


def _hard_swish_f(node, x):
    # reference_ops::HardSwish: x * min(6, max(0, x + 3)) / 6
    return (x * np.minimum(_f32(6), np.maximum(_f32(0), x + _f32(3))) / _f32(6)).astype(_f32)


@kernel("quantize")
def _quantize(graph, node, x):
    if _int8(graph, node):
        return _table(graph, node, x)
    p = quantize_params(graph, node)
    scaled = (x.astype(_f32) / _f32(p.scale)).astype(_f32).astype(np.float64)
    q = np.rint(scaled) if p.half_even else fp.tflite_round(scaled)
    return np.clip(q + p.zero_point, -128, 127).astype(np.int8)


@kernel("dequantize")
def _dequantize(graph, node, x):
    return _table(graph, node, x)


@kernel("log_softmax")
def _log_softmax(graph, node, x):
    if not _int8(graph, node):
        xf = x.astype(_f32)
        shifted = (xf - xf.max(axis=-1, keepdims=True)).astype(_f32)
        log_sum = np.log(np.exp(shifted).astype(_f32).sum(axis=-1, keepdims=True, dtype=_f32)).astype(_f32)
        return (shifted - log_sum).astype(_f32)
    return log_softmax_int8(x, log_softmax_params(graph, node))


kernel("leaky_relu")(_float_unary(_leaky_relu_f))
kernel("logistic")(_float_unary(_logistic_f))
kernel("tanh")(_float_unary(_tanh_f))
kernel("hard_swish")(_float_unary(_hard_swish_f))
kernel("abs")(_float_unary(lambda node, x: np.abs(x)))
kernel("sqrt")(_float_unary(lambda node, x: np.sqrt(x.astype(_f32))))
# 1 / sqrtf(x) in float32, as TFLite's RSQRT (two roundings); erff correctly rounded from double
kernel("rsqrt")(_float_unary(lambda node, x: (_f32(1) / np.sqrt(x.astype(_f32))).astype(_f32)))
kernel("erf")(_float_unary(lambda node, x: _ERF(x.astype(np.float64)).astype(np.float64).astype(_f32)))


_ERF = np.frompyfunc(math.erf, 1, 1)


# float32 GELU: the formula LiteRT's int8 table evaluates (in double, rounded once), which is
# within an ulp or two of PyTorch's and the C kernel's float32 evaluations.
kernel("gelu")(_float_unary(lambda node, x: _gelu_lut_transform(bool(node.attrs.get("approximate", False)))(x)))
