"""tflite_writer support for the shape / data-movement family (ops_shape): builtin codes,
options, and the constant inputs (axes, permutations, slice bounds) TFLite takes where our
IR has attributes."""

from __future__ import annotations

import numpy as np

import tflite

from ..ir.graph import Graph, Node, Tensor
from . import tflite_writer as w

w._BUILTIN.update({
    "squeeze": tflite.BuiltinOperator.SQUEEZE,
    "expand_dims": tflite.BuiltinOperator.EXPAND_DIMS,
    "concatenation": tflite.BuiltinOperator.CONCATENATION,
    "split": tflite.BuiltinOperator.SPLIT,
    "split_v": tflite.BuiltinOperator.SPLIT_V,
    "pack": tflite.BuiltinOperator.PACK,
    "unpack": tflite.BuiltinOperator.UNPACK,
    "transpose": tflite.BuiltinOperator.TRANSPOSE,
    "strided_slice": tflite.BuiltinOperator.STRIDED_SLICE,
    "slice": tflite.BuiltinOperator.SLICE,
    "gather": tflite.BuiltinOperator.GATHER,
    "depth_to_space": tflite.BuiltinOperator.DEPTH_TO_SPACE,
    "space_to_depth": tflite.BuiltinOperator.SPACE_TO_DEPTH,
    "shape": tflite.BuiltinOperator.SHAPE,
    "space_to_batch_nd": tflite.BuiltinOperator.SPACE_TO_BATCH_ND,
    "batch_to_space_nd": tflite.BuiltinOperator.BATCH_TO_SPACE_ND,
})


def _table(b, name: str, **fields):
    """Build the options table `name` (e.g. "SplitOptions") with scalar `fields`."""
    getattr(tflite, f"{name}Start")(b)
    for field, value in fields.items():
        getattr(tflite, f"{name}Add{field}")(b, value)
    return getattr(tflite.BuiltinOptions, name), getattr(tflite, f"{name}End")(b)


def _squeeze_options(b, g, n):
    axes = w._int_vector(b, n.attrs["axes"], b.PrependInt32)
    tflite.SqueezeOptionsStart(b)
    tflite.SqueezeOptionsAddSqueezeDims(b, axes)
    return tflite.BuiltinOptions.SqueezeOptions, tflite.SqueezeOptionsEnd(b)


def _strided_slice_options(b, g, n):
    a = n.attrs
    return _table(b, "StridedSliceOptions", BeginMask=a["begin_mask"], EndMask=a["end_mask"],
                  EllipsisMask=a["ellipsis_mask"], NewAxisMask=a["new_axis_mask"],
                  ShrinkAxisMask=a["shrink_axis_mask"], Offset=bool(a["offset"]))


w._OPTIONS.update({
    "squeeze": _squeeze_options,
    "expand_dims": lambda b, g, n: _table(b, "ExpandDimsOptions"),
    "concatenation": lambda b, g, n: _table(b, "ConcatenationOptions", Axis=n.attrs["axis"]),
    "split": lambda b, g, n: _table(b, "SplitOptions", NumSplits=len(n.outputs)),
    "split_v": lambda b, g, n: _table(b, "SplitVOptions", NumSplits=len(n.outputs)),
    "pack": lambda b, g, n: _table(b, "PackOptions", ValuesCount=len(n.inputs), Axis=n.attrs["axis"]),
    "unpack": lambda b, g, n: _table(b, "UnpackOptions", Num=len(n.outputs), Axis=n.attrs["axis"]),
    "transpose": lambda b, g, n: _table(b, "TransposeOptions"),
    "strided_slice": _strided_slice_options,
    "slice": lambda b, g, n: _table(b, "SliceOptions"),
    "gather": lambda b, g, n: _table(b, "GatherOptions", Axis=n.attrs["axis"]),
    "depth_to_space": lambda b, g, n: _table(b, "DepthToSpaceOptions", BlockSize=n.attrs["block_size"]),
    "space_to_depth": lambda b, g, n: _table(b, "SpaceToDepthOptions", BlockSize=n.attrs["block_size"]),
    "shape": lambda b, g, n: _table(b, "ShapeOptions", OutType=tflite.TensorType.INT32),
    "space_to_batch_nd": lambda b, g, n: _table(b, "SpaceToBatchNDOptions"),
    "batch_to_space_nd": lambda b, g, n: _table(b, "BatchToSpaceNDOptions"),
})


def _consts(*attrs):
    """An INPUT_BUILDERS entry: the node's inputs, then one int32 constant per attribute
    (a callable attr computes the value from (graph, node)); "<attr" puts it first."""
    def build(g: Graph, n: Node, tensors: dict) -> list[str]:
        before, after = [], []
        for attr in attrs:
            first = attr.startswith("<")
            key = attr.lstrip("<")
            value = np.array(n.attrs[key], dtype=np.int32)
            name = w._unique(tensors, f"{n.name}/{key}")
            tensors[name] = Tensor(name, value.shape, "int32", data=value)
            (before if first else after).append(name)
        return before + list(n.inputs) + after
    return build


w.INPUT_BUILDERS.update({
    "expand_dims": _consts("axis"),
    "split": _consts("<axis"),
    "split_v": _consts("sizes", "axis"),
    "transpose": _consts("perm"),
    "gather": _consts("indices"),
    "strided_slice": _consts("begin", "end", "strides"),
    "slice": _consts("begin", "size"),
    "space_to_batch_nd": _consts("block_shape", "paddings"),
    "batch_to_space_nd": _consts("block_shape", "crops"),
})
