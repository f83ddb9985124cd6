"""Write a Graph as a .tflite flatbuffer (schema v3).

`write_tflite(graph) -> bytes` is the inverse of the reader for the ops microcompile
supports. Uses the flatc-generated builders of the `tflite` package. Each op's builtin
code, options and TFLite inputs come from its `@writer` entry in an op-family module
(write_*.py).

Layout of the output:
  - buffer 0 is the empty sentinel; every constant gets its own buffer (16-byte aligned
    data), every other tensor points at buffer 0;
  - one subgraph; tensors in the Graph's dict order, then the constant tensors the op
    writers add where our IR has attributes (RESHAPE's shape, PAD's paddings, ...);
  - operator codes use the modern fields: builtin_code plus
    deprecated_builtin_code = min(code, 127).

Our explicit padding (top, left, bottom, right) is mapped to TFLite's SAME or VALID.
Padding that is neither (PyTorch's symmetric padding of a strided or even-sized
convolution) becomes an explicit PAD before a VALID convolution, as the TFLite converter
writes it (`explicit_pads`; PADV2 with the lowest value before a max pool); only an
average pool with such padding cannot be written (ValueError).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import flatbuffers
import numpy as np
from flatbuffers import flexbuffers

from ...ir import ops, verify
from ...ir.graph import Graph, Node, QuantParams, Tensor
from ...ir.int4 import pack_int4

import tflite  # noqa: E402  (generated flatbuffer bindings)

SCHEMA_VERSION = 3

TENSOR_TYPE = {"float32": tflite.TensorType.FLOAT32, "int32": tflite.TensorType.INT32,
                "int16": tflite.TensorType.INT16, "int8": tflite.TensorType.INT8,
                "int64": tflite.TensorType.INT64, "int4": tflite.TensorType.INT4,
                "uint32": tflite.TensorType.UINT32, "uint64": tflite.TensorType.UINT64}

ACTIVATION = {"NONE": tflite.ActivationFunctionType.NONE,
               "RELU": tflite.ActivationFunctionType.RELU,
               "RELU6": tflite.ActivationFunctionType.RELU6,
               "RELU_N1_TO_1": tflite.ActivationFunctionType.RELU_N1_TO_1}

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


def _expressible(g: Graph, n: Node) -> bool:
    try:
        x = g.tensors[n.inputs[0]]
        k = n.attrs["filter"] if "filter" in n.attrs else g.tensors[n.inputs[1]].shape[1:3]
        tflite_padding(n, x.shape[1:3], tuple(k))
        return True
    except ValueError:
        return False


# Ops whose padding an explicit PAD can carry: the fill and whether PADV2 is needed for it.
_PAD_BEFORE = ("conv2d", "depthwise_conv2d", "max_pool2d")


def explicit_pads(g: Graph) -> Graph:
    """`g` with every conv2d / depthwise_conv2d / max_pool2d whose padding is neither SAME
    nor VALID preceded by an explicit PAD and given VALID padding. A convolution's padding
    is zeros (the input zero point when quantized), which PAD writes; a max pool's padding
    never wins, which PADV2 with the dtype's lowest value (float32: the lowest finite
    float) reproduces. Other ops are left as they are."""
    if all(n.op not in _PAD_BEFORE or n.attrs.get("padding", (0, 0, 0, 0)) == (0, 0, 0, 0) or _expressible(g, n)
           for n in g.nodes):
        return g
    tensors, nodes = dict(g.tensors), []
    for n in g.nodes:
        if n.op not in _PAD_BEFORE or _expressible(g, n):
            nodes.append(n)
            continue
        x = g.tensors[n.inputs[0]]
        t, l, b, r = n.attrs["padding"]
        pads = ((0, 0), (t, b), (l, r), (0, 0))
        padded = unique_name(tensors, f"{n.name}/padded")
        tensors[padded] = Tensor(padded, (x.shape[0], x.shape[1] + t + b, x.shape[2] + l + r, x.shape[3]),
                                 x.dtype, x.quant)
        if n.op == "max_pool2d":
            low = float(np.finfo(np.float32).min) if x.dtype == "float32" else int(np.iinfo(x.dtype).min)
            nodes.append(Node("pad_v2", f"{n.name}/pad", (x.name,), (padded,), {"pads": pads, "value": low},
                              origin=n.origin))
        else:
            nodes.append(Node("pad", f"{n.name}/pad", (x.name,), (padded,), {"pads": pads}, origin=n.origin))
        nodes.append(n.replace(inputs=(padded, *n.inputs[1:]), attrs=dict(n.attrs, padding=(0, 0, 0, 0))))
    return verify(g.replace(tensors=tensors, nodes=nodes))


# --- the writer table, filled by the op-family modules (write_*.py) with @writer -------

@dataclass(frozen=True)
class OpWriter:
    """How to write one op: its TFLite builtin, fn(builder, graph, node) -> (BuiltinOptions
    type, options offset) or None, and `inputs`: fn(graph, node, tensors) -> the TFLite
    input names in TFLite's order, adding to `tensors` the constants TFLite wants where our
    IR has attributes (None: the node's own inputs)."""

    builtin: str
    options: Callable
    inputs: Callable | None = None
    # A CUSTOM op's custom code (TFLM's signal ops); its `options` returns a dict, written as
    # the flexbuffer map TFLM reads.
    custom: str | None = None
    # fn(graph, node, tensors) -> names of the operator's intermediate tensors (a quantized
    # LSTM's gate scales), adding them to `tensors`; None: none.
    intermediates: Callable | None = None


WRITERS: dict[str, OpWriter] = {}


def writer(op: str, builtin: str, inputs: Callable | None = None, intermediates: Callable | None = None,
           custom: str | None = None):
    """Register the decorated options function as the writer of our `op`."""
    def register(fn: Callable) -> Callable:
        assert op not in WRITERS, f"TFLite writer for {op} registered twice"
        assert hasattr(tflite.BuiltinOperator, builtin), builtin
        assert (custom is not None) == (builtin == "CUSTOM"), op
        WRITERS[op] = OpWriter(builtin, fn, inputs, intermediates=intermediates, custom=custom)
        return fn
    return register


def no_options(b, g: Graph, n: Node):
    """The options function of an op without builtin options."""
    return None


def options_table(b, name: str, **fields):
    """Build the options table `name` (e.g. "SplitOptions") with scalar `fields`."""
    getattr(tflite, f"{name}Start")(b)
    for field, value in fields.items():
        getattr(tflite, f"{name}Add{field}")(b, value)
    return getattr(tflite.BuiltinOptions, name), getattr(tflite, f"{name}End")(b)


def activation_code(n: Node) -> int:
    """The node's fused activation as TFLite's ActivationFunctionType."""
    return ACTIVATION[n.attrs.get("activation", "NONE")]


def unique_name(tensors: dict, name: str) -> str:
    while name in tensors:
        name += "_"
    return name


def add_const(tensors: dict, name: str, data: np.ndarray, quant: QuantParams | None = None) -> str:
    """Add a constant tensor for a TFLite input our IR keeps as an attribute; its name."""
    name = unique_name(tensors, name)
    dtype = {np.dtype(np.int32): "int32", np.dtype(np.int8): "int8", np.dtype(np.float32): "float32",
             np.dtype(np.int16): "int16", np.dtype(np.int64): "int64"}[data.dtype]
    tensors[name] = Tensor(name, tuple(data.shape), dtype, quant, data=data)
    return name


# --- flatbuffer helpers ----------------------------------------------------------------

def int_vector(b, values, prepend) -> int:
    """A vector of scalars; `prepend` is the builder's Prepend<Type> for the element type."""
    size = 8 if prepend == b.PrependInt64 else 4
    b.StartVector(size, len(values), size)
    for v in reversed(list(values)):
        prepend(v)
    return b.EndVector()


def table_vector(b, offsets) -> int:
    """A vector of tables (their offsets, in order)."""
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def buffer_tables(b, buffers: list) -> list[int]:
    """One Buffer table per entry of `buffers` (bytes; None or b"" for an empty buffer)."""
    offsets = []
    for data in buffers:
        vec = bytes_vector(b, data) if data else None
        tflite.BufferStart(b)
        if vec is not None:
            tflite.BufferAddData(b, vec)
        offsets.append(tflite.BufferEnd(b))
    return offsets


def bytes_vector(b, data: bytes, alignment: int = 16) -> int:
    b.StartVector(1, len(data), alignment)
    b.head -= len(data)
    b.Bytes[b.head:b.head + len(data)] = data
    return b.EndVector()


def _quantization(b, t: Tensor) -> int | None:
    q = t.quant
    if q is None:
        return None
    scale = int_vector(b, [float(s) for s in q.scale], b.PrependFloat32)
    zp = int_vector(b, [int(z) for z in q.zero_point], b.PrependInt64)
    tflite.QuantizationParametersStart(b)
    tflite.QuantizationParametersAddScale(b, scale)
    tflite.QuantizationParametersAddZeroPoint(b, zp)
    tflite.QuantizationParametersAddQuantizedDimension(b, q.axis or 0)
    return tflite.QuantizationParametersEnd(b)


def _tensor(b, t: Tensor, buffer: int) -> int:
    name = b.CreateString(t.name)
    shape = int_vector(b, t.shape, b.PrependInt32)
    quant = _quantization(b, t)
    tflite.TensorStart(b)
    tflite.TensorAddShape(b, shape)
    tflite.TensorAddType(b, TENSOR_TYPE[t.dtype])
    tflite.TensorAddBuffer(b, buffer)
    tflite.TensorAddName(b, name)
    if quant is not None:
        tflite.TensorAddQuantization(b, quant)
    if t.variable:
        tflite.TensorAddIsVariable(b, True)
    return tflite.TensorEnd(b)


def _tflite_inputs(g: Graph) -> tuple[dict[str, Tensor], dict[str, list[str]], dict[str, list[str]]]:
    """Every node's TFLite inputs and intermediates (by name), and the tensors including the
    constants and intermediates the op writers added."""
    tensors = dict(g.tensors)
    op_inputs, op_intermediates = {}, {}
    for n in g.nodes:
        build = WRITERS[n.op].inputs
        op_inputs[n.name] = build(g, n, tensors) if build is not None else list(n.inputs)
        extra = WRITERS[n.op].intermediates
        op_intermediates[n.name] = extra(g, n, tensors) if extra is not None else []
    return tensors, op_inputs, op_intermediates


def write_tflite(graph: Graph, description: str = "microcompile") -> bytes:
    """Serialize `graph` (ops in `WRITERS`) to .tflite bytes. ValueError on what TFLite
    cannot express (an unknown op, an average pool with padding neither SAME nor VALID)."""
    unsupported = sorted({n.op for n in graph.nodes if n.op not in WRITERS})
    if unsupported:
        raise ValueError(f"tflite_writer: unsupported ops {unsupported}")
    onnx_rounded = [n.name for n in graph.nodes if n.attrs.get("rounding", "tflite") != "tflite"]
    if onnx_rounded:   # TFLite's kernels would round these layers differently
        raise ValueError(f"tflite_writer: layers {onnx_rounded[:3]} requantize as ONNX does (rounding=onnx), "
                         "which TFLite cannot express")
    graph = explicit_pads(graph)
    tensors, op_inputs, op_intermediates = _tflite_inputs(graph)
    index = {name: i for i, name in enumerate(tensors)}
    b = flatbuffers.Builder(1024)

    # Buffers: 0 is the empty sentinel, then one per constant.
    buffer_of, buffers = {}, [None]
    for name, t in tensors.items():
        if t.is_const:
            buffer_of[name] = len(buffers)
            buffers.append(pack_int4(t.data) if t.dtype == "int4" else
                           np.ascontiguousarray(t.data, dtype=t.data.dtype.newbyteorder("<")).tobytes())
    buffer_offsets = buffer_tables(b, buffers)

    tensor_offsets = [_tensor(b, t, buffer_of.get(name, 0)) for name, t in tensors.items()]

    # Operator codes, in first-use order: (builtin code, custom code or None).
    opcodes = list(dict.fromkeys((getattr(tflite.BuiltinOperator, WRITERS[n.op].builtin), WRITERS[n.op].custom)
                                 for n in graph.nodes))
    code_offsets = []
    for code, custom in opcodes:
        custom_name = b.CreateString(custom) if custom is not None else None
        tflite.OperatorCodeStart(b)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        tflite.OperatorCodeAddBuiltinCode(b, code)
        if custom_name is not None:
            tflite.OperatorCodeAddCustomCode(b, custom_name)
        tflite.OperatorCodeAddVersion(b, 1)
        code_offsets.append(tflite.OperatorCodeEnd(b))

    op_offsets = []
    for n in graph.nodes:
        w = WRITERS[n.op]
        options = w.options(b, graph, n)
        custom_options = None
        if w.custom is not None:
            custom_options, options = bytes_vector(b, bytes(flexbuffers.Dumps(options)), 4), None
        inputs = int_vector(b, [index[i] if i else -1 for i in op_inputs[n.name]], b.PrependInt32)
        outputs = int_vector(b, [index[o] for o in n.outputs], b.PrependInt32)
        inter = op_intermediates[n.name]
        inter_vec = int_vector(b, [index[i] for i in inter], b.PrependInt32) if inter else None
        tflite.OperatorStart(b)
        tflite.OperatorAddOpcodeIndex(b, opcodes.index((getattr(tflite.BuiltinOperator, w.builtin), w.custom)))
        tflite.OperatorAddInputs(b, inputs)
        tflite.OperatorAddOutputs(b, outputs)
        if inter_vec is not None:
            tflite.OperatorAddIntermediates(b, inter_vec)
        if options is not None:
            tflite.OperatorAddBuiltinOptionsType(b, options[0])
            tflite.OperatorAddBuiltinOptions(b, options[1])
        if custom_options is not None:
            tflite.OperatorAddCustomOptions(b, custom_options)
            tflite.OperatorAddCustomOptionsFormat(b, tflite.CustomOptionsFormat.FLEXBUFFERS)
        op_offsets.append(tflite.OperatorEnd(b))

    sg_tensors = table_vector(b, tensor_offsets)
    sg_inputs = int_vector(b, [index[i] for i in graph.inputs], b.PrependInt32)
    sg_outputs = int_vector(b, [index[o] for o in graph.outputs], b.PrependInt32)
    sg_ops = table_vector(b, op_offsets)
    sg_name = b.CreateString(graph.name)
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, sg_tensors)
    tflite.SubGraphAddInputs(b, sg_inputs)
    tflite.SubGraphAddOutputs(b, sg_outputs)
    tflite.SubGraphAddOperators(b, sg_ops)
    tflite.SubGraphAddName(b, sg_name)
    subgraph = tflite.SubGraphEnd(b)

    codes_vec = table_vector(b, code_offsets)
    subgraphs_vec = table_vector(b, [subgraph])
    buffers_vec = table_vector(b, buffer_offsets)
    desc = b.CreateString(description)
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, SCHEMA_VERSION)
    tflite.ModelAddOperatorCodes(b, codes_vec)
    tflite.ModelAddSubgraphs(b, subgraphs_vec)
    tflite.ModelAddDescription(b, desc)
    tflite.ModelAddBuffers(b, buffers_vec)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())
