"""TFLite converters of the core NN family (ops.py): CONV_2D, DEPTHWISE_CONV_2D,
FULLY_CONNECTED, AVERAGE_POOL_2D, ADD, RESHAPE, SOFTMAX and the standalone RELU, RELU6,
RELU_N1_TO_1."""

from __future__ import annotations

import numpy as np

from ...errors import ModelFormatError
from .reader import RAW_DTYPES, conv_attrs, converter, fused_activation, need_options, op_inputs, standalone


@converter("CONV_2D", options=("Conv2DOptions", ("Padding", "StrideW", "StrideH", "FusedActivationFunction",
                                      "DilationWFactor", "DilationHFactor")))
def _conv2d(ctx, op):
    ins = op_inputs(ctx, op, 3, 2)
    _, kh, kw, _ = ctx.shape(op.inputs[1])
    return "conv2d", ins, conv_attrs(ctx, op, (kh, kw))


@converter("DEPTHWISE_CONV_2D", options=("DepthwiseConv2DOptions", ("Padding", "StrideW", "StrideH", "DepthMultiplier",
                                                         "FusedActivationFunction", "DilationWFactor",
                                                         "DilationHFactor")))
def _depthwise_conv2d(ctx, op):
    ins = op_inputs(ctx, op, 3, 2)
    _, kh, kw, _ = ctx.shape(op.inputs[1])
    attrs = conv_attrs(ctx, op, (kh, kw))
    # From the shapes, as TFLite's kernels do: old converters wrote 0 or stale values here.
    in_ch, out_ch = ctx.shape(op.inputs[0])[3], ctx.shape(op.inputs[1])[3]
    if in_ch <= 0 or out_ch % in_ch:
        raise ModelFormatError(f"DEPTHWISE_CONV_2D at layer {op.index}: filter channels {out_ch} "
                               f"are not a multiple of input channels {in_ch}")
    attrs["depth_multiplier"] = out_ch // in_ch
    return "depthwise_conv2d", ins, attrs


@converter("FULLY_CONNECTED", options=("FullyConnectedOptions", ("FusedActivationFunction", "WeightsFormat", "KeepNumDims")))
def _fully_connected(ctx, op):
    ins = op_inputs(ctx, op, 3, 2)
    o = op.options or {}
    return "fully_connected", ins, {"activation": fused_activation(op),
                                    "keep_num_dims": bool(o.get("KeepNumDims", False))}


@converter("AVERAGE_POOL_2D", options=("Pool2DOptions", ("Padding", "StrideW", "StrideH", "FilterWidth", "FilterHeight",
                                             "FusedActivationFunction")))
def _average_pool2d(ctx, op):
    ins = op_inputs(ctx, op, 1, 1)
    o = need_options(op)
    k = (o["FilterHeight"], o["FilterWidth"])
    attrs = conv_attrs(ctx, op, k)
    del attrs["dilation"]
    return "average_pool2d", ins, dict(attrs, filter=k)


@converter("ADD", options=("AddOptions", ("FusedActivationFunction",)))
def _add(ctx, op):
    return "add", op_inputs(ctx, op, 2, 2), {"activation": fused_activation(op)}


@converter("RESHAPE", options=("ReshapeOptions", ("NewShape",)))
def _reshape(ctx, op):
    """Target shape: the output tensor's static shape; else options.new_shape; else the
    constant shape input. The shape input never becomes an input of our node."""
    ins = op_inputs(ctx, op, 1, 1)
    x, out = ctx.raw.tensors[op.inputs[0]], ctx.raw.tensors[op.outputs[0]]
    size = int(np.prod(x.shape, dtype=np.int64))
    candidates = [out.shape if out.shape or size == 1 else None,
                  (op.options or {}).get("NewShape")]
    if len(op.inputs) > 1 and op.inputs[1] >= 0 and ctx.raw.tensors[op.inputs[1]].data is not None:
        st = ctx.raw.tensors[op.inputs[1]]
        candidates.append(tuple(np.frombuffer(st.data, RAW_DTYPES.get(st.type, ("", "<i4"))[1]).tolist()))
    for shape in candidates:
        if shape is None:
            continue
        shape = list(shape)
        if shape.count(-1) == 1:
            known = int(np.prod([s for s in shape if s != -1], dtype=np.int64))
            shape[shape.index(-1)] = size // known if known else 0
        if int(np.prod(shape, dtype=np.int64)) == size:
            ctx.shape_override[op.outputs[0]] = tuple(shape)
            return "reshape", ins, {"shape": tuple(shape)}
    raise ModelFormatError(f"RESHAPE at layer {op.index} ({out.name}): cannot determine a target "
                           f"shape with {size} elements")


@converter("SOFTMAX", options=("SoftmaxOptions", ("Beta",)))
def _softmax(ctx, op):
    # No options means beta 0, exactly as TFLite's own parser defaults it.
    return "softmax", op_inputs(ctx, op, 1, 1), {"beta": float((op.options or {}).get("Beta", 0.0))}


for _builtin, _op in (("RELU", "relu"), ("RELU6", "relu6"), ("RELU_N1_TO_1", "relu_n1_to_1")):
    converter(_builtin)(standalone(_op))
