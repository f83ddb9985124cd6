"""Write a Graph as a .tflite flatbuffer (schema v3).

`write_tflite(graph) -> bytes` is the inverse of the reader for the ops microcompile
supports. Uses the flatc-generated builders of the `tflite` package.

Layout of the output:
  - buffer 0 is the empty sentinel; every constant gets its own buffer (16-byte aligned
    data), every other tensor points at buffer 0;
  - one subgraph; tensors in the Graph's dict order, then the tensors the writer adds:
    RESHAPE's int32 shape input and a zero bias for a bias-less DEPTHWISE_CONV_2D;
  - operator codes use the modern fields: builtin_code plus
    deprecated_builtin_code = min(code, 127).

Our explicit padding (top, left, bottom, right) is mapped to TFLite's SAME or VALID;
padding that is neither raises ValueError (TFLite cannot express it without a PAD op).
"""

from __future__ import annotations

import flatbuffers
import numpy as np

from ..ir import ops
from ..ir.graph import Graph, Node, QuantParams, Tensor

import tflite  # noqa: E402  (generated flatbuffer bindings)

SCHEMA_VERSION = 3

_TENSOR_TYPE = {"float32": tflite.TensorType.FLOAT32, "int32": tflite.TensorType.INT32,
                "int16": tflite.TensorType.INT16, "int8": tflite.TensorType.INT8}

_ACTIVATION = {"NONE": tflite.ActivationFunctionType.NONE,
               "RELU": tflite.ActivationFunctionType.RELU,
               "RELU6": tflite.ActivationFunctionType.RELU6,
               "RELU_N1_TO_1": tflite.ActivationFunctionType.RELU_N1_TO_1}

_BUILTIN = {"conv2d": tflite.BuiltinOperator.CONV_2D,
            "depthwise_conv2d": tflite.BuiltinOperator.DEPTHWISE_CONV_2D,
            "fully_connected": tflite.BuiltinOperator.FULLY_CONNECTED,
            "average_pool2d": tflite.BuiltinOperator.AVERAGE_POOL_2D,
            "add": tflite.BuiltinOperator.ADD,
            "reshape": tflite.BuiltinOperator.RESHAPE,
            "softmax": tflite.BuiltinOperator.SOFTMAX,
            "relu": tflite.BuiltinOperator.RELU,
            "relu6": tflite.BuiltinOperator.RELU6,
            "relu_n1_to_1": tflite.BuiltinOperator.RELU_N1_TO_1}


def tflite_padding(node: Node, in_hw: tuple[int, int], kernel_hw: tuple[int, int]) -> int:
    """SAME or VALID for the node's explicit padding; ValueError if it is neither."""
    pad = tuple(node.attrs.get("padding", (0, 0, 0, 0)))
    stride = node.attrs.get("stride", (1, 1))
    dilation = node.attrs.get("dilation", (1, 1))
    (t, b), (l, r) = (ops.same_padding(in_hw[i], kernel_hw[i], stride[i], dilation[i]) for i in (0, 1))
    if pad == (0, 0, 0, 0):
        return tflite.Padding.VALID
    if pad == (t, l, b, r):
        return tflite.Padding.SAME
    raise ValueError(f"node {node.name}: explicit padding {pad} is neither SAME {(t, l, b, r)} "
                     "nor VALID; TFLite cannot express it")


# --- builtin options, one function per op family; each returns (options type, offset) ----

def _conv_options(b, g: Graph, n: Node):
    x, w = g.tensors[n.inputs[0]], g.tensors[n.inputs[1]]
    padding = tflite_padding(n, x.shape[1:3], w.shape[1:3])
    sh, sw = n.attrs.get("stride", (1, 1))
    dh, dw = n.attrs.get("dilation", (1, 1))
    act = _ACTIVATION[n.attrs.get("activation", "NONE")]
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


def _fc_options(b, g, n):
    tflite.FullyConnectedOptionsStart(b)
    tflite.FullyConnectedOptionsAddFusedActivationFunction(b, _ACTIVATION[n.attrs.get("activation", "NONE")])
    tflite.FullyConnectedOptionsAddKeepNumDims(b, bool(n.attrs.get("keep_num_dims", False)))
    return tflite.BuiltinOptions.FullyConnectedOptions, tflite.FullyConnectedOptionsEnd(b)


def _pool_options(b, g, n):
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
    tflite.Pool2DOptionsAddFusedActivationFunction(b, _ACTIVATION[n.attrs.get("activation", "NONE")])
    return tflite.BuiltinOptions.Pool2DOptions, tflite.Pool2DOptionsEnd(b)


