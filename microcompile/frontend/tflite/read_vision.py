"""TFLite converters of the vision family (ops_vision): TRANSPOSE_CONV, MAX_POOL_2D, MEAN,
PAD, PADV2, RESIZE_NEAREST_NEIGHBOR, RESIZE_BILINEAR.

Their constant operands (output shape, paddings, axes, size, fill value) become attributes;
a non-constant one is a model we cannot compile statically and raises UnsupportedOpError.
"""

from __future__ import annotations

import numpy as np

from ...errors import ModelFormatError, UnsupportedOpError
from ...ir.ops_vision import normalize_axes
from . import reader as r
from .reader import converter

# Raw little-endian numpy dtype of each TFLite TensorType a constant operand may use.
_RAW = {0: "<f4", 2: "<i4", 4: "<i8", 9: "<i1"}



def _const_operand(ctx, op, k: int, what: str) -> np.ndarray:
    """Input `k` of `op` as a numpy array; it must be a constant."""
    if len(op.inputs) <= k or op.inputs[k] < 0:
        raise ModelFormatError(f"{op.opname} at layer {op.index} has no {what} input")
    t = ctx.raw.tensors[op.inputs[k]]
    if t.data is None:
        raise UnsupportedOpError(f"{op.opname} at layer {op.index} ({r.out_name(ctx.raw, op)}) has a "
                                 f"non-constant {what}", hint="microcompile compiles static shapes only; "
                                 "export the model with constant sizes/paddings")
    if t.type not in _RAW:
        raise ModelFormatError(f"{op.opname} at layer {op.index}: {what} has unsupported type {t.type}")
    return np.frombuffer(t.data, _RAW[t.type]).reshape(t.shape)


@converter("TRANSPOSE_CONV", options=("TransposeConvOptions", ("Padding", "StrideW", "StrideH",
                                                                 "FusedActivationFunction")))
def _transpose_conv(ctx, op):
    if len(op.inputs) < 3 or min(op.inputs[:3]) < 0:
        raise ModelFormatError(f"TRANSPOSE_CONV at layer {op.index} needs output_shape, weights and input")
    out_shape = tuple(int(v) for v in _const_operand(ctx, op, 0, "output_shape"))
    x, w = ctx.raw.tensors[op.inputs[2]], ctx.raw.tensors[op.inputs[1]]
    if x.type == r.TFL_FLOAT32 and w.type == r.TFL_INT8:
        raise UnsupportedOpError(f"unsupported op hybrid TRANSPOSE_CONV (float32 input, int8 weights) at "
                                 f"layer {op.index} ({r.out_name(ctx.raw, op)})",
                                 hint="use a float32 or a fully int8-quantized model")
    o = r.need_options(op)
    stride = (o["StrideH"], o["StrideW"])
    if len(out_shape) != 4 or min(stride) < 1:
        raise ModelFormatError(f"TRANSPOSE_CONV at layer {op.index}: output_shape {out_shape}, stride {stride}")
    k_hw = ctx.shape(op.inputs[1])[1:3]
    # TFLite pads by the SAME/VALID rule applied to the output size (ComputePaddingHeightWidth).
    padding = r.padding(o["Padding"], out_shape[1:3], k_hw, stride, (1, 1))
    bias = ctx.name(op.inputs[3]) if len(op.inputs) > 3 else ""
    ctx.shape_override[op.outputs[0]] = out_shape
    return "transpose_conv2d", (ctx.name(op.inputs[2]), ctx.name(op.inputs[1]), bias), {
        "stride": stride, "padding": padding, "output_hw": out_shape[1:3], "activation": r.fused_activation(op)}


@converter("MAX_POOL_2D", options=("Pool2DOptions", ("Padding", "StrideW", "StrideH", "FilterWidth",
                                                         "FilterHeight", "FusedActivationFunction")))
def _max_pool2d(ctx, op):
    ins = r.op_inputs(ctx, op, 1, 1)
    o = r.need_options(op)
    k = (o["FilterHeight"], o["FilterWidth"])
    attrs = r.conv_attrs(ctx, op, k)
    del attrs["dilation"]
    return "max_pool2d", ins, dict(attrs, filter=k)


def reduction_attrs(ctx, op) -> dict:
    """MEAN / REDUCE_MAX: the constant axes operand and keep_dims."""
    rank = len(ctx.shape(op.inputs[0]))
    axes = normalize_axes(_const_operand(ctx, op, 1, "axes"), rank)
    return {"axes": axes, "keep_dims": bool((op.options or {}).get("KeepDims", False))}


@converter("MEAN", options=("ReducerOptions", ("KeepDims",)))
def _mean(ctx, op):
    ins = r.op_inputs(ctx, op, 1, 1)
    return "mean", ins, reduction_attrs(ctx, op)


@converter("PAD", "PADV2")
def _pad(ctx, op):
    ins = r.op_inputs(ctx, op, 1, 1)
    pads = _const_operand(ctx, op, 1, "paddings").reshape(-1, 2)
    attrs = {"pads": tuple((int(lo), int(hi)) for lo, hi in pads)}
    if op.opname == "PADV2" and len(op.inputs) > 2 and op.inputs[2] >= 0:
        value = _const_operand(ctx, op, 2, "constant_values").reshape(-1)[0]
        return "pad_v2", ins, dict(attrs, value=float(value) if value.dtype.kind == "f" else int(value))
    return "pad", ins, attrs


def _resize(our_op: str):
    def convert(ctx, op):
        ins = r.op_inputs(ctx, op, 1, 1)
        size = tuple(int(v) for v in _const_operand(ctx, op, 1, "size"))
        o = op.options or {}
        if len(ctx.shape(op.inputs[0])) != 4 or len(size) != 2:
            raise ModelFormatError(f"{op.opname} at layer {op.index} needs a 4-D input and a 2-element size")
        return our_op, ins, {"size": size, "align_corners": bool(o.get("AlignCorners", False)),
                             "half_pixel_centers": bool(o.get("HalfPixelCenters", False))}
    return convert


converter("RESIZE_NEAREST_NEIGHBOR", options=("ResizeNearestNeighborOptions", ("AlignCorners", "HalfPixelCenters")))(
    _resize("resize_nearest_neighbor"))
converter("RESIZE_BILINEAR", options=("ResizeBilinearOptions", ("AlignCorners", "HalfPixelCenters")))(
    _resize("resize_bilinear"))
