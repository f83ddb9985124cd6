"""Test plans and graph builders of the shape / data-movement family
(microcompile/ir/ops_shape.py): squeeze, expand_dims, concatenation, split, split_v, pack,
unpack, transpose, strided_slice, slice, gather, depth_to_space, space_to_depth.

Merged into op_cases.PLANS / op_cases.BUILDERS on import. Plans pick a shape and a few
knobs; the builder draws the rest (axes, slice bounds, masks, indices) from the case's
seed, so each case is a different random attribute set. int8 outputs keep the input's
quantization, as TFLite requires for these ops.
"""

from __future__ import annotations

import numpy as np

from support.op_cases import BUILDERS, PLANS
from microcompile.ir.ops_shape import nested_tuple, strided_slice_dims

_SHAPES = ((1, 4, 6, 3), (2, 5, 4), (6, 7), (9,), (2, 3, 2, 4), (1, 1, 5, 2), (3, 2, 4, 1, 2))

PLANS.update({
    "squeeze": {"case": (((1, 4, 1, 3), (0, 2)), ((1, 1, 5), ()), ((2, 1, 3, 1), (-1,)), ((1, 6), (0,)),
                         ((3, 1, 1, 2), (1, 2)), ((1, 1, 1, 7), ()), ((1, 2, 1), (-3, 2)))},
    "expand_dims": {"case": (((4, 3), 0), ((4, 3), -1), ((2, 3, 4), 1), ((5,), 1), ((1, 2, 3), 3),
                             ((2, 2), -2), ((1, 3, 3, 2), 4))},
    "concatenation": {"shape": _SHAPES[:6], "axis": (0, 1, 2, 3, -1), "n": (1, 2, 3, 4)},
    "split": {"shape": _SHAPES, "axis": (0, 1, 2, 3, -1), "num": (1, 2, 3)},
    "split_v": {"shape": _SHAPES, "axis": (0, 1, 2, 3, -1), "num": (1, 2, 3, 4)},
    "pack": {"shape": ((3,), (2, 3), (1, 4, 5), (2, 2, 2, 3), (4, 1)), "axis": (0, 1, 2, 3, -1),
             "n": (1, 2, 3)},
    "unpack": {"shape": ((3, 4), (2, 3, 4), (1, 4, 2, 3), (5, 2, 2), (2, 2, 3, 2, 2)),
               "axis": (0, 1, 2, 3, -1)},
    "transpose": {"shape": _SHAPES[:5] + ((2, 1, 3, 2, 2), (3, 4, 2, 2, 1, 2))},
    "strided_slice": {"shape": ((1, 6, 7, 4), (8, 9), (2, 5, 6), (10,), (3, 4, 5, 2, 2)),
                      "masks": (False, True, True), "shrink": (False, False, True),
                      "ellipsis": (False, False, True), "new_axis": (False, False, True)},
    "slice": {"shape": _SHAPES, "to_end": (False, True)},
    "gather": {"shape": ((5, 3), (4, 6, 2), (1, 5, 4, 3), (7,), (3, 4, 5, 2)),
               "indices": ((3,), (2, 2), (1,), (4,), (2, 3)), "axis": (0, 1, 2, 3, -1)},
    "depth_to_space": {"batch": (1, 1, 2), "hw": ((1, 1), (2, 3), (4, 4), (3, 1)), "block": (2, 3),
                       "c": (1, 2, 3)},
    "space_to_depth": {"batch": (1, 1, 2), "hw": ((1, 1), (2, 3), (4, 4), (3, 1)), "block": (2, 3),
                       "c": (1, 2, 3)},
})


def _axis(case, rank: int) -> int:
    """The plan's axis folded into [-rank, rank) (negative axes stay negative)."""
    a = case["axis"]
    return a if a < 0 else a % rank


def _x(b, shape, name="x"):
    x = b.act(name, shape)
    return x, b.tensors[x].quant


