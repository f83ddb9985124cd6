"""Reference-interpreter kernels of the elementwise family (ops_elementwise).

int8 numbers come from `qparams_elementwise` (the same records the C lowering reads);
float32 follows TFLite's reference kernels in float32 arithmetic.
"""

from __future__ import annotations

import numpy as np

from ..ir import fixedpoint as fp
from . import qparams_elementwise as qe
from .common import clamp_float, store_int8
from .interp import kernel

_f32 = np.float32


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
    p = qe.sub_params(graph, node)
    if not _int8(graph, node):
        return clamp_float(a.astype(_f32) - b.astype(_f32), p)
    x1, x2 = _rescaled_inputs(p, a, b)
    out = fp.multiply_by_quantized_multiplier_smaller_than_one_exp(x1 - x2, p.output_multiplier, p.output_shift)
    return store_int8(out, p.output_offset, p.act_min, p.act_max)


@kernel("mul")
def _mul(graph, node, a, b):
    p = qe.mul_params(graph, node)
    if not _int8(graph, node):
        return clamp_float(a.astype(_f32) * b.astype(_f32), p)
    prod = (a.astype(np.int64) + p.input1_offset) * (b.astype(np.int64) + p.input2_offset)
    out = fp.multiply_by_quantized_multiplier(prod, p.output_multiplier, p.output_shift)
    return store_int8(out, p.output_offset, p.act_min, p.act_max)


@kernel("div")
def _div(graph, node, a, b):
    # float32 only (verify rejects int8): IEEE division, then the fused clamp.
    return clamp_float(a.astype(_f32) / b.astype(_f32), qe.mul_params(graph, node))


@kernel("maximum")
def _maximum(graph, node, a, b):
    return np.maximum(a, b)


@kernel("minimum")
def _minimum(graph, node, a, b):
    return np.minimum(a, b)


@kernel("squared_difference")
def _squared_difference(graph, node, a, b):
    if not _int8(graph, node):
        d = (a.astype(_f32) - b.astype(_f32)).astype(_f32)
        return (d * d).astype(_f32)
    p = qe.squared_difference_params(graph, node)
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
    p = qe.prelu_params(graph, node)
    v = x.astype(np.int64) + p.input_offset
    va = alpha.astype(np.int64) + p.alpha_offset
    pos = fp.multiply_by_quantized_multiplier(v, p.identity_multiplier, p.identity_shift)
    neg = fp.multiply_by_quantized_multiplier(v * va, p.alpha_multiplier, p.alpha_shift)
    return store_int8(np.where(v >= 0, pos, neg), p.output_offset, -128, 127)


def _table(graph, node, x):
    """Any int8 op of qe.TABLES: index its 256-entry table."""
    return qe.int8_table(graph, node)[x.astype(np.int64) + 128]


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
    p = qe.quantize_params(graph, node)
    q = fp.tflite_round((x.astype(_f32) / _f32(p.scale)).astype(_f32).astype(np.float64))
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
    from ..ir.fixedpoint_log import log_softmax_int8
    return log_softmax_int8(x, qe.log_softmax_params(graph, node))


kernel("leaky_relu")(_float_unary(_leaky_relu_f))
kernel("logistic")(_float_unary(_logistic_f))
kernel("tanh")(_float_unary(_tanh_f))
kernel("hard_swish")(_float_unary(_hard_swish_f))
