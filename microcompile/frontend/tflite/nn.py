"""The core NN family (ops.py) in TFLite: CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED,
AVERAGE_POOL_2D, ADD, RESHAPE, SOFTMAX and the standalone RELU, RELU6, RELU_N1_TO_1: the
converter of each builtin (@converter), then the writer of each op (@writer)."""
from __future__ import annotations

import numpy as np
import tflite

from ...errors import ModelFormatError, UnsupportedOpError
from ...ir.budget import elements
from ...ir.graph import Graph, Node, QuantParams, Tensor
from .reader import RAW_DTYPES, TFL_INT16, conv_attrs, converter, fused_activation, need_options, op_inputs, standalone
from .writer import activation_code, add_const, no_options, tflite_padding, writer

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


@converter("BATCH_MATMUL", options=("BatchMatMulOptions", ("AdjX", "AdjY", "AsymmetricQuantizeInputs")))
def _batch_matmul(ctx, op):
    o = op.options or {}
    if o.get("AsymmetricQuantizeInputs"):
        raise UnsupportedOpError(f"BATCH_MATMUL at layer {op.index} quantizes its float inputs at run time "
                                 "(asymmetric_quantize_inputs, a hybrid kernel)", hint="use a float32 or an int8 model")
    return "batch_matmul", op_inputs(ctx, op, 2, 2), {"adj_x": bool(o.get("AdjX", False)),
                                                      "adj_y": bool(o.get("AdjY", False))}


@converter("AVERAGE_POOL_2D", options=("Pool2DOptions", ("Padding", "StrideW", "StrideH", "FilterWidth", "FilterHeight",
                                             "FusedActivationFunction")))
def _average_pool2d(ctx, op):
    ins = op_inputs(ctx, op, 1, 1)
    o = need_options(op)
    k = (o["FilterHeight"], o["FilterWidth"])
    attrs = conv_attrs(ctx, op, k)
    del attrs["dilation"]
    return "average_pool2d", ins, dict(attrs, filter=k)


def pot_scale_int16_problem(raw, op) -> str | None:
    """ADD / SUB with int16 tensors and pot_scale_int16 (the schema's default) whose scales
    are all powers of two run LiteRT's power-of-two kernel, which we do not implement."""
    if not (op.options or {}).get("PotScaleInt16", True):
        return None
    ts = [raw.tensors[i] for i in (*op.inputs[:2], op.outputs[0]) if i >= 0]
    if any(t.type != TFL_INT16 for t in ts):
        return None
    pot = all(t.scale and float(np.log2(t.scale[0])).is_integer() for t in ts)
    return f"{op.opname} with int16 power-of-two scales and pot_scale_int16" if pot else None


@converter("ADD", options=("AddOptions", ("FusedActivationFunction", "PotScaleInt16")),
           problem=pot_scale_int16_problem)
def _add(ctx, op):
    return "add", op_inputs(ctx, op, 2, 2), {"activation": fused_activation(op)}


@converter("RESHAPE", options=("ReshapeOptions", ("NewShape",)))
def _reshape(ctx, op):
    """Target shape: the output tensor's static shape; else options.new_shape; else the
    constant shape input. The shape input never becomes an input of our node."""
    ins = op_inputs(ctx, op, 1, 1)
    out = ctx.raw.tensors[op.outputs[0]]
    # The input's shape as inferred (a stored intermediate shape may be stale).
    size = elements(ctx.shape(op.inputs[0]))
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
            known = elements([s for s in shape if s != -1])
            shape[shape.index(-1)] = size // known if known else 0
        if elements(shape) == size:
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


# --- the writers ----------------------------------------------------------------------

def _zero_bias(g: Graph, n: Node, name: str) -> Tensor:
    """LiteRT's DEPTHWISE_CONV_2D requires a bias: zeros with the conventional quantization."""
    x, w = g.tensors[n.inputs[0]], g.tensors[n.inputs[1]]
    channels = w.shape[3]
    if x.dtype == "float32":
        return Tensor(name, (channels,), "float32", data=np.zeros(channels, np.float32))
    scales = tuple(float(np.float32(x.quant.s) * np.float32(s)) for s in w.quant.scale)
    quant = QuantParams(scales, (0,) * len(scales), 0 if len(scales) > 1 else None)
    if x.dtype == "int16":   # 16x8: LiteRT wants an int64 bias
        return Tensor(name, (channels,), "int64", quant, data=np.zeros(channels, np.int64))
    return Tensor(name, (channels,), "int32", quant, data=np.zeros(channels, np.int32))


def _depthwise_inputs(g: Graph, n: Node, tensors: dict) -> list[str]:
    if n.inputs[2]:
        return list(n.inputs)
    bias = _zero_bias(g, n, f"{n.name}/zero_bias")
    return [n.inputs[0], n.inputs[1], add_const(tensors, bias.name, bias.data, bias.quant)]


def _reshape_inputs(g: Graph, n: Node, tensors: dict) -> list[str]:
    """TFLite's RESHAPE takes the target shape as an int32 input too."""
    shape = np.array(g.tensors[n.outputs[0]].shape, dtype=np.int32)
    return list(n.inputs) + [add_const(tensors, f"{n.name}/shape", shape)]