def _add_options(b, g, n):
    tflite.AddOptionsStart(b)
    tflite.AddOptionsAddFusedActivationFunction(b, _ACTIVATION[n.attrs.get("activation", "NONE")])
    return tflite.BuiltinOptions.AddOptions, tflite.AddOptionsEnd(b)


def _reshape_options(b, g, n):
    shape = g.tensors[n.outputs[0]].shape
    tflite.ReshapeOptionsStartNewShapeVector(b, len(shape))
    for d in reversed(shape):
        b.PrependInt32(d)
    vec = b.EndVector()
    tflite.ReshapeOptionsStart(b)
    tflite.ReshapeOptionsAddNewShape(b, vec)
    return tflite.BuiltinOptions.ReshapeOptions, tflite.ReshapeOptionsEnd(b)


def _softmax_options(b, g, n):
    tflite.SoftmaxOptionsStart(b)
    tflite.SoftmaxOptionsAddBeta(b, float(n.attrs.get("beta", 1.0)))
    return tflite.BuiltinOptions.SoftmaxOptions, tflite.SoftmaxOptionsEnd(b)


_OPTIONS = {"conv2d": _conv_options, "depthwise_conv2d": _conv_options,
            "fully_connected": _fc_options, "average_pool2d": _pool_options,
            "add": _add_options, "reshape": _reshape_options, "softmax": _softmax_options}


# --- flatbuffer helpers ----------------------------------------------------------------

def _int_vector(b, values, prepend) -> int:
    """A vector of scalars; `prepend` is the builder's Prepend<Type> for the element type."""
    size = 8 if prepend == b.PrependInt64 else 4
    b.StartVector(size, len(values), size)
    for v in reversed(list(values)):
        prepend(v)
    return b.EndVector()


def _bytes_vector(b, data: bytes, alignment: int = 16) -> int:
    b.StartVector(1, len(data), alignment)
    b.head -= len(data)
    b.Bytes[b.head:b.head + len(data)] = data
    return b.EndVector()


def _quantization(b, t: Tensor) -> int | None:
    q = t.quant
    if q is None:
        return None
    scale = _int_vector(b, [float(s) for s in q.scale], b.PrependFloat32)
    zp = _int_vector(b, [int(z) for z in q.zero_point], b.PrependInt64)
    tflite.QuantizationParametersStart(b)
    tflite.QuantizationParametersAddScale(b, scale)
    tflite.QuantizationParametersAddZeroPoint(b, zp)
    tflite.QuantizationParametersAddQuantizedDimension(b, q.axis or 0)
    return tflite.QuantizationParametersEnd(b)


def _tensor(b, t: Tensor, buffer: int) -> int:
    name = b.CreateString(t.name)
    shape = _int_vector(b, t.shape, b.PrependInt32)
    quant = _quantization(b, t)
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tflite.TensorAddType(b, _TENSOR_TYPE[t.dtype])
    tflite.TensorAddBuffer(b, buffer)
    tflite.TensorAddName(b, name)
    if quant is not None:
        tflite.TensorAddQuantization(b, quant)
    return tflite.TensorEnd(b)


def _unique(tensors: dict, name: str) -> str:
    while name in tensors:
        name += "_"
    return name


def _zero_bias(g: Graph, n: Node, name: str) -> Tensor:
    """LiteRT's DEPTHWISE_CONV_2D requires a bias: zeros with the conventional quantization."""
    x, w = g.tensors[n.inputs[0]], g.tensors[n.inputs[1]]
    channels = w.shape[3]
    if x.dtype == "float32":
        return Tensor(name, (channels,), "float32", data=np.zeros(channels, np.float32))
    scales = tuple(float(np.float32(x.quant.s) * np.float32(s)) for s in w.quant.scale)
    quant = QuantParams(scales, (0,) * len(scales), 0 if len(scales) > 1 else None)
    return Tensor(name, (channels,), "int32", quant, data=np.zeros(channels, np.int32))


# op -> fn(graph, node, tensors) -> the TFLite input names, in TFLite's order; `fn` may add
# the constant tensors TFLite wants (paddings, axes, sizes) to `tensors`. Op-family modules
# register here, as they do in _BUILTIN and _OPTIONS.
INPUT_BUILDERS: dict = {}


def _extra_inputs(g: Graph) -> tuple[dict[str, Tensor], dict[str, list[str]]]:
    """Inputs TFLite wants that our IR leaves implicit: RESHAPE's int32 shape tensor and
    DEPTHWISE_CONV_2D's bias."""
    tensors = dict(g.tensors)
    op_inputs = {}
    for n in g.nodes:
        inputs = list(n.inputs)
        if n.op == "reshape":
            shape = np.array(g.tensors[n.outputs[0]].shape, dtype=np.int32)
            name = _unique(tensors, f"{n.name}/shape")
            tensors[name] = Tensor(name, shape.shape, "int32", data=shape)
            inputs.append(name)
        if n.op == "depthwise_conv2d" and not n.inputs[2]:
            name = _unique(tensors, f"{n.name}/zero_bias")
            tensors[name] = _zero_bias(g, n, name)
            inputs[2] = name
        if n.op in INPUT_BUILDERS:
            inputs = INPUT_BUILDERS[n.op](g, n, tensors)
        op_inputs[n.name] = inputs
    return tensors, op_inputs


