"""The shape / data-movement family (ops_shape) in TFLite: SQUEEZE, EXPAND_DIMS,
CONCATENATION, SPLIT, SPLIT_V, PACK, UNPACK, TRANSPOSE, STRIDED_SLICE, SLICE, GATHER,
DEPTH_TO_SPACE, SPACE_TO_DEPTH, and the converter-pattern ops SHAPE, SPACE_TO_BATCH_ND,
BATCH_TO_SPACE_ND: the converter of each builtin (@converter), then the writer of each op
(@writer).

Constant operands (axes, permutations, bounds, indices) become attributes, and the writers
turn them back into constant inputs. What we cannot compile (a non-constant operand,
GATHER batch_dims, int8 joins that would requantize) is reported by the converters'
`problem` checks, so the reader lists every such layer at once.
"""
from __future__ import annotations

import numpy as np
import tflite

from ...errors import ModelFormatError
from ...ir.graph import Graph, Node
from ...ir.ops_shape import nested_tuple
from . import reader as r
from .reader import converter
from .writer import add_const, int_vector, options_table, writer

# Raw little-endian numpy dtype of each integer TensorType a constant operand may use.
_RAW_INT = {2: "<i4", 4: "<i8"}


# Which inputs of each op must be constant (TFLite input index -> what it is).
_CONST_OPERANDS = {
    "EXPAND_DIMS": {1: "axis"}, "SPLIT": {0: "axis"}, "SPLIT_V": {1: "size_splits", 2: "axis"},
    "TRANSPOSE": {1: "perm"}, "STRIDED_SLICE": {1: "begin", 2: "end", 3: "strides"},
    "SLICE": {1: "begin", 2: "size"}, "GATHER": {1: "indices"},
    "SPACE_TO_BATCH_ND": {1: "block_shape", 2: "paddings"}, "BATCH_TO_SPACE_ND": {1: "block_shape", 2: "crops"},
}


def _const(ctx, op, k: int) -> np.ndarray:
    t = ctx.raw.tensors[op.inputs[k]]
    if t.type not in _RAW_INT:
        raise ModelFormatError(f"{op.opname} at layer {op.index}: operand {k} has type {t.type}, "
                               "expected int32 or int64")
    return np.frombuffer(t.data, _RAW_INT[t.type]).reshape(t.shape).astype(np.int64)


def _ints(ctx, op, k: int) -> tuple[int, ...]:
    return tuple(int(v) for v in _const(ctx, op, k).ravel())


def _rank(ctx, op, k: int = 0) -> int:
    return len(ctx.shape(op.inputs[k]))


def _problem(raw, op) -> str | None:
    for k, what in _CONST_OPERANDS.get(op.opname, {}).items():
        if len(op.inputs) <= k or op.inputs[k] < 0:
            return None   # a missing operand is a malformed file; the converter says so
        if raw.tensors[op.inputs[k]].data is None:
            return f"{op.opname} with a non-constant {what}"
    o = op.options or {}
    if op.opname == "GATHER" and o.get("BatchDims", 0) != 0:
        return "GATHER with batch_dims != 0"
    if op.opname == "SHAPE" and o.get("OutType", 2) != 2:
        return "SHAPE with a non-int32 output type"
    if op.opname == "CONCATENATION" and o.get("FusedActivationFunction", 0) != 0:
        return "CONCATENATION with a fused activation"   # LiteRT refuses it too
    if op.opname in ("CONCATENATION", "PACK"):
        out = raw.tensors[op.outputs[0]]
        for i in op.inputs:
            t = raw.tensors[i]
            if t.type == r.TFL_INT8 and (t.scale, t.zero_point) != (out.scale, out.zero_point):
                # LiteRT refuses these as well; the converter inserts QUANTIZE ops instead.
                return f"int8 {op.opname} whose inputs are quantized differently from its output"
    return None


@converter("SQUEEZE", options=("SqueezeOptions", ("SqueezeDims",)))
def _squeeze(ctx, op):
    dims = (op.options or {}).get("SqueezeDims") or ()
    rank = _rank(ctx, op)
    return "squeeze", r.op_inputs(ctx, op, 1, 1), {"axes": tuple(sorted(d % rank for d in dims))}


@converter("EXPAND_DIMS", problem=_problem)
def _expand_dims(ctx, op):
    ins = r.op_inputs(ctx, op, 1, 2)
    (axis,) = _ints(ctx, op, 1)
    return "expand_dims", ins, {"axis": axis % (_rank(ctx, op) + 1)}


