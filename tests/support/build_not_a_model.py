"""Builders of files that are not (quite) models, for tests/hostile/test_not_a_model.py.

Most corruptions are graphs the project's own TFLite writer serializes as they are (it does
not verify what it writes): a negative dimension, no outputs, an output nothing produces.
What the writer cannot express (a second subgraph, a buffer stored outside the flatbuffer,
a tensor index out of range) is made by `raw_tflite`, a few lines over the same generated
flatbuffer builders the writer uses, or by patching the writer's bytes (`patch_op_input`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import flatbuffers
import numpy as np
import tflite

from microcompile.frontend.tflite.writer import int_vector, table_vector, write_tflite
from microcompile.ir import Graph, Node, Tensor

FLOAT32 = tflite.TensorType.FLOAT32


def relu_graph(x_shape=(1, 8), y_shape=None, *, inputs=("x",), outputs=("y",), extra: dict | None = None,
               nodes=None) -> Graph:
    """x -> RELU -> y, unverified: the callers bend it into what is not a model."""
    tensors = {"x": Tensor("x", tuple(x_shape), "float32"), "y": Tensor("y", tuple(y_shape or x_shape), "float32"),
               **(extra or {})}
    nodes = nodes if nodes is not None else (Node("relu", "relu", ("x",), ("y",)),)
    return Graph("m", tensors, tuple(nodes), tuple(inputs), tuple(outputs))


def relu_tflite(**kw) -> bytes:
    return write_tflite(relu_graph(**kw))


def constant(name: str, shape=(1, 8), value: float = 0.5) -> Tensor:
    return Tensor(name, tuple(shape), "float32", data=np.full(shape, value, np.float32))


def zero_size_between_tflite() -> bytes:
    """x[1, 8] -> SLICE to [1, 0] -> RELU -> CONCATENATION with x -> y[1, 8]: a tensor of no
    elements computed at run time (the deploy of this file ran and its output differed)."""
    t = {"x": Tensor("x", (1, 8), "float32"), "s": Tensor("s", (1, 0), "float32"),
         "r": Tensor("r", (1, 0), "float32"), "y": Tensor("y", (1, 8), "float32")}
    nodes = (Node("slice", "sl", ("x",), ("s",), {"begin": (0, 0), "size": (1, 0)}),
             Node("relu", "relu", ("s",), ("r",)),
             Node("concatenation", "cat", ("x", "r"), ("y",), {"axis": 1}))
    return write_tflite(Graph("m", t, nodes, ("x",), ("y",)))


def patch_op_input(data: bytes, op: int, k: int, value: int) -> bytes:
    """`data` with input `k` of operator `op` (subgraph 0) set to tensor index `value`."""
    sg = tflite.Model.GetRootAs(data, 0).Subgraphs(0)
    tab = sg.Operators(op)._tab
    start = tab.Vector(tab.Offset(6))   # Operator.inputs is field 1: vtable slot 6
    buf = bytearray(data)
    buf[start + 4 * k:start + 4 * k + 4] = value.to_bytes(4, "little", signed=True)
    return bytes(buf)


# --- raw flatbuffers, for what the writer cannot express -----------------------------------

@dataclass
class RawTensor:
    name: str
    shape: tuple[int, ...]
    buffer: int = 0
    type: int = FLOAT32
    signature: tuple[int, ...] | None = None   # shape_signature: -1 marks a dynamic dimension


@dataclass
class RawOp:
    builtin: str                   # a tflite.BuiltinOperator name, or "CUSTOM:<custom_code>"
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    # fn(builder) -> (BuiltinOptions type, options offset), for ops that carry options
    options: Callable | None = None


@dataclass
class RawSubgraph:
    name: str
    tensors: list[RawTensor]
    ops: list[RawOp]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass
class RawBuffer:
    data: bytes = b""
    offset: int = 0   # the schema's "data outside the flatbuffer" fields (models over 2 GB)
    size: int = 0


def relu_subgraph(name: str = "main", n_ops: int = 1) -> RawSubgraph:
    """x -> RELU -> ... -> RELU -> y over [1, 8] float32 tensors."""
    tensors = [RawTensor(f"{name}_t{i}", (1, 8)) for i in range(n_ops + 1)]
    ops = [RawOp("RELU", (i,), (i + 1,)) for i in range(n_ops)]
    return RawSubgraph(name, tensors, ops, (0,), (n_ops,))


def add_constant_subgraph(buffer: int) -> RawSubgraph:
    """x + c -> y over [1, 8] float32, c stored in `buffer`."""
    sg = relu_subgraph("main")
    sg.tensors.append(RawTensor("c", (1, 8), buffer=buffer))
    sg.ops = [RawOp("ADD", (0, 2), (1,))]
    return sg


def while_options(cond: int, body: int) -> Callable:
    def build(b):
        tflite.WhileOptionsStart(b)
        tflite.WhileOptionsAddCondSubgraphIndex(b, cond)
        tflite.WhileOptionsAddBodySubgraphIndex(b, body)
        return tflite.BuiltinOptions.WhileOptions, tflite.WhileOptionsEnd(b)
    return build


def raw_tflite(subgraphs: list[RawSubgraph], buffers: list[RawBuffer] | None = None) -> bytes:
    """A .tflite file of exactly these subgraphs and buffers (buffer 0, the empty sentinel,
    is added in front of `buffers`)."""
    b = flatbuffers.Builder(1024)
    buffer_offsets = []
    for buf in [RawBuffer(), *(buffers or [])]:
        vec = b.CreateByteVector(buf.data) if buf.data else None
        tflite.BufferStart(b)
        if vec is not None:
            tflite.BufferAddData(b, vec)
        if buf.offset:
            tflite.BufferAddOffset(b, buf.offset)
        if buf.size:
            tflite.BufferAddSize(b, buf.size)
        buffer_offsets.append(tflite.BufferEnd(b))
    opcodes = list(dict.fromkeys(op.builtin for sg in subgraphs for op in sg.ops))
    code_offsets = []
    for name in opcodes:
        # "CUSTOM:<custom_code>" for a custom op (e.g. Vela's "CUSTOM:ethos-u")
        custom = b.CreateString(name.split(":", 1)[1]) if name.startswith("CUSTOM:") else None
        code = getattr(tflite.BuiltinOperator, name.split(":", 1)[0])
        tflite.OperatorCodeStart(b)
        if custom is not None:
            tflite.OperatorCodeAddCustomCode(b, custom)
        tflite.OperatorCodeAddDeprecatedBuiltinCode(b, min(code, 127))
        tflite.OperatorCodeAddBuiltinCode(b, code)
        tflite.OperatorCodeAddVersion(b, 1)
        code_offsets.append(tflite.OperatorCodeEnd(b))

    sg_offsets = []
    for sg in subgraphs:
        tensor_offsets = []
        for t in sg.tensors:
            name, shape = b.CreateString(t.name), int_vector(b, t.shape, b.PrependInt32)
            signature = int_vector(b, t.signature, b.PrependInt32) if t.signature is not None else None
            tflite.TensorStart(b)
            tflite.TensorAddShape(b, shape)
            if signature is not None:
                tflite.TensorAddShapeSignature(b, signature)
            tflite.TensorAddType(b, t.type)
            tflite.TensorAddBuffer(b, t.buffer)
            tflite.TensorAddName(b, name)
            tensor_offsets.append(tflite.TensorEnd(b))
        op_offsets = []
        for op in sg.ops:
            options = op.options(b) if op.options else None
            ins, outs = int_vector(b, op.inputs, b.PrependInt32), int_vector(b, op.outputs, b.PrependInt32)
            tflite.OperatorStart(b)
            tflite.OperatorAddOpcodeIndex(b, opcodes.index(op.builtin))
            tflite.OperatorAddInputs(b, ins)
            tflite.OperatorAddOutputs(b, outs)
            if options is not None:
                tflite.OperatorAddBuiltinOptionsType(b, options[0])
                tflite.OperatorAddBuiltinOptions(b, options[1])
            op_offsets.append(tflite.OperatorEnd(b))
        tensors, ops = table_vector(b, tensor_offsets), table_vector(b, op_offsets)
        ins, outs = int_vector(b, sg.inputs, b.PrependInt32), int_vector(b, sg.outputs, b.PrependInt32)
        name = b.CreateString(sg.name)
        tflite.SubGraphStart(b)
        tflite.SubGraphAddTensors(b, tensors)
        tflite.SubGraphAddInputs(b, ins)
        tflite.SubGraphAddOutputs(b, outs)
        tflite.SubGraphAddOperators(b, ops)
        tflite.SubGraphAddName(b, name)
        sg_offsets.append(tflite.SubGraphEnd(b))
    codes, sgs, bufs = table_vector(b, code_offsets), table_vector(b, sg_offsets), table_vector(b, buffer_offsets)
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, codes)
    tflite.ModelAddSubgraphs(b, sgs)
    tflite.ModelAddBuffers(b, bufs)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


# --- ONNX ---------------------------------------------------------------------------------

def _field(number: int, payload: bytes) -> bytes:
    """One length-delimited protobuf field (wire type 2)."""
    def varint(n: int) -> bytes:
        out = bytearray()
        while True:
            out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
            n >>= 7
            if not n:
                return bytes(out)
    return varint(number << 3 | 2) + varint(len(payload)) + payload


# Field numbers of onnx.proto: NodeProto.attribute, AttributeProto.g, GraphProto.node,
# ModelProto.graph.
_NODE_ATTRIBUTE, _ATTRIBUTE_G, _GRAPH_NODE, _MODEL_GRAPH = 5, 6, 1, 7


def nested_if_onnx(depth: int, constant_condition: bool = False) -> bytes:
    """The bytes of an ONNX model whose output comes from `depth` If nodes, each nested in
    the then-branch of the one above. Deeper than protobuf's own nesting limit (100
    messages), so the nesting is written as raw fields around shallow messages."""
    from onnx import AttributeProto, TensorProto, helper, numpy_helper

    def out(name):
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 8])

    def relu_graph(name, y):
        return helper.make_graph([helper.make_node("Relu", ["x"], [y])], name, [], [out(y)])

    assert depth >= 1
    branch = relu_graph("leaf", f"y{depth}").SerializeToString()
    for level in reversed(range(depth)):
        node = helper.make_node("If", ["c"], [f"y{level}"], name=f"if_{level}",
                                else_branch=relu_graph(f"else_{level}", f"e{level}"))
        then = AttributeProto(name="then_branch", type=AttributeProto.GRAPH).SerializeToString()
        node_bytes = node.SerializeToString() + _field(_NODE_ATTRIBUTE, then + _field(_ATTRIBUTE_G, branch))
        shell = helper.make_graph([], f"level_{level}", [], [out(f"y{level}")])
        branch = shell.SerializeToString() + _field(_GRAPH_NODE, node_bytes)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    if constant_condition:
        nodes, init = [], [numpy_helper.from_array(np.array(True), "c")]
    else:   # c = x[0, 0] > 0
        nodes = [helper.make_node("Slice", ["x", "s0", "s1", "ax"], ["x00"]),
                 helper.make_node("Greater", ["x00", "zero"], ["c1"]),
                 helper.make_node("Reshape", ["c1", "scalar"], ["c"])]
        init = [numpy_helper.from_array(np.zeros((1, 1), np.float32), "zero"),
                numpy_helper.from_array(np.array([0], np.int64), "s0"),
                numpy_helper.from_array(np.array([1], np.int64), "s1"),
                numpy_helper.from_array(np.array([1], np.int64), "ax"),
                numpy_helper.from_array(np.zeros((0,), np.int64), "scalar")]
    top = helper.make_graph(nodes, "nested_if", [x], [out("y0")], initializer=init)
    model = helper.make_model(helper.make_graph([], "shell", [], []), opset_imports=[helper.make_opsetid("", 13)])
    model.ClearField("graph")
    # The outermost If follows the condition's nodes (repeated fields concatenate).
    graph = top.SerializeToString() + _field(_GRAPH_NODE, node_bytes)
    return model.SerializeToString() + _field(_MODEL_GRAPH, graph)
