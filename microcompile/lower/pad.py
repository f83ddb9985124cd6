"""pad / pad_v2: every output element is its input element or the fill value.

The fill (reference.vision.pad_value) is the output zero point for int8 PAD, 0.0 for float
PAD, and PADV2's constant as it is stored. Only dimensions with padding get a bounds test.
"""

from __future__ import annotations

from ..reference import vision as qv
from ..ir.graph import Graph, Node
from ..tir.nodes import FloatImm, IntImm, LetStmt, Select, Var, loops, sub
from .common import arena, in_bounds, lowering, make_func


@lowering("pad", "pad_v2")
def lower_pad(g: Graph, node: Node, target=None):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    x, y = arena(g, xt.name, "x"), arena(g, yt.name, "y")
    pads = node.attrs["pads"]
    idx = [Var(f"i{k}") for k in range(len(yt.shape))]
    src = [Var(f"s{k}") if lo or hi else v for k, (v, (lo, hi)) in enumerate(zip(idx, pads))]
    value = qv.pad_value(g, node)
    fill = FloatImm(float(value)) if yt.dtype == "float32" else IntImm(int(value), yt.dtype)
    valid = in_bounds([(s, d, lo, hi) for s, d, (lo, hi) in zip(src, xt.shape, pads)])
    result = x.load(*src) if valid is None else Select(valid, x.load(*src), fill)
    store = y.store(result, *idx)
    # Name the source coordinates (`const int32_t s1 = i1 - 2;`) so the C reads plainly.
    for s, v, (lo, hi) in reversed(list(zip(src, idx, pads))):
        if s is not v:
            store = LetStmt(s, sub(v, lo), store)
    return make_func(g, node, [x, y], loops(list(zip(idx, yt.shape)), store))