def _squeeze(case, b):
    shape, axes = case["case"]
    x, q = _x(b, shape)
    return (x,), {"axes": tuple(a % len(shape) for a in axes)}, q


def _expand_dims(case, b):
    shape, axis = case["case"]
    x, q = _x(b, shape)
    return (x,), {"axis": axis % (len(shape) + 1)}, q


def _concatenation(case, b):
    shape = case["shape"]
    axis = _axis(case, len(shape)) % len(shape)
    q = None
    names = []
    for k in range(case["n"]):
        s = list(shape)
        s[axis] = int(b.rng.integers(1, 4))
        names.append(b.act(f"x{k}", s, q))
        q = b.tensors[names[-1]].quant
    return tuple(names), {"axis": axis}, q


def _split(case, b):
    shape = list(case["shape"])
    axis = _axis(case, len(shape)) % len(shape)
    num = case["num"]
    if case["op"] == "split":
        shape[axis] = num * int(b.rng.integers(1, 3))
        x, q = _x(b, shape)
        return (x,), {"axis": axis}, q, num
    # Sizes >= 1: a zero-size output has no bytes to place in the arena.
    sizes = [int(s) for s in b.rng.integers(1, 4, num)]
    shape[axis] = sum(sizes)
    x, q = _x(b, shape)
    return (x,), {"axis": axis, "sizes": tuple(sizes)}, q, num


def _pack(case, b):
    shape = case["shape"]
    axis = case["axis"] % (len(shape) + 1)
    x0, q = _x(b, shape, "x0")
    names = [x0] + [b.act(f"x{k}", shape, q) for k in range(1, case["n"])]
    return tuple(names), {"axis": axis}, q


def _unpack(case, b):
    shape = case["shape"]
    axis = case["axis"] % len(shape)
    x, q = _x(b, shape)
    return (x,), {"axis": axis}, q, shape[axis]


def _transpose(case, b):
    shape = case["shape"]
    x, q = _x(b, shape)
    return (x,), {"perm": tuple(int(p) for p in b.rng.permutation(len(shape)))}, q


def _random_slice(b, case, shape) -> dict:
    """Random begin/end/strides and masks, in TFLite's sparse encoding."""
    rng, rank = b.rng, len(shape)
    attrs = {"begin": [], "end": [], "strides": [], "begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0,
             "new_axis_mask": 0, "shrink_axis_mask": 0, "offset": False}
    ellipsis_at = int(rng.integers(rank)) if case["ellipsis"] and rank > 1 else None
    covered = int(rng.integers(1, rank + 1)) if ellipsis_at is not None else 0
    entries = []   # "dim", "ellipsis", "new"
    if ellipsis_at is None:
        entries = ["dim"] * rank
    else:
        before = ellipsis_at
        after = rank - covered - before
        if after < 0:
            before, after = rank - covered, 0
        entries = ["dim"] * before + ["ellipsis"] + ["dim"] * after
    if case["new_axis"]:
        entries.insert(int(rng.integers(len(entries) + 1)), "new")
    dense = 0   # the input dim the entry addresses
    for i, kind in enumerate(entries):
        bit = 1 << i
        d = shape[dense] if kind == "dim" else 1
        dense += {"dim": 1, "ellipsis": covered, "new": 0}[kind]
        attrs["begin"].append(int(rng.integers(-d, d)))
        attrs["end"].append(int(rng.integers(-d - 1, d + 2)))
        attrs["strides"].append(int(rng.choice((1, 1, 2, 3, -1, -2))))
        if kind == "ellipsis":
            attrs["ellipsis_mask"] |= bit
        elif kind == "new":
            attrs["new_axis_mask"] |= bit
        else:
            if case["masks"]:
                attrs["begin_mask"] |= bit * int(rng.integers(2))
                attrs["end_mask"] |= bit * int(rng.integers(2))
            if case["shrink"] and rng.integers(3) == 0:
                attrs["shrink_axis_mask"] |= bit
                attrs["strides"][-1] = 1
    return {k: tuple(v) if isinstance(v, list) else v for k, v in attrs.items()}


