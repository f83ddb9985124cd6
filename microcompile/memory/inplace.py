"""In-place rules: where a kernel may write its output over an input that dies with it, and
concatenations whose inputs can be written straight into their slice of the output.

What an op's kernels allow is its OpDef's `inplace` trait (ir/ops.py, `ops.inplace_kind`):

  "elementwise"  output element i is computed from input elements i and written after they
                 are read, in increasing i (any SIMD width). Same element size: the output
                 may sit exactly on the input (max_shift 0). int8 -> float32 (dequantize):
                 the output's element i may cover input elements <= i only.
  "window"       NHWC convolution/pooling kernels that write output pixels in row-major
                 order, each after reading its window. Output pixel q may then cover any
                 input byte that no pixel q' >= q reads: max_shift is the smallest gap, over
                 q, between the end of output pixel q and the lowest input byte read by a
                 pixel q' >= q. A pixel's own window counts, so nothing is assumed about the
                 order of reads and writes inside one pixel (or one micro-kernel call).
                 This is TinyEngine's in-place depthwise convolution generalised: a 3x3,
                 stride-1 layer needs one row and two pixels of slack, not a second tensor.
  "rows"         a fused row group (layer_norm, attention: ir/ops_fused.py) writes row r of
                 its output after its ops have read row r of an input, rows in increasing
                 order: the output may sit exactly on an input of its shape and element size
                 that the body reads row by row (RowGroup.written_over; not K or V).
  "bands"        a patch stage (ir/ops_patch.py) reads its input's rows for a band before it
                 writes the band's output rows, bands top to bottom: the window rule with a
                 band for a pixel (PatchStage.write_shift).

Offsets are bytes, rounded down to the arena's alignment. Tests run every such kernel with
its output aliased onto its input at max_shift and compare with the reference.
"""

from __future__ import annotations

import numpy as np

from ..ir import Graph, ops
from ..ir.budget import elements
from ..ir.graph import NP_DTYPES
from ..ir.graph import Node
from .liveness import ALIGNMENT, Alias, Overlap


def _elem(g: Graph, name: str) -> int:
    return np.dtype(NP_DTYPES[g.tensors[name].dtype]).itemsize


def _floor(v: int) -> int:
    return v // ALIGNMENT * ALIGNMENT


def elementwise_shift(n_elems: int, in_elem: int, out_elem: int) -> int | None:
    """max_shift for an elementwise kernel: y[i] written after x[i] is read, in increasing i.
    None when anything goes (a single element)."""
    if n_elems <= 1:
        return None
    d = in_elem - out_elem
    return d if d >= 0 else d * (n_elems - 1)


def _first_taps(out_n: int, in_n: int, k: int, stride: int, dil: int, pad: int) -> np.ndarray:
    """The lowest in-bounds input coordinate each output coordinate reads (-1: none)."""
    first = np.full(out_n, -1, np.int64)
    for o in range(out_n):
        for t in range(k):
            i = o * stride - pad + t * dil
            if 0 <= i < in_n:
                first[o] = i
                break
    return first


def window_shift(in_shape, out_shape, in_elem: int, out_elem: int, window: tuple[int, int],
                 stride=(1, 1), dilation=(1, 1), padding=(0, 0, 0, 0)) -> int | None:
    """max_shift for a row-major NHWC window kernel (see the module docstring), in bytes;
    None when no pixel reads any input."""
    batch, in_h, in_w, in_c = in_shape
    _, out_h, out_w, out_c = out_shape
    rows = _first_taps(out_h, in_h, window[0], stride[0], dilation[0], padding[0])
    cols = _first_taps(out_w, in_w, window[1], stride[1], dilation[1], padding[1])
    b = np.arange(batch)[:, None, None]
    low = ((b * in_h + rows[None, :, None]) * in_w + cols[None, None, :]) * in_c * in_elem
    low = np.where((rows[None, :, None] < 0) | (cols[None, None, :] < 0), np.iinfo(np.int64).max, low).reshape(-1)
    later = np.minimum.accumulate(low[::-1])[::-1]          # lowest byte read by any pixel q' >= q
    end = (np.arange(low.size, dtype=np.int64) + 1) * out_c * out_elem
    ok = later != np.iinfo(np.int64).max
    return int((later[ok] - end[ok]).min()) if ok.any() else None


