"""Interpreter kernels of the vision family (ops_vision).

int8 semantics follow qparams_vision (which says which LiteRT reference kernel each op
runs); float32 computes in float32 as TFLite does.
"""

from __future__ import annotations

import numpy as np

from ..ir import fixedpoint as fp
from .common import clamp_float, is_int8, requantize, store_int8, windows
from .interp import kernel
from . import qparams_vision as qv
from ..ir.graph import Graph, Node


@kernel("transpose_conv2d")
def _transpose_conv2d(graph: Graph, node: Node, x, w, bias):
    co, kh, kw, ci = w.shape
    n, ih, iw, _ = x.shape
    sh, sw = node.attrs["stride"]
    pt, pl = node.attrs["padding"][:2]
    oh, ow = node.attrs["output_hw"]
    p = qv.transpose_conv_params(graph, node)
    int8 = is_int8(graph, node)
    xs = x.astype(np.float64) + p.input_offset if int8 else x.astype(np.float32)
    ws = w.astype(np.float64) if int8 else w.astype(np.float32)
    # Scatter each filter tap into a canvas wide enough for every tap, then crop the padding.
    full_h, full_w = max((ih - 1) * sh + kh, pt + oh), max((iw - 1) * sw + kw, pl + ow)
    acc = np.zeros((n, full_h, full_w, co), xs.dtype)
    for ky in range(kh):
        for kx in range(kw):
            acc[:, ky:ky + (ih - 1) * sh + 1:sh, kx:kx + (iw - 1) * sw + 1:sw] += xs @ ws[:, ky, kx, :].T
    acc = acc[:, pt:pt + oh, pl:pl + ow]
    if int8:
        acc = np.rint(acc).astype(np.int64)
        if bias is not None:
            acc += bias.astype(np.int64)
        acc = requantize(acc, np.array(p.output_multiplier), np.array(p.output_shift), p.rounding)
        return store_int8(acc, p.output_offset, p.act_min, p.act_max)
    if bias is not None:
        acc = acc + bias.astype(np.float32)
    return clamp_float(acc, p)


@kernel("max_pool2d")
def _max_pool2d(graph, node, x):
    kh, kw = node.attrs["filter"]
    p = qv.max_pool_params(graph, node)
    # Padding taps must never win: pad with the dtype's lowest value.
    low = -np.inf if x.dtype == np.float32 else np.iinfo(x.dtype).min
    top, left, bottom, right = node.attrs.get("padding", (0, 0, 0, 0))
    xp = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)), constant_values=low)
    m = windows(xp, node.replace(attrs=dict(node.attrs, padding=(0, 0, 0, 0))), kh, kw).max(axis=(3, 4))
    if x.dtype == np.float32:
        return clamp_float(m, p)
    return np.clip(m, p.act_min, p.act_max).astype(np.int8)


@kernel("mean")
def _mean(graph, node, x):
    axes = tuple(node.attrs["axes"])
    keep = node.attrs.get("keep_dims", False)
    p = qv.mean_params(graph, node)
    if p is None:
        total = x.astype(np.float32).sum(axis=axes, keepdims=keep, dtype=np.float32)
        count = int(np.prod([x.shape[a] for a in axes]))
        return (total / np.float32(count)).astype(np.float32)
    total = x.astype(np.int64).sum(axis=axes, keepdims=keep)
    out = fp.multiply_by_quantized_multiplier(total - p.input_zero_point * p.count, p.multiplier,
                                              p.shift) + p.output_zero_point
    return np.clip(out, -128, 127).astype(np.int8)


@kernel("pad", "pad_v2")
def _pad(graph, node, x):
    value = qv.pad_value(graph, node)
    return np.pad(x, tuple(node.attrs["pads"]), constant_values=value)


@kernel("resize_nearest_neighbor")
def _resize_nearest_neighbor(graph, node, x):
    ys, xs = qv.resize_axes(graph, node)
    return x[:, ys][:, :, xs]


@kernel("resize_bilinear")
def _resize_bilinear(graph, node, x):
    ya, xa = qv.resize_axes(graph, node)
    if x.dtype == np.float32:
        dy = ya.frac[None, :, None, None]
        dx = xa.frac[None, None, :, None]
        one = np.float32(1)

        def tap(yi, xi):
            return x[:, yi][:, :, xi]

        out = (tap(ya.lo, xa.lo) * (one - dy) * (one - dx) + tap(ya.hi, xa.lo) * dy * (one - dx)
               + tap(ya.lo, xa.hi) * (one - dy) * dx + tap(ya.hi, xa.hi) * dy * dx)
        return out.astype(np.float32)
    xi = x.astype(np.int64)
    dy = ya.frac.astype(np.int64)[None, :, None, None]
    dx = xa.frac.astype(np.int64)[None, None, :, None]

    def tap(yi, xi_):
        return xi[:, yi][:, :, xi_]

    total = (tap(ya.lo, xa.lo) * (1024 - dy) * (1024 - dx) + tap(ya.hi, xa.lo) * dy * (1024 - dx)
             + tap(ya.lo, xa.hi) * (1024 - dy) * dx + tap(ya.hi, xa.hi) * dy * dx)
    return bilinear_round(total).astype(np.int8)


def bilinear_round(total):
    """(total +/- 2^19) / 2^20 with C's truncating division: half away from zero."""
    num = np.where(total > 0, total + (1 << 19), total - (1 << 19))
    return np.sign(num) * (np.abs(num) >> 20)
