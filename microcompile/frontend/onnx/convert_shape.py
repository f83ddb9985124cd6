"""Flatten, Reshape, Transpose, Concat, Split, Slice, Squeeze, Unsqueeze, Gather, Pad,
Resize, Cast. (Constant, ConstantOfShape, Shape and whole shape chains never reach a
converter: the loader evaluates them at import.)

Resize maps onto resize_nearest_neighbor / resize_bilinear only when the IR's sampling
positions (nearest_index / bilinear_axis, TFLite's formulas) equal the ones ONNX's
coordinate_transformation_mode and nearest_mode give for these sizes; any other
combination is reported unsupported rather than approximated.
"""

from __future__ import annotations

import numpy as np

from ...ir import budget
from ...ir.ops_shape import nested_tuple
from ...reference.vision import bilinear_axis, nearest_index
from .registry import converter


def _const_input(ctx, node, i: int, what: str):
    if len(node.input) <= i or not node.input[i]:
        return None
    v = ctx.const(node.input[i])
    if v is None:
        ctx.unsupported(node, f"a runtime {what} (it must be a constant)")
    return np.asarray(v)


@converter("Flatten")
def _flatten(ctx, node):
    x = ctx.ir(node.input[0])
    shape = ctx.tensors[x].shape
    axis = int(ctx.attr(node, "axis", 1))
    axis = axis + len(shape) if axis < 0 else axis    # ONNX: axis in [-r, r]
    ctx.reshape(x, (budget.elements(shape[:axis]), budget.elements(shape[axis:])),
                out=node.output[0])


@converter("Reshape")
def _reshape(ctx, node):
    x = ctx.ir(node.input[0])
    shape = list(ctx.tensors[x].shape)
    target = [int(d) for d in _const_input(ctx, node, 1, "shape")]
    if not ctx.attr(node, "allowzero", 0):
        target = [shape[i] if d == 0 else d for i, d in enumerate(target)]
    if -1 in target:
        known = budget.elements([d for d in target if d != -1])
        target[target.index(-1)] = budget.elements(shape) // max(known, 1)
    ctx.reshape(x, target, out=node.output[0])


@converter("Squeeze")
def _squeeze(ctx, node):
    x = ctx.ir(node.input[0])
    shape = ctx.tensors[x].shape
    axes = ctx.attr(node, "axes") if ctx.opset < 13 else _const_input(ctx, node, 1, "axes")
    axes = {int(a) % len(shape) for a in np.atleast_1d(axes)} if axes is not None else \
        {i for i, d in enumerate(shape) if d == 1}
    ctx.reshape(x, [d for i, d in enumerate(shape) if i not in axes], out=node.output[0])


@converter("Unsqueeze")
def _unsqueeze(ctx, node):
    x = ctx.ir(node.input[0])
    shape = list(ctx.tensors[x].shape)
    axes = ctx.attr(node, "axes") if ctx.opset < 13 else _const_input(ctx, node, 1, "axes")
    rank = len(shape) + np.size(axes)
    for a in sorted(int(a) % rank for a in np.atleast_1d(axes)):
        shape.insert(a, 1)
    ctx.reshape(x, shape, out=node.output[0])


@converter("Transpose")
def _transpose(ctx, node):
    x = ctx.ir(node.input[0])
    rank = len(ctx.tensors[x].shape)
    perm = ctx.attr(node, "perm") or list(reversed(range(rank)))
    ctx.emit1("transpose", [x], {"perm": tuple(int(p) for p in perm)}, out=node.output[0])


@converter("Concat")
def _concat(ctx, node):
    ins = [ctx.ir(i) for i in node.input if i]
    rank = len(ctx.tensors[ins[0]].shape)
    ins = [i for i in ins if ctx.tensors[i].size]   # ONNX allows empty inputs
    ctx.emit1("concatenation", ins, {"axis": int(ctx.attr(node, "axis")) % rank}, out=node.output[0])