def node_shifts(g: Graph, node: Node) -> list[tuple[str, str, int | None]]:
    """(output, input, max_shift) for every input `node`'s kernel may write its output over."""
    kind = ops.inplace_kind(node.op)
    if kind is None or len(node.outputs) != 1:
        return []
    y = node.outputs[0]
    yt = g.tensors[y]
    out = []
    if kind == "elementwise":
        for x in dict.fromkeys(i for i in node.inputs if i):
            xt = g.tensors[x]
            if not xt.is_const and tuple(xt.shape) == tuple(yt.shape):
                out.append((y, x, elementwise_shift(yt.size, _elem(g, x), _elem(g, y))))
    elif kind == "rows":
        body = node.attrs["body"]
        out += [(y, x, 0) for x in dict.fromkeys(node.inputs) if body.written_over(x)]
    elif kind == "bands":
        x = node.inputs[0]
        if len(g.tensors[x].shape) == 4:
            out.append((y, x, node.attrs["body"].write_shift()))
    elif kind == "window":
        x = node.inputs[0]
        xt = g.tensors[x]
        if len(xt.shape) == 4 and len(yt.shape) == 4:
            window = (node.attrs["filter"] if "filter" in node.attrs
                      else tuple(g.tensors[node.inputs[1]].shape[1:3]))
            out.append((y, x, window_shift(xt.shape, yt.shape, _elem(g, x), _elem(g, y), window,
                                           node.attrs.get("stride", (1, 1)), node.attrs.get("dilation", (1, 1)),
                                           node.attrs.get("padding", (0, 0, 0, 0)))))
    return out


def overlap_rules(g: Graph, alias: dict[str, Alias], skip: set[str] = frozenset()) -> list[Overlap]:
    """The Overlaps of every kernel of `g` (nodes in `skip` have no kernel), between root
    buffers: an output that is its own buffer over an input that is a whole buffer. Whether
    the input dies at that step is for the liveness analysis of the chosen order to say."""
    rules = []
    for node in g.nodes:
        if node.name in skip or ops.get(node.op).is_view:
            continue
        for y, x, shift in node_shifts(g, node):
            if y in alias:
                continue
            a = alias.get(x, Alias(x))
            if a.offset != 0 or g.tensors[a.root].nbytes != g.tensors[x].nbytes:
                continue
            big = g.tensors[a.root].nbytes + g.tensors[y].nbytes
            rules.append(Overlap(y, a.root, _floor(min(shift, big)) if shift is not None else _floor(big)))
    return rules


def concat_slices(g: Graph) -> dict[str, tuple[str, Alias]]:
    """Concatenations whose inputs can be written straight into the output: every input is one
    contiguous block of the output (all dims before the axis are 1), has the output's dtype
    and quantization (int8: no requantization), is produced by a kernel (not a graph input or
    output, a constant, a view or another slice) and is used once. Returns input tensor ->
    (concatenation node name, Alias into the output)."""
    producers = g.producers()
    consumers = g.consumers()
    out: dict[str, tuple[str, Alias]] = {}
    for node in g.nodes:
        if node.op != "concatenation":
            continue
        y = g.tensors[node.outputs[0]]
        axis = node.attrs.get("axis", 0) % max(len(y.shape), 1)
        if elements(y.shape[:axis]) != 1 or node.outputs[0] in g.outputs:
            continue
        ins = [i for i in node.inputs if i]
        ok = len(set(ins)) == len(ins)
        for i in ins:
            t, p = g.tensors[i], producers.get(i)
            ok = ok and (not t.is_const and p is not None and not ops.get(p.op).is_view and p.op != "concatenation"
                         and len(p.outputs) == 1 and i not in g.outputs and i not in g.inputs
                         and len(consumers.get(i, [])) == 1 and i not in out and t.dtype == y.dtype
                         and (t.quant is None) == (y.quant is None)
                         and (t.quant is None or t.quant.same_as(y.quant)))
        if not ok:
            continue
        offset = 0
        for i in ins:
            out[i] = (node.name, Alias(node.outputs[0], offset))
            offset += g.tensors[i].nbytes
    return out
