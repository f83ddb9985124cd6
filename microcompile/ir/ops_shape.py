"""Shape and data-movement ops: registry entries and the index arithmetic they share.

Every op here moves or reinterprets bytes without arithmetic, so int8 outputs carry
their input's quantization. (LiteRT refuses an int8 CONCATENATION or PACK whose inputs
are quantized differently from the output, and a CONCATENATION with a fused activation;
the TFLite converter inserts QUANTIZE ops instead. Measured, see tests.) Attributes hold
what TFLite passes as constant input tensors (axes, permutations, slice bounds),
normalized so that axes are non-negative.

`strided_slice_dims` and `split_sizes` resolve TFLite's encodings (masks, ellipsis,
negative indices) once; the interpreter, the lowering and the writer all use them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .graph import Graph, Node
from .ops import OpDef, register


def check_same_quant(g: Graph, n: Node) -> None:
    """int8 CONCATENATION / PACK: every input must share the output's quantization."""
    out = g.tensors[n.outputs[0]]
    if out.dtype not in ("int8", "int16"):
        return
    for name in n.inputs:
        if not g.tensors[name].quant.same_as(out.quant):
            raise ValueError(f"{n.name}: int8 {n.op} input {name} is quantized differently from the "
                             "output; TFLite requires equal scale and zero point")


def _in(g: Graph, n: Node, i: int = 0):
    return g.tensors[n.inputs[i]]


def _same(shape, dtype):
    return [(tuple(int(d) for d in shape), dtype)]


def norm_axis(axis: int, rank: int) -> int:
    return axis + rank if axis < 0 else axis


# --- views -----------------------------------------------------------------------------

def squeeze_shape(shape, axes) -> tuple[int, ...]:
    """TFLite SQUEEZE: drop `axes` (all size-1 dims when empty)."""
    axes = {norm_axis(a, len(shape)) for a in axes} or {i for i, d in enumerate(shape) if d == 1}
    return tuple(d for i, d in enumerate(shape) if i not in axes)


def _infer_squeeze(g, n):
    x = _in(g, n)
    return _same(squeeze_shape(x.shape, n.attrs["axes"]), x.dtype)


def _infer_expand_dims(g, n):
    x = _in(g, n)
    axis = norm_axis(n.attrs["axis"], len(x.shape) + 1)
    return _same(x.shape[:axis] + (1,) + x.shape[axis:], x.dtype)


# --- joins and splits ------------------------------------------------------------------

def _infer_concat(g, n):
    xs = [g.tensors[i] for i in n.inputs]
    axis = n.attrs["axis"]
    shape = list(xs[0].shape)
    shape[axis] = sum(x.shape[axis] for x in xs)
    return _same(shape, xs[0].dtype)