@converter("CONCATENATION", options=("ConcatenationOptions", ("Axis", "FusedActivationFunction")),
           problem=_problem)
def _concatenation(ctx, op):
    if not op.inputs or min(op.inputs) < 0:
        raise ModelFormatError(f"CONCATENATION at layer {op.index} has a missing input")
    axis = r.need_options(op)["Axis"] % _rank(ctx, op)
    return "concatenation", tuple(ctx.name(i) for i in op.inputs), {"axis": axis}


@converter("SPLIT", options=("SplitOptions", ("NumSplits",)), problem=_problem)
def _split(ctx, op):
    x = r.op_inputs(ctx, op, 2, 2)[1]
    (axis,) = _ints(ctx, op, 0)
    return "split", (x,), {"axis": axis % _rank(ctx, op, 1)}


@converter("SPLIT_V", options=("SplitVOptions", ("NumSplits",)), problem=_problem)
def _split_v(ctx, op):
    ins = r.op_inputs(ctx, op, 1, 3)
    (axis,) = _ints(ctx, op, 2)
    shape = ctx.shape(op.inputs[0])
    axis %= len(shape)
    sizes = list(_ints(ctx, op, 1))
    if sizes.count(-1) == 1:   # one size may be -1: whatever is left
        sizes[sizes.index(-1)] = shape[axis] - (sum(sizes) + 1)
    return "split_v", ins, {"axis": axis, "sizes": tuple(sizes)}


@converter("PACK", options=("PackOptions", ("ValuesCount", "Axis")), problem=_problem)
def _pack(ctx, op):
    axis = r.need_options(op)["Axis"] % (_rank(ctx, op) + 1)
    return "pack", tuple(ctx.name(i) for i in op.inputs), {"axis": axis}


@converter("UNPACK", options=("UnpackOptions", ("Num", "Axis")))
def _unpack(ctx, op):
    axis = r.need_options(op)["Axis"] % _rank(ctx, op)
    return "unpack", r.op_inputs(ctx, op, 1, 1), {"axis": axis}


@converter("TRANSPOSE", problem=_problem)
def _transpose(ctx, op):
    return "transpose", r.op_inputs(ctx, op, 1, 2), {"perm": tuple(p % _rank(ctx, op) for p in _ints(ctx, op, 1))}


@converter("STRIDED_SLICE", problem=_problem, options=("StridedSliceOptions", (
    "BeginMask", "EndMask", "EllipsisMask", "NewAxisMask", "ShrinkAxisMask", "Offset")))
def _strided_slice(ctx, op):
    o = r.need_options(op)
    ins = r.op_inputs(ctx, op, 1, 4)
    return "strided_slice", ins, {
        "begin": _ints(ctx, op, 1), "end": _ints(ctx, op, 2), "strides": _ints(ctx, op, 3),
        "begin_mask": o["BeginMask"], "end_mask": o["EndMask"], "ellipsis_mask": o["EllipsisMask"],
        "new_axis_mask": o["NewAxisMask"], "shrink_axis_mask": o["ShrinkAxisMask"], "offset": bool(o["Offset"])}


@converter("SLICE", problem=_problem)
def _slice(ctx, op):
    return "slice", r.op_inputs(ctx, op, 1, 3), {"begin": _ints(ctx, op, 1), "size": _ints(ctx, op, 2)}


@converter("GATHER", options=("GatherOptions", ("Axis", "BatchDims")), problem=_problem)
def _gather(ctx, op):
    ins = r.op_inputs(ctx, op, 1, 2)
    shape = ctx.shape(op.inputs[0])
    axis = (op.options or {}).get("Axis", 0) % len(shape)
    indices = _const(ctx, op, 1)
    if indices.size and not (0 <= indices.min() and indices.max() < shape[axis]):
        raise ModelFormatError(f"GATHER at layer {op.index}: indices outside [0, {shape[axis]})")
    return "gather", ins, {"axis": axis, "indices": nested_tuple(indices)}


def _block(name):
    def convert(ctx, op):
        return name, r.op_inputs(ctx, op, 1, 1), {"block_size": r.need_options(op)["BlockSize"]}
    return convert


def _space_batch(name, second):
    def convert(ctx, op):
        ins = r.op_inputs(ctx, op, 1, 3)
        if _rank(ctx, op) != 4:
            raise ModelFormatError(f"{op.opname} at layer {op.index}: only 4-D NHWC inputs are supported")
        pads = _const(ctx, op, 2).reshape(2, 2)
        return name, ins, {"block_shape": _ints(ctx, op, 1), second: nested_tuple(pads)}
    return convert


