"""Interpreter kernels of the shape and data-movement ops (see `ops_shape`).

Plain numpy indexing: an independent statement of each op's semantics, which the tests
hold against LiteRT, while the lowering uses the index arithmetic of `ops_shape`.
"""

from __future__ import annotations

import numpy as np

from .interp import kernel
from ..ir.ops_shape import check_same_quant, slice_dims, split_sizes, strided_slice_dims


@kernel("squeeze", "expand_dims")
def _view(graph, node, x):
    return x.reshape(graph.tensors[node.outputs[0]].shape)


@kernel("concatenation")
def _concatenation(graph, node, *xs):
    check_same_quant(graph, node)
    return np.concatenate(xs, axis=node.attrs["axis"])


@kernel("split", "split_v", "unpack")
def _split(graph, node, x):
    bounds = np.cumsum(split_sizes(graph, node))[:-1]
    parts = np.split(x, bounds, axis=node.attrs["axis"])
    if node.op == "unpack":
        parts = [np.squeeze(part, axis=node.attrs["axis"]) for part in parts]
    return parts


@kernel("pack")
def _pack(graph, node, *xs):
    check_same_quant(graph, node)
    return np.stack(xs, axis=node.attrs["axis"])


@kernel("transpose")
def _transpose(graph, node, x):
    return np.transpose(x, node.attrs["perm"])


def _index(dims):
    """numpy index for SliceDims; a negative stride that runs past element 0 needs stop None."""
    def one(d):
        stop = d.start + d.stride * d.size
        return slice(d.start, stop if stop >= 0 else None, d.stride) if d.keep else d.start
    return tuple(one(d) for d in dims)


@kernel("strided_slice")
def _strided_slice(graph, node, x):
    dims, shape = strided_slice_dims(graph, node)
    return x[_index(dims)].reshape(shape)


@kernel("slice")
def _slice(graph, node, x):
    return x[_index(slice_dims(graph, node))]


@kernel("gather")
def _gather(graph, node, x):
    return np.take(x, np.asarray(node.attrs["indices"], dtype=np.int64), axis=node.attrs["axis"])


@kernel("depth_to_space")
def _depth_to_space(graph, node, x):
    b = node.attrs["block_size"]
    n, h, w, c = x.shape
    # Input channel (bh * b + bw) * C_out + c lands at pixel (h * b + bh, w * b + bw).
    return x.reshape(n, h, w, b, b, c // (b * b)).transpose(0, 1, 3, 2, 4, 5).reshape(n, h * b, w * b, -1)


@kernel("space_to_depth")
def _space_to_depth(graph, node, x):
    b = node.attrs["block_size"]
    n, h, w, c = x.shape
    return x.reshape(n, h // b, b, w // b, b, c).transpose(0, 1, 3, 2, 4, 5).reshape(n, h // b, w // b, -1)


@kernel("shape")
def _shape(graph, node, x):
    return np.array(x.shape, dtype=np.int32)


def _pad_value(graph, node) -> int:
    # SPACE_TO_BATCH_ND pads quantized tensors with the output zero point (a real 0).
    q = graph.tensors[node.outputs[0]].quant
    return q.zp if q is not None else 0


@kernel("space_to_batch_nd")
def _space_to_batch_nd(graph, node, x):
    (bh, bw), ((pt, pb), (pl, pr)) = node.attrs["block_shape"], node.attrs["paddings"]
    xp = np.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)), constant_values=_pad_value(graph, node))
    n, h, w, c = xp.shape
    # Output batch (bh_i * bw + bw_i) * N + n holds pixels (h * bh + bh_i, w * bw + bw_i).
    return xp.reshape(n, h // bh, bh, w // bw, bw, c).transpose(2, 4, 0, 1, 3, 5).reshape(-1, h // bh, w // bw, c)


@kernel("batch_to_space_nd")
def _batch_to_space_nd(graph, node, x):
    (bh, bw), ((ct, cb), (cl, cr)) = node.attrs["block_shape"], node.attrs["crops"]
    nb, h, w, c = x.shape
    n = nb // (bh * bw)
    y = x.reshape(bh, bw, n, h, w, c).transpose(2, 3, 0, 4, 1, 5).reshape(n, h * bh, w * bw, c)
    return y[:, ct:h * bh - cb, cl:w * bw - cr, :]
