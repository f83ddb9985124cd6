"""reduce_max over any set of axes: one loop per kept dimension outside, one per reduced
dimension inside. The accumulator starts at the window's first element (not -inf), so
every input value, infinities included, reduces exactly as TFLite's loop does."""

from __future__ import annotations

from ..ir.graph import Graph, Node
from ..tir.nodes import Allocate, Buffer, IntImm, Select, binop, loops, seq
from .common import lowering, make_func, reduction


@lowering("reduce_max")
def lower_reduce_max(g: Graph, node: Node, target=None):
    xt = g.tensors[node.inputs[0]]
    axes = set(node.attrs["axes"])
    r = reduction(g, node)
    x, y, idx, kept, reduced, out_idx = r.x, r.y, r.idx, r.kept, r.reduced, r.out_idx
    first = [IntImm(0) if k in axes else v for k, v in enumerate(idx)]
    acc = Buffer("best", xt.dtype, (), "local")
    v = x.load(*idx)
    # std::max(best, v) as TFLite writes it: (best < v) ? v : best, for int8 and float alike.
    body = Allocate(acc, seq(acc.store(x.load(*first)),
                             loops(reduced, acc.store(Select(binop("lt", acc.load(), v), v, acc.load()))),
                             y.store(acc.load(), *out_idx)))
    return make_func(g, node, [x, y], loops(kept, body))
