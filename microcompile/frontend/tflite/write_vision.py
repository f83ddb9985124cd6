"""TFLite writers of the vision family (ops_vision): builtin codes, options, and the
constant inputs TFLite wants where our IR has attributes (output_shape, paddings, axes,
constant value, size)."""

from __future__ import annotations

import numpy as np

import tflite

from ...ir import ops
from ...ir.graph import Graph, Node
from .write_nn import pool_options
from .writer import activation_code, add_const, no_options, writer



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
    shape = add_const(tensors, f"{n.name}/output_shape", out)
    return [shape, n.inputs[1], x.name] + ([n.inputs[2]] if n.inputs[2] else [])


def _pad_inputs(g, n, tensors):
    x = g.tensors[n.inputs[0]]
    inputs = [x.name, add_const(tensors, f"{n.name}/paddings", np.array(n.attrs["pads"], np.int32).reshape(-1, 2))]
    if n.op == "pad_v2":
        value = np.array([n.attrs["value"]], dtype=np.int8 if x.dtype == "int8" else np.float32)
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
