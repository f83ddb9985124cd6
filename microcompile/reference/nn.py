"""Interpreter kernels of the core NN family (ops.py): conv2d (float, int8, hybrid),
depthwise_conv2d, fully_connected, average_pool2d, add, reshape, softmax and the
standalone relu / relu6 / relu_n1_to_1."""

from __future__ import annotations

import numpy as np

from ..ir import fixedpoint as fp
from . import plain, qparams as qp
from .common import (by_positions, clamp_float, hybrid_quantize, is_hybrid, is_int8, offset_input, requantize,
                     store_int8, windows)
from .interp import kernel


@kernel("conv2d")
def _conv2d(graph, node, x, w, bias):
    co, kh, kw, ci = w.shape
    p = qp.conv_params(graph, node)
    if is_hybrid(graph, node):
        # TFLite EvalHybrid: quantize the input per batch, integer conv (padding taps are
        # 0), then out = float(acc) * (input_scale * weight_scale) + bias, clamped.
        q, scale = hybrid_quantize(x)
        scale = (scale * np.float32(graph.tensors[node.inputs[1]].quant.scale[0])).astype(np.float32)
        cols = windows(q.astype(np.float64), node, kh, kw)
        acc = np.rint(_im2col_matmul(cols, w.reshape(co, -1).T.astype(np.float64)))
        acc = acc.astype(np.float32)
        y = (acc * scale[:, None, None, None]).astype(np.float32)
        if bias is not None:
            y = (y + bias.astype(np.float32)).astype(np.float32)
        return clamp_float(y, p)
    if is_int8(graph, node):
        cols = windows(offset_input(x, p.input_offset), node, kh, kw)
        acc = np.rint(_im2col_matmul(cols, w.reshape(co, -1).T.astype(np.float64))).astype(np.int64)
        if bias is not None:
            acc += bias.astype(np.int64)
        acc = requantize(acc, np.array(p.output_multiplier), np.array(p.output_shift), p.rounding)
        return store_int8(acc, p.output_offset, p.act_min, p.act_max)
    cols = windows(x.astype(np.float32), node, kh, kw)
    y = _im2col_matmul(cols, w.reshape(co, -1).T.astype(np.float32))
    if bias is not None:
        y = y + bias.astype(np.float32)
    return clamp_float(y, p)


def _im2col_matmul(cols: np.ndarray, wt: np.ndarray) -> np.ndarray:
    """Window view (N, OH, OW, KH, KW, C) @ filter (KH*KW*C, CO) -> (N, OH, OW, CO)."""
    def block(c):
        return (c.reshape(-1, wt.shape[0]) @ wt).reshape(c.shape[:3] + (wt.shape[1],))
    return by_positions(cols, block, wt.shape[0] * cols.itemsize)


@kernel("depthwise_conv2d")
def _depthwise_conv2d(graph, node, x, w, bias):
    _, kh, kw, co = w.shape
    mult = co // x.shape[3]
    p = qp.depthwise_conv_params(graph, node)
    # Output channel oc reads input channel oc // depth_multiplier.
    channel_of = np.arange(co) // mult
    if is_int8(graph, node):
        cols = windows(offset_input(x, p.input_offset), node, kh, kw)
        acc = np.rint(_depthwise_sum(cols, channel_of, w[0].astype(np.float64))).astype(np.int64)
        if bias is not None:
            acc += bias.astype(np.int64)
        acc = requantize(acc, np.array(p.output_multiplier), np.array(p.output_shift), p.rounding)
        return store_int8(acc, p.output_offset, p.act_min, p.act_max)
    y = _depthwise_sum(windows(x.astype(np.float32), node, kh, kw), channel_of, w[0].astype(np.float32))
    if bias is not None:
        y = y + bias.astype(np.float32)
    return clamp_float(y, p)


