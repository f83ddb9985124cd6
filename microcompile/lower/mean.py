"""mean over any set of axes: one loop per kept dimension outside, one per reduced
dimension inside, one accumulator per output element.

int8 (reference_ops::QuantizedMeanOrSum, see reference.vision.MeanParams): the int32 sum
of the raw inputs, minus zp_in * count, requantized by a multiplier that already holds
1/count. float32: sum, then divide by count, as TFLite.
"""

from __future__ import annotations

from ..reference import vision as qv
from ..ir.graph import Graph, Node
from ..tir.nodes import Allocate, Buffer, FloatImm, IntImm, add, binop, loops, seq
from .common import clamp, i32, i8, lowering, make_func, reduction, requantize


@lowering("mean")
def lower_mean(g: Graph, node: Node, target=None):
    r = reduction(g, node)
    x, y, idx, kept, reduced, out_idx = r.x, r.y, r.idx, r.kept, r.reduced, r.out_idx
    p = qv.mean_params(g, node)
    if p is None:
        acc = Buffer("sum", "float32", (), "local")
        count = 1
        for _, d in reduced:
            count *= d
        init, term = FloatImm(0.0), x.load(*idx)
        result = binop("div", acc.load(), FloatImm(float(count)))
    else:
        acc = Buffer("sum", "int32", (), "local")
        init, term = IntImm(0), i32(x.load(*idx))
        scaled = requantize(add(acc.load(), -p.input_zero_point * p.count), p.multiplier, p.shift, p.rounding)
        result = i8(clamp(add(scaled, p.output_zero_point), -128, 127))
    body = Allocate(acc, seq(acc.store(init), loops(reduced, acc.store(add(acc.load(), term))),
                             y.store(result, *out_idx)))
    return make_func(g, node, [x, y], loops(kept, body))
