"""The vision family (ops_vision): kernel parameters (TFLM's "Prepare", computed once on the
host) and the interpreter kernels. The lowerings read the same records, so the two cannot
disagree. Semantics measured against LiteRT 2.x BUILTIN_REF:

  transpose_conv2d  reference_integer_ops::TransposeConv: scatter sum of (x - zp_in) * w into
                    int32, + bias, DOUBLE requantization per channel; the conv2d multipliers
                    (qparams.conv_params) apply unchanged.
  max_pool2d        max over the in-bounds window, then the fused clamp; no requantization.
  mean              reference_ops::QuantizedMeanOrSum (see MeanParams).
  pad / pad_v2      copy, fill with the output zero point (PAD) or the constant (PADV2).
  resize_nearest    index maps in float32 as GetNearestNeighbor computes them.
  resize_bilinear   float32: TFLite's float interpolation from float32 source coordinates;
                    int8: ResizeBilinearInteger, 10-bit fixed-point coordinates.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import fixedpoint as fp
from ..ir.budget import elements
from ..ir.graph import Graph, Node
from . import qparams as qp
from .common import clamp_float, is_int8, requantize, store_int8, windows
from .interp import kernel



transpose_conv_params = qp.conv_params


@qp.prepare("max_pool2d")
def max_pool_params(graph: Graph, node: Node):
    """The fused activation clamp in the output's number space (int8) or as floats."""
    if qp._is_float(graph, node):
        return qp._float_act(node)
    return qp.PoolParams(**qp._act_kw(graph, node), rounding="none")


@dataclass(frozen=True)
class MeanParams:
    """int8 mean (reference_ops::QuantizedMeanOrSum, for every axis set).

    out = clamp(MBQM(sum(x) - zp_in * count, mult, shift) + zp_out), DOUBLE rounding, where
    mult/shift are those of double(in_s) / double(out_s) with 1/count folded in:
    extra = min(63 - clz64(count), 32, 31 + shift) more bits, mult = (mult << extra) / count.
    Measured: LiteRT 2.x BUILTIN_REF uses this kernel even for 4-D H,W with keep_dims; the
    older reference_integer_ops::Mean (requantize, then divide with rounding) differs from
    it by one LSB on about one case in five.
    """

    count: int
    input_zero_point: int
    output_zero_point: int
    multiplier: int
    shift: int
    rounding: str = qp.DOUBLE