def split_sizes(g: Graph, n: Node) -> tuple[int, ...]:
    """Sizes along the split axis of each output of split / split_v / unpack."""
    x = _in(g, n)
    if n.op == "split_v":
        return tuple(n.attrs["sizes"])
    if n.op == "unpack":
        return (1,) * x.shape[n.attrs["axis"]]
    return (x.shape[n.attrs["axis"]] // len(n.outputs),) * len(n.outputs)


def _infer_split(g, n):
    x = _in(g, n)
    axis = n.attrs["axis"]
    out = []
    for size in split_sizes(g, n):
        shape = list(x.shape)
        shape[axis] = size
        if n.op == "unpack":
            del shape[axis]
        out.append((tuple(shape), x.dtype))
    return out


def _infer_pack(g, n):
    x = _in(g, n)
    axis = n.attrs["axis"]
    return _same(x.shape[:axis] + (len(n.inputs),) + x.shape[axis:], x.dtype)


# --- permutations and slices -----------------------------------------------------------

def _infer_transpose(g, n):
    x = _in(g, n)
    return _same([x.shape[p] for p in n.attrs["perm"]], x.dtype)


@dataclass(frozen=True)
class SliceDim:
    """One input dimension of a strided slice: elements start, start+stride, ... (`size` of
    them); `keep` is False for a shrunk (indexed) dimension, which the output drops."""

    start: int
    stride: int
    size: int
    keep: bool = True


def _dense_spec(n: Node, rank: int):
    """TFLite/TF sparse -> dense slice spec: one (begin, end, stride, begin_masked,
    end_masked, shrink) per input dim, plus where new axes go in the output."""
    a = n.attrs
    begin, end, strides = a["begin"], a["end"], a["strides"]
    bit = lambda mask, i: bool((mask >> i) & 1)   # noqa: E731
    sparse = len(begin)
    ellipsis = [i for i in range(sparse) if bit(a["ellipsis_mask"], i)]
    # Without an ellipsis, an implicit one at the end covers the remaining dims.
    ellipsis_at = ellipsis[0] if ellipsis else sparse
    real_before = sum(not bit(a["new_axis_mask"], i) for i in range(ellipsis_at))
    real_after = sum(not bit(a["new_axis_mask"], i) for i in range(ellipsis_at + 1, sparse)) if ellipsis else 0
    covered = rank - real_before - real_after
    dims, out_new_axes = [], []
    full = (0, 0, 1, True, True, False)
    for i in range(sparse + (0 if ellipsis else 1)):
        if i == ellipsis_at:
            for _ in range(covered):
                dims.append(full)
                out_new_axes.append(False)
            continue
        if bit(a["new_axis_mask"], i):
            out_new_axes.append(True)
            continue
        e = end[i] + begin[i] if a.get("offset") else end[i]
        dims.append((begin[i], e, strides[i], bit(a["begin_mask"], i), bit(a["end_mask"], i),
                     bit(a["shrink_axis_mask"], i)))
        out_new_axes.append(False)
    return dims, out_new_axes


def strided_slice_dims(g: Graph, n: Node) -> tuple[list[SliceDim], tuple[int, ...]]:
    """Per input dim, what STRIDED_SLICE reads; and the output shape (new axes included)."""
    shape = _in(g, n).shape
    spec, new_axes = _dense_spec(n, len(shape))
    dims = []
    for d, (b, e, s, bm, em, shrink) in zip(shape, spec):
        lo, hi = (0, d) if s > 0 else (-1, d - 1)
        # begin_mask applies to a shrunk dim too (measured against LiteRT).
        start = (0 if s > 0 else d - 1) if bm else min(max(b + d if b < 0 else b, lo), hi)
        if shrink:
            dims.append(SliceDim(start, 1, 1, keep=False))
            continue
        stop = (d if s > 0 else -1) if em else min(max(e + d if e < 0 else e, lo), hi)
        size = max(0, -(-(stop - start) // s)) if s > 0 else max(0, -(-(start - stop) // -s))
        dims.append(SliceDim(start, s, size))
    out = []
    kept = iter(dims)
    for is_new in new_axes:
        if is_new:
            out.append(1)
            continue
        dim = next(kept)
        if dim.keep:
            out.append(dim.size)
    return dims, tuple(out)


def _infer_strided_slice(g, n):
    return _same(strided_slice_dims(g, n)[1], _in(g, n).dtype)


def slice_dims(g: Graph, n: Node) -> list[SliceDim]:
    """SLICE: begin and size per dim; size -1 means "to the end"."""
    shape = _in(g, n).shape
    return [SliceDim(b, 1, d - b if s == -1 else s) for d, b, s in zip(shape, n.attrs["begin"], n.attrs["size"])]


def _infer_slice(g, n):
    return _same([d.size for d in slice_dims(g, n)], _in(g, n).dtype)


def _infer_gather(g, n):
    x, axis = _in(g, n), n.attrs["axis"]
    return _same(x.shape[:axis] + np.shape(n.attrs["indices"]) + x.shape[axis + 1:], x.dtype)


def nested_tuple(a) -> tuple | int:
    """A numpy array as nested tuples of ints (hashable, printable attribute values)."""
    a = np.asarray(a)
    return tuple(nested_tuple(v) for v in a) if a.ndim else int(a)


def _infer_depth_to_space(g, n):
    x, b = _in(g, n), n.attrs["block_size"]
    nb, h, w, c = x.shape
    return _same((nb, h * b, w * b, c // (b * b)), x.dtype)


def _infer_space_to_depth(g, n):
    x, b = _in(g, n), n.attrs["block_size"]
    nb, h, w, c = x.shape
    return _same((nb, h // b, w // b, c * b * b), x.dtype)


# --- converter patterns ----------------------------------------------------------------

def _infer_shape(g, n):
    return _same((len(_in(g, n).shape),), "int32")


def _infer_space_to_batch(g, n):
    x = _in(g, n)
    (bh, bw), ((pt, pb), (pl, pr)) = n.attrs["block_shape"], n.attrs["paddings"]
    nb, h, w, c = x.shape
    return _same((nb * bh * bw, (h + pt + pb) // bh, (w + pl + pr) // bw, c), x.dtype)


def _infer_batch_to_space(g, n):
    x = _in(g, n)
    (bh, bw), ((ct, cb), (cl, cr)) = n.attrs["block_shape"], n.attrs["crops"]
    nb, h, w, c = x.shape
    return _same((nb // (bh * bw), h * bh - ct - cb, w * bw - cl - cr, c), x.dtype)


_SLICE_ATTRS = {"begin": (), "end": (), "strides": (), "begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0,
                "new_axis_mask": 0, "shrink_axis_mask": 0, "offset": False}

# Every op here moves bytes without arithmetic: int8 outputs keep the input's quantization
# ("same"), except the joins, whose inputs must share the output's ("shared").
register(OpDef("squeeze", ("input",), attrs={"axes": ()}, infer=_infer_squeeze, is_view=True, quant="same", int16=True))
register(OpDef("expand_dims", ("input",), attrs={"axis": 0}, infer=_infer_expand_dims, is_view=True, quant="same", int16=True))
register(OpDef("concatenation", ("values",), attrs={"axis": 0}, infer=_infer_concat, variadic=True, quant="shared",
               layout="axis", int16=True))
register(OpDef("split", ("input",), attrs={"axis": 0}, infer=_infer_split, quant="same", int16=True))
register(OpDef("split_v", ("input",), attrs={"axis": 0, "sizes": ()}, infer=_infer_split, quant="same",
               layout="axis", int16=True))
register(OpDef("pack", ("values",), attrs={"axis": 0}, infer=_infer_pack, variadic=True, quant="shared", int16=True))
register(OpDef("unpack", ("input",), attrs={"axis": 0}, infer=_infer_split, quant="same", int16=True))
register(OpDef("transpose", ("input",), attrs={"perm": ()}, infer=_infer_transpose, quant="same", int16=True))
register(OpDef("strided_slice", ("input",), attrs=dict(_SLICE_ATTRS), infer=_infer_strided_slice, quant="same",
               int16=True))
register(OpDef("slice", ("input",), attrs={"begin": (), "size": ()}, infer=_infer_slice, quant="same", int16=True))
# Constant indices only: they are an attribute (nested tuples), the lowering's flash table.
register(OpDef("gather", ("params",), attrs={"axis": 0, "indices": ()}, infer=_infer_gather, quant="same", int16=True))
register(OpDef("depth_to_space", ("input",), attrs={"block_size": 2}, infer=_infer_depth_to_space, quant="same"))
register(OpDef("space_to_depth", ("input",), attrs={"block_size": 2}, infer=_infer_space_to_depth, quant="same"))
# Converter patterns: fold_shape turns SHAPE into a constant; fold_dilated_conv removes
# the SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND pair around a convolution.
register(OpDef("shape", ("input",), infer=_infer_shape))
register(OpDef("space_to_batch_nd", ("input",), attrs={"block_shape": (1, 1), "paddings": ((0, 0), (0, 0))},
               infer=_infer_space_to_batch, quant="same"))
register(OpDef("batch_to_space_nd", ("input",), attrs={"block_shape": (1, 1), "crops": ((0, 0), (0, 0))},
               infer=_infer_batch_to_space, quant="same"))
