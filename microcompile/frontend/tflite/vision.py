"""The vision family (ops_vision) in TFLite: TRANSPOSE_CONV, MAX_POOL_2D, MEAN, PAD, PADV2,
RESIZE_NEAREST_NEIGHBOR, RESIZE_BILINEAR: the converter of each builtin (@converter), then
the writer of each op (@writer).

Their constant operands (output shape, paddings, axes, size, fill value) become attributes,
which the writers turn back into constant inputs; a non-constant one is a model we cannot
compile statically and raises UnsupportedOpError.
"""
from __future__ import annotations

import numpy as np
import tflite

from ...errors import ModelFormatError, UnsupportedOpError
from ...ir import ops
from ...ir.graph import Graph, Node
from ...ir.ops_vision import normalize_axes
from . import reader as r
from .nn import pool_options
from .reader import converter
from .writer import activation_code, add_const, no_options, writer

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


def _transpose_conv_output_shape(ctx, op) -> tuple[int, ...]:
    """The constant output_shape operand; where it is computed at run time (TFLM's seanet
    models feed it as a model input), the output tensor's stored shape, which TFLM runs from,
    when that shape is a whole NHWC shape with the weights' output channels. The operand is
    then read by nothing (`inspect` notes it); anything else stays a refusal."""
    shape_tensor = ctx.raw.tensors[op.inputs[0]]
    if shape_tensor.data is not None:
        return tuple(int(v) for v in _const_operand(ctx, op, 0, "output_shape"))
    stored = tuple(int(d) for d in ctx.raw.tensors[op.outputs[0]].shape) if op.outputs and op.outputs[0] >= 0 else ()
    w_shape = ctx.shape(op.inputs[1])
    # Refused (the non-constant operand named) unless the stored shape is whole and the operand a
    # model input; a shape an op computes is not folded yet.
    if len(stored) != 4 or min(stored) < 1 or len(w_shape) != 4 or stored[3] != w_shape[0] \
            or tuple(shape_tensor.shape) != (4,) or op.inputs[0] not in ctx.raw.inputs:
        _const_operand(ctx, op, 0, "output_shape")
    ctx.notes.append(f"TRANSPOSE_CONV at layer {op.index} takes its output shape {list(stored)} from its stored "
                     f"output tensor: its output_shape operand, model input {shape_tensor.name!r}, is read by "
                     f"nothing in the compiled model")
    return stored


@converter("TRANSPOSE_CONV", options=("TransposeConvOptions", ("Padding", "StrideW", "StrideH",
                                                                 "FusedActivationFunction")))
def _transpose_conv(ctx, op):
    if len(op.inputs) < 3 or min(op.inputs[:3]) < 0:
        raise ModelFormatError(f"TRANSPOSE_CONV at layer {op.index} needs output_shape, weights and input")
    out_shape = _transpose_conv_output_shape(ctx, op)
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
    from_input = ctx.name(op.inputs[0]) if ctx.raw.tensors[op.inputs[0]].data is None else ""
    return "transpose_conv2d", (ctx.name(op.inputs[2]), ctx.name(op.inputs[1]), bias), {
        "stride": stride, "padding": padding, "output_hw": out_shape[1:3], "activation": r.fused_activation(op),
        **({"output_shape_input": from_input} if from_input else {})}


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


# --- the writers ----------------------------------------------------------------------

def transpose_conv_padding(n: Node, k_hw) -> int:
    """SAME or VALID for a transpose_conv2d; TFLite derives the padding from the output size."""
    pad = tuple(n.attrs.get("padding", (0, 0, 0, 0)))
    stride, out = n.attrs.get("stride", (1, 1)), n.attrs["output_hw"]
    (t, b), (l, r) = (ops.same_padding(out[i], k_hw[i], stride[i], 1) for i in (0, 1))
    if pad == (t, l, b, r):
        return tflite.Padding.SAME
    if pad == (0, 0, 0, 0):
        return tflite.Padding.VALID
    raise ValueError(f"node {n.name}: padding {pad} is neither SAME {(t, l, b, r)} nor VALID")