@qp.prepare("mean")
def mean_params(graph: Graph, node: Node) -> MeanParams | None:
    """int8 mean parameters; None for float32 (a plain sum / count)."""
    if qp._is_float(graph, node):
        return None
    x = graph.tensors[node.inputs[0]]
    qi, qo = qp._q(graph, node.inputs[0]), qp._q(graph, node.outputs[0])
    count = elements([x.shape[a] for a in node.attrs["axes"]])
    mult, shift = fp.quantize_multiplier(float(np.float32(qi.s)) / float(np.float32(qo.s)))
    extra = min(63 - _clz64(count), 32, 31 + shift)
    return MeanParams(count, qi.zp, qo.zp, (mult << extra) // count, shift - extra, qp.rounding(node, qp.DOUBLE))


def _clz64(v: int) -> int:
    return 64 - int(v).bit_length()


def pad_value(graph: Graph, node: Node):
    """The fill value in the output's number space: PAD fills with the output zero point
    (int8) or 0.0; PADV2 with its constant, which TFLite copies as raw int8/float."""
    out = graph.tensors[node.outputs[0]]
    if node.op == "pad_v2":
        return np.float32(node.attrs["value"]) if out.dtype == "float32" else int(node.attrs["value"])
    return np.float32(0.0) if out.dtype == "float32" else qp._q(graph, node.outputs[0]).zp


def _scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    if align_corners and out_size > 1:
        return np.float32(in_size - 1) / np.float32(out_size - 1)
    return np.float32(in_size) / np.float32(out_size)


def nearest_index(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> np.ndarray:
    """GetNearestNeighbor for every output coordinate (float32 arithmetic, as TFLite)."""
    scale = _scale(in_size, out_size, align_corners)
    v = (np.arange(out_size, dtype=np.float32) + np.float32(0.5 if half_pixel else 0.0)) * scale
    idx = (fp.tflite_round(v) if align_corners else np.floor(v)).astype(np.int64)
    idx = np.minimum(idx, in_size - 1)
    return np.maximum(idx, 0).astype(np.int32) if half_pixel else idx.astype(np.int32)


@dataclass(frozen=True)
class BilinearAxis:
    """Per output coordinate along one axis: the two source rows and the source position.

    float32: `pos` is the float32 source coordinate, `frac` = pos - lo (float32).
    int8: `pos` is the coordinate in 1/1024 units, `frac` = pos - 1024 * lo.
    """

    lo: np.ndarray
    hi: np.ndarray
    frac: np.ndarray


def bilinear_axis(in_size: int, out_size: int, align_corners: bool, half_pixel: bool, integer: bool) -> BilinearAxis:
    v = np.arange(out_size, dtype=np.int64)
    if integer:   # ComputeInterpolationValuesInteger
        denom, num = (out_size - 1, in_size - 1) if align_corners and out_size > 1 else (out_size, in_size)
        scale_10 = ((1 << 10) * num + denom // 2) // denom
        pos = v * scale_10 + (scale_10 // 2 - (1 << 9) if half_pixel else 0)
        # pos >= -512, so C's truncating pos / 1024 clamped at 0 is a shift of max(pos, 0).
        lo = np.maximum(pos, 0) >> 10
        hi = np.minimum((pos + (1 << 10) - 1) >> 10, in_size - 1)
        return BilinearAxis(lo.astype(np.int32), hi.astype(np.int32), (pos - (lo << 10)).astype(np.int32))
    scale = _scale(in_size, out_size, align_corners)
    vf = v.astype(np.float32)
    pos = ((vf + np.float32(0.5)) * scale - np.float32(0.5)) if half_pixel else vf * scale
    pos = pos.astype(np.float32)
    lo = np.maximum(np.floor(pos).astype(np.int64), 0)
    hi = np.minimum(np.ceil(pos).astype(np.int64), in_size - 1)
    return BilinearAxis(lo.astype(np.int32), hi.astype(np.int32), (pos - lo.astype(np.float32)).astype(np.float32))


def resize_axes(graph: Graph, node: Node) -> tuple:
    """(y axis, x axis): index arrays (nearest) or BilinearAxis records (bilinear)."""
    x = graph.tensors[node.inputs[0]]
    (in_h, in_w), (out_h, out_w) = x.shape[1:3], node.attrs["size"]
    ac, hpc = bool(node.attrs.get("align_corners")), bool(node.attrs.get("half_pixel_centers"))
    if node.op == "resize_nearest_neighbor":
        return nearest_index(in_h, out_h, ac, hpc), nearest_index(in_w, out_w, ac, hpc)
    integer = x.dtype != "float32"
    return bilinear_axis(in_h, out_h, ac, hpc, integer), bilinear_axis(in_w, out_w, ac, hpc, integer)


qp.prepare("transpose_conv2d")(qp.conv_params)


# --- interpreter kernels --------------------------------------------------------------

@kernel("transpose_conv2d")
def _transpose_conv2d(graph: Graph, node: Node, x, w, bias):
    co, kh, kw, ci = w.shape
    n, ih, iw, _ = x.shape
    sh, sw = node.attrs["stride"]
    pt, pl = node.attrs["padding"][:2]
    oh, ow = node.attrs["output_hw"]
    p = transpose_conv_params(graph, node)
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
    p = max_pool_params(graph, node)
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
    p = mean_params(graph, node)
    if p is None:
        total = x.astype(np.float32).sum(axis=axes, keepdims=keep, dtype=np.float32)
        count = elements([x.shape[a] for a in axes])
        return (total / np.float32(count)).astype(np.float32)
    total = x.astype(np.int64).sum(axis=axes, keepdims=keep)
    out = requantize(total - p.input_zero_point * p.count, p.multiplier, p.shift, p.rounding) + p.output_zero_point
    return np.clip(out, -128, 127).astype(np.int8)


@kernel("pad", "pad_v2")
def _pad(graph, node, x):
    value = pad_value(graph, node)
    return np.pad(x, tuple(node.attrs["pads"]), constant_values=value)


@kernel("resize_nearest_neighbor")
def _resize_nearest_neighbor(graph, node, x):
    ys, xs = resize_axes(graph, node)
    return x[:, ys][:, :, xs]


@kernel("resize_bilinear")
def _resize_bilinear(graph, node, x):
    ya, xa = resize_axes(graph, node)
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
