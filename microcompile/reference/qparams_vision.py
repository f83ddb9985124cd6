"""Kernel parameters of the vision family (TFLM's "Prepare", computed once on the host).

The interpreter (interp_vision) and the lowerings (lower/vision_*.py) read these records,
so they cannot disagree. Semantics measured against LiteRT 2.x BUILTIN_REF:

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
from . import qparams as qp
from ..ir.graph import Graph, Node

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
    count = int(np.prod([x.shape[a] for a in node.attrs["axes"]], dtype=np.int64))
    mult, shift = fp.quantize_multiplier(float(np.float32(qi.s)) / float(np.float32(qo.s)))
    extra = min(63 - _clz64(count), 32, 31 + shift)
    return MeanParams(count, qi.zp, qo.zp, (mult << extra) // count, shift - extra)


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