@writer("conv2d", "CONV_2D")
@writer("depthwise_conv2d", "DEPTHWISE_CONV_2D", inputs=_depthwise_inputs)
def _conv_options(b, g: Graph, n: Node):
    x, w = g.tensors[n.inputs[0]], g.tensors[n.inputs[1]]
    padding = tflite_padding(n, x.shape[1:3], w.shape[1:3])
    sh, sw = n.attrs.get("stride", (1, 1))
    dh, dw = n.attrs.get("dilation", (1, 1))
    act = activation_code(n)
    if n.op == "conv2d":
        tflite.Conv2DOptionsStart(b)
        tflite.Conv2DOptionsAddPadding(b, padding)
        tflite.Conv2DOptionsAddStrideH(b, sh)
        tflite.Conv2DOptionsAddStrideW(b, sw)
        tflite.Conv2DOptionsAddDilationHFactor(b, dh)
        tflite.Conv2DOptionsAddDilationWFactor(b, dw)
        tflite.Conv2DOptionsAddFusedActivationFunction(b, act)
        return tflite.BuiltinOptions.Conv2DOptions, tflite.Conv2DOptionsEnd(b)
    tflite.DepthwiseConv2DOptionsStart(b)
    tflite.DepthwiseConv2DOptionsAddPadding(b, padding)
    tflite.DepthwiseConv2DOptionsAddStrideH(b, sh)
    tflite.DepthwiseConv2DOptionsAddStrideW(b, sw)
    tflite.DepthwiseConv2DOptionsAddDilationHFactor(b, dh)
    tflite.DepthwiseConv2DOptionsAddDilationWFactor(b, dw)
    tflite.DepthwiseConv2DOptionsAddDepthMultiplier(b, n.attrs.get("depth_multiplier", 1))
    tflite.DepthwiseConv2DOptionsAddFusedActivationFunction(b, act)
    return tflite.BuiltinOptions.DepthwiseConv2DOptions, tflite.DepthwiseConv2DOptionsEnd(b)


@writer("fully_connected", "FULLY_CONNECTED")
def _fc_options(b, g, n):
    tflite.FullyConnectedOptionsStart(b)
    tflite.FullyConnectedOptionsAddFusedActivationFunction(b, activation_code(n))
    tflite.FullyConnectedOptionsAddKeepNumDims(b, bool(n.attrs.get("keep_num_dims", False)))
    return tflite.BuiltinOptions.FullyConnectedOptions, tflite.FullyConnectedOptionsEnd(b)


@writer("batch_matmul", "BATCH_MATMUL")
def _batch_matmul_options(b, g, n):
    tflite.BatchMatMulOptionsStart(b)
    tflite.BatchMatMulOptionsAddAdjX(b, bool(n.attrs.get("adj_x", False)))
    tflite.BatchMatMulOptionsAddAdjY(b, bool(n.attrs.get("adj_y", False)))
    return tflite.BuiltinOptions.BatchMatMulOptions, tflite.BatchMatMulOptionsEnd(b)


@writer("average_pool2d", "AVERAGE_POOL_2D")
def pool_options(b, g, n):
    x = g.tensors[n.inputs[0]]
    kh, kw = n.attrs["filter"]
    padding = tflite_padding(n, x.shape[1:3], (kh, kw))
    sh, sw = n.attrs.get("stride", (1, 1))
    tflite.Pool2DOptionsStart(b)
    tflite.Pool2DOptionsAddPadding(b, padding)
    tflite.Pool2DOptionsAddStrideH(b, sh)
    tflite.Pool2DOptionsAddStrideW(b, sw)
    tflite.Pool2DOptionsAddFilterHeight(b, kh)
    tflite.Pool2DOptionsAddFilterWidth(b, kw)
    tflite.Pool2DOptionsAddFusedActivationFunction(b, activation_code(n))
    return tflite.BuiltinOptions.Pool2DOptions, tflite.Pool2DOptionsEnd(b)


@writer("add", "ADD")
def _add_options(b, g, n):
    tflite.AddOptionsStart(b)
    tflite.AddOptionsAddFusedActivationFunction(b, activation_code(n))
    # int16: the general-scale kernel (the schema's default, true, picks a power-of-two one).
    tflite.AddOptionsAddPotScaleInt16(b, False)
    return tflite.BuiltinOptions.AddOptions, tflite.AddOptionsEnd(b)


@writer("reshape", "RESHAPE", inputs=_reshape_inputs)
def _reshape_options(b, g, n):
    shape = g.tensors[n.outputs[0]].shape
    tflite.ReshapeOptionsStartNewShapeVector(b, len(shape))
    for d in reversed(shape):
        b.PrependInt32(d)
    vec = b.EndVector()
    tflite.ReshapeOptionsStart(b)
    tflite.ReshapeOptionsAddNewShape(b, vec)
    return tflite.BuiltinOptions.ReshapeOptions, tflite.ReshapeOptionsEnd(b)


@writer("softmax", "SOFTMAX")
def _softmax_options(b, g, n):
    tflite.SoftmaxOptionsStart(b)
    tflite.SoftmaxOptionsAddBeta(b, float(n.attrs.get("beta", 1.0)))
    return tflite.BuiltinOptions.SoftmaxOptions, tflite.SoftmaxOptionsEnd(b)


for _op, _builtin in (("relu", "RELU"), ("relu6", "RELU6"), ("relu_n1_to_1", "RELU_N1_TO_1")):
    writer(_op, _builtin)(no_options)