def write_tflite(graph: Graph, description: str = "microcompile") -> bytes:
    """Serialize `graph` (ops in `_BUILTIN`) to .tflite bytes. ValueError on what TFLite
    cannot express (unknown op, non-SAME/VALID padding)."""
    unsupported = sorted({n.op for n in graph.nodes if n.op not in _BUILTIN})
    if unsupported:
        raise ValueError(f"tflite_writer: unsupported ops {unsupported}")
    tensors, op_inputs = _extra_inputs(graph)
    index = {name: i for i, name in enumerate(tensors)}
    b = flatbuffers.Builder(1024)

    # Buffers: 0 is the empty sentinel, then one per constant.
    buffer_of, buffers = {}, [None]
    for name, t in tensors.items():
        if t.is_const:
            buffer_of[name] = len(buffers)
            buffers.append(np.ascontiguousarray(t.data, dtype=t.data.dtype.newbyteorder("<")).tobytes())
    buffer_offsets = []
    for data in buffers:
        vec = _bytes_vector(b, data) if data else None
        tflite.BufferStart(b)
        if vec is not None:
            tflite.BufferAddData(b, vec)
        buffer_offsets.append(tflite.BufferEnd(b))

    tensor_offsets = [_tensor(b, t, buffer_of.get(name, 0)) for name, t in tensors.items()]

    # Operator codes, in first-use order.
    opcodes = list(dict.fromkeys(_BUILTIN[n.op] for n in graph.nodes))
    code_offsets = []
    for code in opcodes:
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        tflite.OperatorCodeAddBuiltinCode(b, code)
        tflite.OperatorCodeAddVersion(b, 1)
        code_offsets.append(tflite.OperatorCodeEnd(b))

    op_offsets = []
    for n in graph.nodes:
        options = _OPTIONS[n.op](b, graph, n) if n.op in _OPTIONS else None
        inputs = _int_vector(b, [index[i] if i else -1 for i in op_inputs[n.name]], b.PrependInt32)
        outputs = _int_vector(b, [index[o] for o in n.outputs], b.PrependInt32)
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, opcodes.index(_BUILTIN[n.op]))
        tflite.OperatorAddInputs(b, inputs)
        tflite.OperatorAddOutputs(b, outputs)
        if options is not None:
            tflite.OperatorAddBuiltinOptionsType(b, options[0])
            tflite.OperatorAddBuiltinOptions(b, options[1])
        op_offsets.append(tflite.OperatorEnd(b))

    def table_vector(offsets):
        b.StartVector(4, len(offsets), 4)
        for off in reversed(offsets):
            b.PrependUOffsetTRelative(off)
        return b.EndVector()

    sg_tensors = table_vector(tensor_offsets)
    sg_inputs = _int_vector(b, [index[i] for i in graph.inputs], b.PrependInt32)
    sg_outputs = _int_vector(b, [index[o] for o in graph.outputs], b.PrependInt32)
    sg_ops = table_vector(op_offsets)
    sg_name = b.CreateString(graph.name)
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, sg_tensors)
    tflite.SubGraphAddInputs(b, sg_inputs)
    tflite.SubGraphAddOutputs(b, sg_outputs)
    tflite.SubGraphAddOperators(b, sg_ops)
    tflite.SubGraphAddName(b, sg_name)
    subgraph = tflite.SubGraphEnd(b)

    codes_vec = table_vector(code_offsets)
    subgraphs_vec = table_vector([subgraph])
    buffers_vec = table_vector(buffer_offsets)
    desc = b.CreateString(description)
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, SCHEMA_VERSION)
    tflite.ModelAddOperatorCodes(b, codes_vec)
    tflite.ModelAddSubgraphs(b, subgraphs_vec)
    tflite.ModelAddDescription(b, desc)
    tflite.ModelAddBuffers(b, buffers_vec)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


from . import tflite_writer_vision  # noqa: E402,F401  (registers its ops in the tables above)
from . import tflite_writer_shape  # noqa: E402,F401  (registers its ops in the tables above)
from . import tflite_writer_elementwise  # noqa: E402,F401  (registers its ops in the tables above)
from . import tflite_writer_reduce  # noqa: E402,F401  (registers its ops in the tables above)
