"""Data-movement ops (ops_shape): every one is a set of strided copies.

An op is described as one or more `Copy`s: a box of `extents`, read from the source at
`src_base + sum(i_k * src_strides[k])` and written to the destination at
`dst_base + sum(i_k * dst_strides[k])`. Concatenation/pack are one copy per input,
split/split_v/unpack one per output; transpose, slices, depth<->space and
batch_to_space_nd are one copy with permuted or scaled strides. Before a copy becomes a
loop nest, size-1 dims are dropped and dims that are contiguous in both buffers merged,
so a concatenation along the last axis of NHWC is a single loop per input.

No arithmetic happens: int8 values keep their quantization (TFLite requires it).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir.budget import elements
from ..ir.graph import Graph, Node
from ..ir.ops_shape import slice_dims, split_sizes, strided_slice_dims
from ..tir.nodes import (Buffer, Expr, FloatImm, IfThenElse, IntImm, Load, Select, Stmt, Store, Var, add, all_of,
                         binop, const, loops, mul, seq, sub)
from .common import constant, lowering, make_func, operand


@dataclass(frozen=True)
class Copy:
    src: Buffer
    dst: Buffer
    extents: tuple[int, ...]
    src_base: int
    src_strides: tuple[int, ...]
    dst_base: int
    dst_strides: tuple[int, ...]


def row_major(shape) -> tuple[int, ...]:
    strides, s = [], 1
    for d in reversed(shape):
        strides.append(s)
        s *= d
    return tuple(reversed(strides))


def _coalesce(c: Copy) -> list[tuple[int, int, int]]:
    """(extent, src stride, dst stride) per loop, outermost first, size-1 dims dropped and
    dims that are contiguous in both buffers merged."""
    dims = [(e, s, d) for e, s, d in zip(c.extents, c.src_strides, c.dst_strides) if e != 1]
    out: list[tuple[int, int, int]] = []
    for e, s, d in dims:
        if out and out[-1][1] == s * e and out[-1][2] == d * e:
            pe = out.pop()[0]
            out.append((pe * e, s, d))
        else:
            out.append((e, s, d))
    return out


def _flat(base: int, terms) -> Expr:
    e: Expr = IntImm(base)
    for v, stride in terms:
        e = add(e, mul(v, stride))
    return e


def copy_stmt(c: Copy, prefix: str, src_index=None) -> Stmt:
    """The loop nest of `c`; `src_index(vars)` may replace the affine source index (gather)."""
    dims = _coalesce(c)
    idx = [Var(f"{prefix}{k}") for k in range(len(dims))]
    dst = _flat(c.dst_base, [(v, d) for v, (_, _, d) in zip(idx, dims)])
    src = _flat(c.src_base, [(v, s) for v, (_, s, _) in zip(idx, dims)])
    return loops([(v, e) for v, (e, _, _) in zip(idx, dims)], Store(c.dst, dst, Load(c.src, src)))


def _flat_buf(g: Graph, name: str, buf_name: str) -> Buffer:
    # A constant source (an ONNX Concat of a weight) is read from flash.
    return operand(g, name, buf_name, shape=(g.tensors[name].size,))


def _func(g: Graph, node: Node, copies: list[Copy], extra: list[Buffer] = ()) -> object:
    bufs = list(dict.fromkeys([c.src for c in copies] + [c.dst for c in copies] + list(extra)))
    body = seq(*(copy_stmt(c, f"i{k}_" if len(copies) > 1 else "i") for k, c in enumerate(copies)))
    return make_func(g, node, bufs, body)


# --- joins and splits -------------------------------------------------------------------

@lowering("concatenation", "pack")
def lower_join(g: Graph, node: Node, target=None):
    """concatenation / pack: input k lands at offset k along the axis of the output."""
    out = g.tensors[node.outputs[0]]
    y = _flat_buf(g, out.name, "y")
    axis = node.attrs["axis"]
    ostr = row_major(out.shape)
    copies, offset = [], 0
    for k, name in enumerate(node.inputs):
        shape = g.tensors[name].shape
        if node.op == "pack":
            shape = shape[:axis] + (1,) + shape[axis:]
        copies.append(Copy(_flat_buf(g, name, f"x{k}"), y, shape, 0, row_major(shape),
                           offset * ostr[axis], ostr))
        offset += shape[axis]
    return _func(g, node, copies)


@lowering("split", "split_v", "unpack")
def lower_split(g: Graph, node: Node, target=None):
    """split / split_v / unpack: output k is the k-th block along the axis of the input."""
    xt = g.tensors[node.inputs[0]]
    x = _flat_buf(g, xt.name, "x")
    axis = node.attrs["axis"]
    istr = row_major(xt.shape)
    copies, offset = [], 0
    for k, (name, size) in enumerate(zip(node.outputs, split_sizes(g, node))):
        shape = xt.shape[:axis] + (size,) + xt.shape[axis + 1:]
        copies.append(Copy(x, _flat_buf(g, name, f"y{k}"), shape, offset * istr[axis], istr, 0, row_major(shape)))
        offset += size
    return _func(g, node, copies)


# --- one copy with permuted / scaled strides --------------------------------------------

def _single(g: Graph, node: Node, extents, src_base, src_strides):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    c = Copy(_flat_buf(g, xt.name, "x"), _flat_buf(g, yt.name, "y"), tuple(extents), int(src_base),
             tuple(src_strides), 0, row_major(extents))
    return _func(g, node, [c])


@lowering("transpose")
def lower_transpose(g: Graph, node: Node, target=None):
    perm = node.attrs["perm"]
    xs = g.tensors[node.inputs[0]].shape
    istr = row_major(xs)
    return _single(g, node, [xs[p] for p in perm], 0, [istr[p] for p in perm])


@lowering("strided_slice", "slice")
def lower_slice(g: Graph, node: Node, target=None):
    """slice / strided_slice: the kept and shrunk dims in input order (new axes and shrunk
    dims have size 1, so the output's row-major layout is that of the extents)."""
    dims = strided_slice_dims(g, node)[0] if node.op == "strided_slice" else slice_dims(g, node)
    istr = row_major(g.tensors[node.inputs[0]].shape)
    base = sum(d.start * s for d, s in zip(dims, istr))
    return _single(g, node, [d.size for d in dims], base, [d.stride * s for d, s in zip(dims, istr)])


@lowering("depth_to_space")
def lower_depth_to_space(g: Graph, node: Node, target=None):
    """Output viewed as [N, H, b, W, b, C] reads input viewed as [N, H, W, b, b, C]."""
    b = node.attrs["block_size"]
    n, h, w, _ = g.tensors[node.inputs[0]].shape
    c = g.tensors[node.outputs[0]].shape[3]
    s = row_major((n, h, w, b, b, c))
    return _single(g, node, (n, h, b, w, b, c), 0, (s[0], s[1], s[3], s[2], s[4], s[5]))


@lowering("space_to_depth")
def lower_space_to_depth(g: Graph, node: Node, target=None):
    """Output viewed as [N, H, W, b, b, C] reads input viewed as [N, H, b, W, b, C]."""
    b = node.attrs["block_size"]
    n, h, w, _ = g.tensors[node.outputs[0]].shape
    c = g.tensors[node.inputs[0]].shape[3]
    s = row_major((n, h, b, w, b, c))
    return _single(g, node, (n, h, w, b, b, c), 0, (s[0], s[1], s[3], s[2], s[4], s[5]))


def _nhwc(idx, shape) -> Expr:
    """((n*H + h)*W + w)*C + c."""
    flat: Expr = idx[0]
    for i, d in zip(idx[1:], shape[1:]):
        flat = add(mul(flat, d), i)
    return flat


def _space_batch(g: Graph, node: Node, to_batch: bool):
    """space_to_batch_nd / batch_to_space_nd over the batched tensor [B, H, W, C] (B = bh*bw*N):
    batch (i*bw + j)*N + n, pixel (h, w) is image pixel (n, h*bh + i - top, w*bw + j - left).
    Usually folded away by fold_dilated_conv; this is the standalone kernel. Padding reads
    the zero point (a real 0), as TFLite pads."""
    (bh, bw) = node.attrs["block_shape"]
    (top, _), (left, _) = node.attrs["paddings" if to_batch else "crops"]
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    batched, image = (yt, xt) if to_batch else (xt, yt)
    n = image.shape[0]
    x, y = _flat_buf(g, xt.name, "x"), _flat_buf(g, yt.name, "y")
    b, h, w, c = Var("b"), Var("h"), Var("w"), Var("c")
    phase, img_n = binop("div", b, n), binop("mod", b, n)
    ih = sub(add(mul(h, bh), binop("div", phase, bw)), top)
    iw = sub(add(mul(w, bw), binop("mod", phase, bw)), left)
    ih_size, iw_size = image.shape[1:3]
    image_at = _nhwc((img_n, ih, iw, c), image.shape)
    batched_at = _nhwc((b, h, w, c), batched.shape)
    extents = list(zip((b, h, w, c), batched.shape))
    inside = all_of([binop("ge", ih, 0), binop("lt", ih, ih_size), binop("ge", iw, 0), binop("lt", iw, iw_size)])
    if to_batch:
        zp = xt.quant.zp if xt.quant is not None else 0
        value = Select(inside, Load(x, image_at), const(zp, xt.dtype) if xt.dtype != "float32" else FloatImm(0.0))
        body = Store(y, batched_at, value)
    else:
        # Cropped pixels are skipped: the batched tensor is read only where the image exists.
        body = IfThenElse(inside, Store(y, image_at, Load(x, batched_at)))
    return make_func(g, node, [x, y], loops(extents, body))


@lowering("space_to_batch_nd")
def lower_space_to_batch(g: Graph, node: Node, target=None):
    return _space_batch(g, node, True)


@lowering("batch_to_space_nd")
def lower_batch_to_space(g: Graph, node: Node, target=None):
    return _space_batch(g, node, False)


@lowering("gather")
def lower_gather(g: Graph, node: Node, target=None):
    """out[o, j, i] = params[o, indices[j], i]; the indices are a flash table."""
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    axis = node.attrs["axis"]
    idx = np.asarray(node.attrs["indices"], dtype=np.int32).reshape(-1)
    outer = elements(xt.shape[:axis])
    inner = elements(xt.shape[axis + 1:])
    x, y = _flat_buf(g, xt.name, "x"), _flat_buf(g, yt.name, "y")
    table = constant("indices", idx, f"{node.name} indices [{idx.size}]")
    o, j, i = Var("o"), Var("j"), Var("i")
    src = add(add(mul(o, xt.shape[axis] * inner), mul(Load(table, j), inner)), i)
    dst = add(add(mul(o, idx.size * inner), mul(j, inner)), i)
    body = loops([(o, outer), (j, idx.size), (i, inner)], Store(y, dst, Load(x, src)))
    return make_func(g, node, [x, y, table], body)