def _transpose_conv_options(b, g: Graph, n: Node):
    k_hw = g.tensors[n.inputs[1]].shape[1:3]
    sh, sw = n.attrs.get("stride", (1, 1))
    tflite.TransposeConvOptionsStart(b)
    tflite.TransposeConvOptionsAddPadding(b, transpose_conv_padding(n, k_hw))
    tflite.TransposeConvOptionsAddStrideH(b, sh)
    tflite.TransposeConvOptionsAddStrideW(b, sw)
    tflite.TransposeConvOptionsAddFusedActivationFunction(b, activation_code(n))
    return tflite.BuiltinOptions.TransposeConvOptions, tflite.TransposeConvOptionsEnd(b)


def reducer_options(b, g, n):
    tflite.ReducerOptionsStart(b)
    tflite.ReducerOptionsAddKeepDims(b, bool(n.attrs.get("keep_dims", False)))
    return tflite.BuiltinOptions.ReducerOptions, tflite.ReducerOptionsEnd(b)


def _resize_options(b, g, n):
    ac, hpc = bool(n.attrs.get("align_corners")), bool(n.attrs.get("half_pixel_centers"))
    if n.op == "resize_bilinear":
        tflite.ResizeBilinearOptionsStart(b)
        tflite.ResizeBilinearOptionsAddAlignCorners(b, ac)
        tflite.ResizeBilinearOptionsAddHalfPixelCenters(b, hpc)
        return tflite.BuiltinOptions.ResizeBilinearOptions, tflite.ResizeBilinearOptionsEnd(b)
    tflite.ResizeNearestNeighborOptionsStart(b)
    tflite.ResizeNearestNeighborOptionsAddAlignCorners(b, ac)
    tflite.ResizeNearestNeighborOptionsAddHalfPixelCenters(b, hpc)
    return tflite.BuiltinOptions.ResizeNearestNeighborOptions, tflite.ResizeNearestNeighborOptionsEnd(b)


def _transpose_conv_inputs(g, n, tensors):
    x = g.tensors[n.inputs[0]]
    out = np.array(g.tensors[n.outputs[0]].shape, np.int32)
    shape = n.attrs.get("output_shape_input") or add_const(tensors, f"{n.name}/output_shape", out)
    return [shape, n.inputs[1], x.name] + ([n.inputs[2]] if n.inputs[2] else [])


def _pad_inputs(g, n, tensors):
    x = g.tensors[n.inputs[0]]
    inputs = [x.name, add_const(tensors, f"{n.name}/paddings", np.array(n.attrs["pads"], np.int32).reshape(-1, 2))]
    if n.op == "pad_v2":
        value = np.array([n.attrs["value"]], dtype={"int8": np.int8, "int16": np.int16}.get(x.dtype, np.float32))
        inputs.append(add_const(tensors, f"{n.name}/constant_values", value.reshape(()), x.quant))
    return inputs


def reduce_inputs(g, n, tensors):
    return [n.inputs[0], add_const(tensors, f"{n.name}/axes", np.array(n.attrs["axes"], np.int32))]


def _resize_inputs(g, n, tensors):
    return [n.inputs[0], add_const(tensors, f"{n.name}/size", np.array(n.attrs["size"], np.int32))]


# Inputs before options: the option functions name their input builders.
writer("transpose_conv2d", "TRANSPOSE_CONV", inputs=_transpose_conv_inputs)(_transpose_conv_options)
writer("max_pool2d", "MAX_POOL_2D")(pool_options)
writer("mean", "MEAN", inputs=reduce_inputs)(reducer_options)
writer("pad", "PAD", inputs=_pad_inputs)(no_options)
writer("pad_v2", "PADV2", inputs=_pad_inputs)(no_options)
writer("resize_nearest_neighbor", "RESIZE_NEAREST_NEIGHBOR", inputs=_resize_inputs)(_resize_options)
writer("resize_bilinear", "RESIZE_BILINEAR", inputs=_resize_inputs)(_resize_options)