@converter("Split")
def _split(ctx, node):
    x = ctx.ir(node.input[0])
    shape = ctx.tensors[x].shape
    axis = int(ctx.attr(node, "axis", 0)) % len(shape)
    sizes = ctx.attr(node, "split") if ctx.opset < 13 else _const_input(ctx, node, 1, "split")
    n = len(node.output)
    if sizes is None:   # equal parts; from opset 18 the last part may be smaller
        part = -(-shape[axis] // n)
        sizes = [part] * (n - 1) + [shape[axis] - part * (n - 1)]
    ctx.emit("split_v", [x], {"axis": axis, "sizes": tuple(int(s) for s in sizes)}, outputs=list(node.output))


@converter("Slice")
def _slice(ctx, node):
    x = ctx.ir(node.input[0])
    shape = ctx.tensors[x].shape
    starts, ends = _const_input(ctx, node, 1, "starts"), _const_input(ctx, node, 2, "ends")
    axes = _const_input(ctx, node, 3, "axes")
    steps = _const_input(ctx, node, 4, "steps")
    axes = range(len(starts)) if axes is None else [int(a) % len(shape) for a in axes]
    steps = [1] * len(starts) if steps is None else [int(s) for s in steps]
    begin, end, strides, end_mask = [0] * len(shape), list(shape), [1] * len(shape), 0
    for a, s, e, st in zip(axes, starts, ends, steps):
        b, e, st = slice(int(max(min(s, 2**62), -2**62)), int(max(min(e, 2**62), -2**62)), st).indices(shape[a])
        begin[a], end[a], strides[a] = b, e, st
        if e < 0:   # a negative step running past index 0
            end_mask |= 1 << a
    ctx.emit1("strided_slice", [x], {"begin": tuple(begin), "end": tuple(end), "strides": tuple(strides),
                                     "end_mask": end_mask}, out=node.output[0])


@converter("Gather")
def _gather(ctx, node):
    x = ctx.ir(node.input[0])
    idx = _const_input(ctx, node, 1, "indices")
    rank = len(ctx.tensors[x].shape)
    axis = int(ctx.attr(node, "axis", 0)) % rank
    idx = np.where(idx < 0, idx + ctx.tensors[x].shape[axis], idx)
    ctx.emit1("gather", [x], {"axis": axis, "indices": nested_tuple(idx)}, out=node.output[0])


@converter("Cast")
def _cast(ctx, node):
    from onnx import TensorProto
    if ctx.attr(node, "to") != TensorProto.FLOAT or ctx.dtype(node.input[0]) != "float32":
        ctx.unsupported(node, "a Cast other than float32 -> float32 on runtime data")
    ctx.bind(node.output[0], ctx.ir(node.input[0]))


@converter("Pad")
def _pad(ctx, node):
    x = ctx.ir(node.input[0])
    rank = len(ctx.tensors[x].shape)
    if ctx.attr(node, "mode", "constant") != "constant":
        ctx.unsupported(node, f"mode {ctx.attr(node, 'mode')!r} (only constant padding is supported)")
    pads = _const_input(ctx, node, 1, "pads")
    value = _const_input(ctx, node, 2, "constant value")
    axes = _const_input(ctx, node, 3, "axes")
    axes = list(range(rank)) if axes is None else [int(a) % rank for a in axes]
    k = len(axes)
    pairs = [(0, 0)] * rank
    for j, a in enumerate(axes):
        pairs[a] = (int(pads[j]), int(pads[j + k]))
    if min(min(p) for p in pairs) < 0:
        ctx.unsupported(node, "negative pads (cropping)")
    value = float(value.reshape(-1)[0]) if value is not None and value.size else 0.0
    op, attrs = ("pad", {}) if value == 0.0 else ("pad_v2", {"value": value})
    ctx.emit1(op, [x], dict(attrs, pads=tuple(pairs)), out=node.output[0])


def _onnx_coords(mode: str, n_in: int, n_out: int, scale: float) -> np.ndarray:
    x = np.arange(n_out, dtype=np.float64)
    if mode == "half_pixel":
        return (x + 0.5) / scale - 0.5
    if mode == "pytorch_half_pixel":
        return (x + 0.5) / scale - 0.5 if n_out > 1 else np.zeros(n_out)
    if mode == "align_corners":
        return x * (n_in - 1) / (n_out - 1) if n_out > 1 else np.zeros(n_out)
    if mode == "asymmetric":
        return x / scale
    if mode == "tf_half_pixel_for_nn":
        return (x + 0.5) / scale
    return None


_ROUND = {"round_prefer_floor": lambda v: np.ceil(v - 0.5), "round_prefer_ceil": lambda v: np.floor(v + 0.5),
          "floor": np.floor, "ceil": np.ceil}


def _matches(kind: str, coords, n_in: int, n_out: int, nearest_mode: str, ac: bool, hpc: bool) -> bool:
    if kind == "nearest":
        want = np.clip(_ROUND[nearest_mode](coords), 0, n_in - 1).astype(np.int64)
        return np.array_equal(want, np.asarray(nearest_index(n_in, n_out, ac, hpc)))
    c = np.clip(coords, 0, n_in - 1)
    lo = np.floor(c).astype(np.int64)
    ours = bilinear_axis(n_in, n_out, ac, hpc, False)
    return _same_sampling((lo, np.minimum(lo + 1, n_in - 1), c - lo),
                          (np.asarray(ours.lo, np.int64), np.asarray(ours.hi, np.int64), np.asarray(ours.frac, np.float64)))


def _same_sampling(a, b) -> bool:
    """Whether two linear samplings (lo, hi, frac: each output reads 1 - frac of input lo and
    frac of input hi) weigh every input alike, whatever their lo/hi bookkeeping: the (out, in)
    interpolation matrices compared where either reads, without making them (out x in)."""
    at = np.stack([a[0], a[1], b[0], b[1]], axis=1)      # (out, 4): every input either reads

    def weights(lo, hi, frac):
        return (at == lo[:, None]) * (1 - frac)[:, None] + (at == hi[:, None]) * frac[:, None]
    return np.allclose(weights(*a), weights(*b), atol=1e-6)


@converter("Resize")
def _resize(ctx, node):
    x = ctx.ir(node.input[0])
    shape = ctx.tensors[x].shape
    if len(shape) != 4:
        ctx.unsupported(node, f"resizing a rank-{len(shape)} tensor (only 4-D NCHW is supported)")
    mode = ctx.attr(node, "mode", "nearest")
    coord = ctx.attr(node, "coordinate_transformation_mode", "half_pixel")
    nearest_mode = ctx.attr(node, "nearest_mode", "round_prefer_floor")
    if mode not in ("nearest", "linear") or ctx.attr(node, "antialias", 0) or ctx.attr(node, "axes") is not None:
        ctx.unsupported(node, f"mode {mode!r} (with antialias/axes); nearest and linear are supported")
    scales = _const_input(ctx, node, 2, "scales")
    sizes = _const_input(ctx, node, 3, "sizes")
    if sizes is not None and sizes.size:
        out = [int(s) for s in sizes]
        scale = [out[i] / shape[i] for i in range(4)]
    elif scales is not None and scales.size:
        scale = [float(s) for s in scales]
        out = [int(np.floor(shape[i] * scale[i])) for i in range(4)]
    else:
        ctx.unsupported(node, "neither scales nor sizes given")
    if out[:2] != list(shape[:2]):
        ctx.unsupported(node, "resizing the batch or channel axis")
    budget.check_tensor(ctx.what(node), out, 4)   # before the sampling tables, of its size
    for ac, hpc in ((False, False), (True, False), (False, True)):
        if all(_onnx_coords(coord, shape[i], out[i], scale[i]) is not None
               and _matches(mode, _onnx_coords(coord, shape[i], out[i], scale[i]), shape[i], out[i],
                            nearest_mode, ac, hpc) for i in (2, 3)):
            op = "resize_nearest_neighbor" if mode == "nearest" else "resize_bilinear"
            y = ctx.emit1(op, [ctx.to_nhwc(x)], {"size": (out[2], out[3]), "align_corners": ac,
                                                 "half_pixel_centers": hpc})
            ctx.to_nchw(y, out=node.output[0])
            return
    ctx.unsupported(node, f"{mode} resize with coordinate_transformation_mode={coord!r}"
                          + (f", nearest_mode={nearest_mode!r}" if mode == "nearest" else "")
                          + f" from {shape[2:]} to {tuple(out[2:])} samples positions TFLite's kernels cannot")
