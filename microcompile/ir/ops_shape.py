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


def same_quant_problem(g: Graph, n: Node) -> str | None:
    """int8 CONCATENATION / PACK: every input must share the output's quantization."""
    out = g.tensors[n.outputs[0]]
    if out.dtype not in ("int8", "int16"):
        return None
    for name in n.inputs:
        if not g.tensors[name].quant.same_as(out.quant):
            return (f"int8 {n.op} input {name} is quantized differently from the output; TFLite requires "
                    "equal scale and zero point")
    return None


def check_same_quant(g: Graph, n: Node) -> None:
    problem = same_quant_problem(g, n)
    if problem is not None:
        raise ValueError(f"{n.name}: {problem}")


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


# --- checks: attributes that must fit the input's shape ------------------------------------

def _axis_problem(axis: int, rank: int) -> str | None:
    return None if 0 <= axis < rank else f"axis {axis} is out of range for rank {rank}"


def _check_concat(g, n):
    xs = [g.tensors[i] for i in n.inputs]
    axis, shape = n.attrs["axis"], xs[0].shape
    problem = _axis_problem(axis, len(shape))
    if problem:
        return problem
    for x in xs[1:]:
        if len(x.shape) != len(shape) or any(a != b for i, (a, b) in enumerate(zip(x.shape, shape)) if i != axis):
            return f"inputs {xs[0].name} {shape} and {x.name} {x.shape} differ outside axis {axis}"
    return same_quant_problem(g, n)


def _check_pack(g, n):
    xs = [g.tensors[i] for i in n.inputs]
    if any(x.shape != xs[0].shape for x in xs):
        return "inputs of different shapes " + ", ".join(str(x.shape) for x in xs)
    return _axis_problem(n.attrs["axis"], len(xs[0].shape) + 1) or same_quant_problem(g, n)


def _check_split(g, n):
    x = _in(g, n)
    axis = n.attrs["axis"]
    problem = _axis_problem(axis, len(x.shape))
    if problem:
        return problem
    sizes = split_sizes(g, n)
    if len(sizes) != len(n.outputs) or sum(sizes) != x.shape[axis] or min(sizes, default=0) < 0:
        return f"cannot split {x.shape[axis]} elements of axis {axis} into {len(n.outputs)} outputs of sizes {sizes}"
    return None


def _check_expand_dims(g, n):
    return _axis_problem(norm_axis(n.attrs["axis"], len(_in(g, n).shape) + 1), len(_in(g, n).shape) + 1)


def _check_squeeze(g, n):
    shape = _in(g, n).shape
    bad = [a for a in n.attrs["axes"] if not -len(shape) <= a < len(shape) or shape[norm_axis(a, len(shape))] != 1]
    return f"cannot squeeze axes {tuple(n.attrs['axes'])} of shape {shape}" if bad else None


def _check_transpose(g, n):
    rank = len(_in(g, n).shape)
    perm = tuple(n.attrs["perm"])
    return None if sorted(perm) == list(range(rank)) else f"perm {perm} is not a permutation of {rank} axes"


def _check_slice(g, n):
    shape = _in(g, n).shape
    if not len(n.attrs["begin"]) == len(n.attrs["size"]) == len(shape):
        return f"begin/size {n.attrs['begin']}/{n.attrs['size']} do not match rank {len(shape)}"
    for d, dim in zip(shape, slice_dims(g, n)):
        if dim.start < 0 or dim.size < 0 or dim.start + dim.size > d:
            return f"slice begin {n.attrs['begin']} size {n.attrs['size']} is outside shape {shape}"
    return None


def _check_strided_slice(g, n):
    a = n.attrs
    if not len(a["begin"]) == len(a["end"]) == len(a["strides"]) or 0 in a["strides"]:
        return f"begin/end/strides {a['begin']}/{a['end']}/{a['strides']} are not one non-zero stride per index"
    return None


def _check_gather(g, n):
    x, axis = _in(g, n), n.attrs["axis"]
    problem = _axis_problem(axis, len(x.shape))
    if problem:
        return problem
    indices = np.asarray(n.attrs["indices"])
    if indices.size and (indices.min() < 0 or indices.max() >= x.shape[axis]):
        return f"indices outside 0..{x.shape[axis] - 1} of axis {axis}"
    return None