def _strided_slice(case, b):
    shape = case["shape"]
    x, q = _x(b, shape)
    probe_graph = type("G", (), {"tensors": b.tensors})
    for _ in range(200):   # redraw until every dim is in range and the result is not empty
        attrs = _random_slice(b, case, shape)
        node = type("N", (), {"attrs": attrs, "inputs": (x,), "op": "strided_slice"})
        try:
            dims, out = strided_slice_dims(probe_graph, node)
        except (IndexError, StopIteration):
            continue
        if all(0 <= d.start < s for d, s in zip(dims, shape)) and min(out, default=1) > 0:
            return (x,), attrs, q
    raise AssertionError("no valid strided slice drawn")


def _slice(case, b):
    shape = case["shape"]
    x, q = _x(b, shape)
    begin = tuple(int(b.rng.integers(d)) for d in shape)
    size = tuple(-1 if case["to_end"] and b.rng.integers(2) else int(b.rng.integers(1, d - s + 1))
                 for d, s in zip(shape, begin))
    return (x,), {"begin": begin, "size": size}, q


def _gather(case, b):
    shape = case["shape"]
    axis = _axis(case, len(shape)) % len(shape)
    x, q = _x(b, shape)
    idx = b.rng.integers(0, shape[axis], case["indices"])
    return (x,), {"axis": axis, "indices": nested_tuple(idx)}, q


def _depth_space(case, b):
    k = case["block"]
    h, w = case["hw"]
    if case["op"] == "depth_to_space":
        x, q = _x(b, (case["batch"], h, w, case["c"] * k * k))
    else:
        x, q = _x(b, (case["batch"], h * k, w * k, case["c"]))
    return (x,), {"block_size": k}, q


BUILDERS.update({
    "squeeze": _squeeze, "expand_dims": _expand_dims, "concatenation": _concatenation,
    "split": _split, "split_v": _split, "pack": _pack, "unpack": _unpack, "transpose": _transpose,
    "strided_slice": _strided_slice, "slice": _slice, "gather": _gather,
    "depth_to_space": _depth_space, "space_to_depth": _depth_space,
})


# The converter-pattern ops, standalone (fold_dilated_conv removes them around a conv).
PLANS.update({
    "space_to_batch_nd": {"batch": (1, 2), "hw": ((4, 4), (5, 7), (3, 6)), "block": ((2, 2), (3, 2), (1, 3)),
                          "c": (1, 3), "pad": (False, True)},
    "batch_to_space_nd": {"batch": (1, 2), "hw": ((2, 2), (3, 4), (1, 3)), "block": ((2, 2), (3, 2), (1, 3)),
                          "c": (1, 3), "crop": (False, True)},
})


def _space_batch(case, b):
    bh, bw = case["block"]
    h, w = case["hw"]
    rng = b.rng
    if case["op"] == "space_to_batch_nd":
        pads = [(int(rng.integers(0, 3)) if case["pad"] else 0, 0) for _ in range(2)]
        # The end padding makes each padded size a multiple of the block.
        pads = tuple((lo, (-(size + lo)) % k + (k if case["pad"] and rng.integers(2) else 0))
                     for (lo, _), size, k in zip(pads, (h, w), (bh, bw)))
        x, q = _x(b, (case["batch"], h, w, case["c"]))
        return (x,), {"block_shape": (bh, bw), "paddings": pads}, q
    x, q = _x(b, (case["batch"] * bh * bw, h, w, case["c"]))
    crops = []
    for size, k in ((h, bh), (w, bw)):
        total = int(rng.integers(0, size * k)) if case["crop"] else 0
        lo = int(rng.integers(0, total + 1))
        crops.append((lo, total - lo))
    return (x,), {"block_shape": (bh, bw), "crops": tuple(crops)}, q


BUILDERS.update({"space_to_batch_nd": _space_batch, "batch_to_space_nd": _space_batch})