def _depthwise_sum(cols: np.ndarray, channel_of: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Window view (N, OH, OW, KH, KW, C), each output channel's input channel, filter
    (KH, KW, CO) -> (N, OH, OW, CO)."""
    def block(c):
        return np.einsum("nhwijc,ijc->nhwc", c[..., channel_of], w)
    return by_positions(cols, block, w.size * cols.itemsize)


@kernel("batch_matmul")
def _batch_matmul(graph, node, a, b):
    """float32: each output element a float32 sum over k (numpy's matmul, as TFLite's float
    BATCH_MATMUL; the order of the sum differs from C's by float rounding only). int8: see
    qparams.BatchMatMulParams."""
    a = np.swapaxes(a, -1, -2) if node.attrs.get("adj_x") else a
    b = np.swapaxes(b, -1, -2) if node.attrs.get("adj_y") else b
    p = qp.batch_matmul_params(graph, node)
    if p is not None:    # int8/int16: an exact int64 sum (depth * 2^30 is far below 2^62), then requantized
        acc = np.matmul(a.astype(np.int64) + p.lhs_offset, b.astype(np.int64) + p.rhs_offset)
        acc = requantize(acc, np.array(p.output_multiplier), np.array(p.output_shift), p.rounding)
        return np.clip(acc + p.output_offset, p.act_min, p.act_max).astype(a.dtype)
    return np.matmul(a.astype(np.float32), b.astype(np.float32)).astype(np.float32)


@kernel("fully_connected")
def _fully_connected(graph, node, x, w, bias):
    units, depth = w.shape
    p = qp.fully_connected_params(graph, node)
    if is_int8(graph, node):
        xs = x.reshape(-1, depth).astype(np.float64) + p.input_offset
        ws = w.astype(np.float64) + p.weights_offset
        acc = np.rint(xs @ ws.T).astype(np.int64)
        if bias is not None:
            acc += bias.astype(np.int64)
        acc = requantize(acc, np.array(p.output_multiplier), np.array(p.output_shift), p.rounding)
        return store_int8(acc, p.output_offset, p.act_min, p.act_max)
    y = x.reshape(-1, depth).astype(np.float32) @ w.T.astype(np.float32)
    if bias is not None:
        y = y + bias.astype(np.float32)
    return clamp_float(y, p)


@kernel("average_pool2d")
def _average_pool2d(graph, node, x):
    kh, kw = node.attrs["filter"]
    p = qp.average_pool_params(graph, node)
    # Padding pixels are excluded from the divisor: count the in-bounds taps.
    ones = np.ones((1,) + x.shape[1:3] + (1,), dtype=np.int64)
    count = windows(ones, node, kh, kw).sum(axis=(3, 4))
    if is_int8(graph, node):
        acc = windows(x.astype(np.int64), node, kh, kw).sum(axis=(3, 4))
        half = count // 2
        num = np.where(acc > 0, acc + half, acc - half)
        avg = np.sign(num) * (np.abs(num) // count)   # C division truncates toward zero
        return np.clip(avg, p.act_min, p.act_max).astype(np.int8)
    total = windows(x.astype(np.float32), node, kh, kw).sum(axis=(3, 4), dtype=np.float32)
    return clamp_float(total / count.astype(np.float32), p)


@kernel("add")
def _add(graph, node, a, b):
    if plain.is_int32(graph, node):
        return plain.binary_int32("add", a, b, node.attrs.get("activation", "NONE"))
    p = qp.add_params(graph, node)
    if not is_int8(graph, node):
        return clamp_float(a.astype(np.float32) + b.astype(np.float32), p)

    def scaled(v, offset, mult, shift):
        shifted = (v.astype(np.int64) + offset) << p.left_shift
        return fp.multiply_by_quantized_multiplier_smaller_than_one_exp(shifted, mult, shift)

    total = (scaled(a, p.input1_offset, p.input1_multiplier, p.input1_shift)
             + scaled(b, p.input2_offset, p.input2_multiplier, p.input2_shift))
    out = fp.multiply_by_quantized_multiplier_smaller_than_one_exp(total, p.output_multiplier, p.output_shift)
    return store_int8(out, p.output_offset, p.act_min, p.act_max)


@kernel("reshape")
def _reshape(graph, node, x):
    return x.reshape(graph.tensors[node.outputs[0]].shape)


@kernel("softmax")
def _softmax(graph, node, x):
    if not is_int8(graph, node):
        beta = np.float32(node.attr("beta", 1.0))
        xf = x.astype(np.float32)
        e = np.exp((xf - xf.max(axis=-1, keepdims=True)) * beta).astype(np.float32)
        return (e / e.sum(axis=-1, keepdims=True, dtype=np.float32)).astype(np.float32)
    p = qp.softmax_params(graph, node)
    xi = x.astype(np.int64)
    diff = xi - xi.max(axis=-1, keepdims=True)
    live = diff >= p.diff_min
    scaled = fp.multiply_by_quantized_multiplier_greater_than_one(
        np.where(live, diff, 0), p.input_multiplier, p.input_left_shift)
    exps = fp.exp_on_negative_values(scaled, qp.SOFTMAX_SCALED_DIFF_INTEGER_BITS)   # Q0.31
    sum_of_exps = np.where(live, fp.rescale(exps, 0, qp.SOFTMAX_ACCUMULATION_INTEGER_BITS), 0).sum(
        axis=-1, keepdims=True)
    shifted_scale, num_bits_over_unit = fp.get_reciprocal(sum_of_exps, qp.SOFTMAX_ACCUMULATION_INTEGER_BITS)
    unsat = fp.rounding_divide_by_pot(fp.saturating_rounding_doubling_high_mul(shifted_scale, exps),
                                      num_bits_over_unit + 31 - p.output_bits)
    lo, hi = p.output_offset, -p.output_offset - 1
    out = np.clip(unsat + p.output_offset, lo, hi)
    return np.where(live, out, lo).astype(np.int16 if p.output_bits == 16 else np.int8)


@kernel("relu", "relu6", "relu_n1_to_1")
def _activation(graph, node, x):
    p = qp.activation_params(graph, node)
    if not is_int8(graph, node):
        return clamp_float(x.astype(np.float32), p)
    acc = requantize(x.astype(np.int64) - p.input_zero_point, p.output_multiplier, p.output_shift,
                      p.rounding)
    return store_int8(acc, p.output_offset, p.act_min, p.act_max)