def _check_block(g, n):
    _, h, w, c = _in(g, n).shape
    b = n.attrs["block_size"]
    if b < 1:
        return f"block size {b} must be at least 1"
    if n.op == "depth_to_space" and c % (b * b):
        return f"{c} channels are not a multiple of block size {b} squared"
    if n.op == "space_to_depth" and (h % b or w % b):
        return f"height {h} and width {w} are not multiples of block size {b}"
    return None


def _check_space_batch(g, n):
    _, h, w, _ = _in(g, n).shape
    (bh, bw) = n.attrs["block_shape"]
    if min(bh, bw) < 1:
        return f"block shape {(bh, bw)} must be at least 1"
    if n.op == "space_to_batch_nd":
        ((pt, pb), (pl, pr)) = n.attrs["paddings"]
        if min(pt, pb, pl, pr) < 0 or (h + pt + pb) % bh or (w + pl + pr) % bw:
            return f"padded size does not divide into blocks {(bh, bw)}"
    elif _in(g, n).shape[0] % (bh * bw) or min(x for pair in n.attrs["crops"] for x in pair) < 0:
        return f"batch {_in(g, n).shape[0]} is not a multiple of the block {(bh, bw)}, or a crop is negative"
    return None


_SLICE_ATTRS = {"begin": (), "end": (), "strides": (), "begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0,
                "new_axis_mask": 0, "shrink_axis_mask": 0, "offset": False}

# Every op here moves bytes without arithmetic: int8 outputs keep the input's quantization
# ("same"), except the joins, whose inputs must share the output's ("shared").
register(OpDef("squeeze", ("input",), attrs={"axes": ()}, infer=_infer_squeeze, is_view=True, quant="same",
               check=_check_squeeze, int16=True))
register(OpDef("expand_dims", ("input",), attrs={"axis": 0}, infer=_infer_expand_dims, is_view=True, quant="same",
               check=_check_expand_dims, int16=True))
register(OpDef("concatenation", ("values",), attrs={"axis": 0}, infer=_infer_concat, variadic=True, quant="shared",
               layout="axis", check=_check_concat, int16=True))
register(OpDef("split", ("input",), attrs={"axis": 0}, infer=_infer_split, quant="same", check=_check_split, int16=True))
register(OpDef("split_v", ("input",), attrs={"axis": 0, "sizes": ()}, infer=_infer_split, quant="same",
               layout="axis", check=_check_split, int16=True))
register(OpDef("pack", ("values",), attrs={"axis": 0}, infer=_infer_pack, variadic=True, quant="shared",
               check=_check_pack, int16=True))
register(OpDef("unpack", ("input",), attrs={"axis": 0}, infer=_infer_split, quant="same", check=_check_split, int16=True))
register(OpDef("transpose", ("input",), attrs={"perm": ()}, infer=_infer_transpose, quant="same",
               check=_check_transpose, int16=True))
register(OpDef("strided_slice", ("input",), attrs=dict(_SLICE_ATTRS), infer=_infer_strided_slice, quant="same",
               check=_check_strided_slice, int16=True))
register(OpDef("slice", ("input",), attrs={"begin": (), "size": ()}, infer=_infer_slice, quant="same",
               check=_check_slice, int16=True))
# Constant indices only: they are an attribute (nested tuples), the lowering's flash table.
register(OpDef("gather", ("params",), attrs={"axis": 0, "indices": ()}, infer=_infer_gather, quant="same",
               check=_check_gather, int16=True))
register(OpDef("depth_to_space", ("input",), attrs={"block_size": 2}, infer=_infer_depth_to_space, quant="same",
               ranks=(4,), check=_check_block))
register(OpDef("space_to_depth", ("input",), attrs={"block_size": 2}, infer=_infer_space_to_depth, quant="same",
               ranks=(4,), check=_check_block))
# Converter patterns: fold_shape turns SHAPE into a constant; fold_dilated_conv removes
# the SPACE_TO_BATCH_ND / BATCH_TO_SPACE_ND pair around a convolution.
register(OpDef("shape", ("input",), infer=_infer_shape))
register(OpDef("space_to_batch_nd", ("input",), attrs={"block_shape": (1, 1), "paddings": ((0, 0), (0, 0))},
               infer=_infer_space_to_batch, quant="same", ranks=(4,), check=_check_space_batch))
register(OpDef("batch_to_space_nd", ("input",), attrs={"block_shape": (1, 1), "crops": ((0, 0), (0, 0))},
               infer=_infer_batch_to_space, quant="same", ranks=(4,), check=_check_space_batch))