converter("DEPTH_TO_SPACE", options=("DepthToSpaceOptions", ("BlockSize",)))(_block("depth_to_space"))
converter("SPACE_TO_DEPTH", options=("SpaceToDepthOptions", ("BlockSize",)))(_block("space_to_depth"))
converter("SPACE_TO_BATCH_ND", problem=_problem)(_space_batch("space_to_batch_nd", "paddings"))
converter("BATCH_TO_SPACE_ND", problem=_problem)(_space_batch("batch_to_space_nd", "crops"))


@converter("SHAPE", options=("ShapeOptions", ("OutType",)), problem=_problem)
def _shape(ctx, op):
    return "shape", r.op_inputs(ctx, op, 1, 1), {}


# --- the writers ----------------------------------------------------------------------

def _squeeze_options(b, g, n):
    axes = int_vector(b, n.attrs["axes"], b.PrependInt32)
    tflite.SqueezeOptionsStart(b)
    tflite.SqueezeOptionsAddSqueezeDims(b, axes)
    return tflite.BuiltinOptions.SqueezeOptions, tflite.SqueezeOptionsEnd(b)


def _strided_slice_options(b, g, n):
    a = n.attrs
    return options_table(b, "StridedSliceOptions", BeginMask=a["begin_mask"], EndMask=a["end_mask"],
                  EllipsisMask=a["ellipsis_mask"], NewAxisMask=a["new_axis_mask"],
                  ShrinkAxisMask=a["shrink_axis_mask"], Offset=bool(a["offset"]))


def _consts(*attrs):
    """A writer's `inputs`: the node's inputs, then one int32 constant per attribute
    (a callable attr computes the value from (graph, node)); "<attr" puts it first."""
    def build(g: Graph, n: Node, tensors: dict) -> list[str]:
        before, after = [], []
        for attr in attrs:
            first = attr.startswith("<")
            key = attr.lstrip("<")
            name = add_const(tensors, f"{n.name}/{key}", np.array(n.attrs[key], dtype=np.int32))
            (before if first else after).append(name)
        return before + list(n.inputs) + after
    return build


def _simple(name: str, **fields):
    """An options function building `name` from node attributes: field -> fn(graph, node)."""
    return lambda b, g, n: options_table(b, name, **{f: get(g, n) for f, get in fields.items()})


def _axis(g, n):
    return n.attrs["axis"]


writer("squeeze", "SQUEEZE")(_squeeze_options)
writer("expand_dims", "EXPAND_DIMS", inputs=_consts("axis"))(_simple("ExpandDimsOptions"))
writer("concatenation", "CONCATENATION")(_simple("ConcatenationOptions", Axis=_axis))
writer("split", "SPLIT", inputs=_consts("<axis"))(_simple("SplitOptions", NumSplits=lambda g, n: len(n.outputs)))
writer("split_v", "SPLIT_V", inputs=_consts("sizes", "axis"))(
    _simple("SplitVOptions", NumSplits=lambda g, n: len(n.outputs)))
writer("pack", "PACK")(_simple("PackOptions", ValuesCount=lambda g, n: len(n.inputs), Axis=_axis))
writer("unpack", "UNPACK")(_simple("UnpackOptions", Num=lambda g, n: len(n.outputs), Axis=_axis))
writer("transpose", "TRANSPOSE", inputs=_consts("perm"))(_simple("TransposeOptions"))
writer("strided_slice", "STRIDED_SLICE", inputs=_consts("begin", "end", "strides"))(_strided_slice_options)
writer("slice", "SLICE", inputs=_consts("begin", "size"))(_simple("SliceOptions"))
writer("gather", "GATHER", inputs=_consts("indices"))(_simple("GatherOptions", Axis=_axis))
writer("depth_to_space", "DEPTH_TO_SPACE")(
    _simple("DepthToSpaceOptions", BlockSize=lambda g, n: n.attrs["block_size"]))
writer("space_to_depth", "SPACE_TO_DEPTH")(
    _simple("SpaceToDepthOptions", BlockSize=lambda g, n: n.attrs["block_size"]))
writer("shape", "SHAPE")(_simple("ShapeOptions", OutType=lambda g, n: tflite.TensorType.INT32))
writer("space_to_batch_nd", "SPACE_TO_BATCH_ND", inputs=_consts("block_shape", "paddings"))(
    _simple("SpaceToBatchNDOptions"))
writer("batch_to_space_nd", "BATCH_TO_SPACE_ND", inputs=_consts("block_shape", "crops"))(
    _simple("BatchToSpaceNDOptions"))
