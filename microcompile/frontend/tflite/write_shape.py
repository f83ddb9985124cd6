"""TFLite writers of the shape / data-movement family (ops_shape): builtin codes,
options, and the constant inputs (axes, permutations, slice bounds) TFLite takes where our
IR has attributes."""

from __future__ import annotations

import numpy as np

import tflite

from ...ir.graph import Graph, Node
from .writer import add_const, int_vector, options_table, writer



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
