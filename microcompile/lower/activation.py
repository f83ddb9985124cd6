"""Standalone relu / relu6 / relu_n1_to_1 (those fuse_activation could not fold).

int8 (reference_ops::ReluX): out = clamp(zp_out + MBQM(x - zp_in, M, shift)), which
requantizes even when in and out quantization agree (qparams.activation_params).
"""

from __future__ import annotations

from ..reference import qparams
from ..ir.graph import Graph, Node
from ..tir.nodes import Var, add, loops, sub
from .common import arena, clamp, i32, i8, lowering, make_func, requantize


@lowering("relu", "relu6", "relu_n1_to_1")
def lower_activation(g: Graph, node: Node, target=None):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    x = arena(g, xt.name, "x", shape=(xt.size,))
    y = arena(g, yt.name, "y", shape=(yt.size,))
    i = Var("i")
    p = qparams.activation_params(g, node)
    if yt.dtype == "float32":
        result = clamp(x.load(i), p.act_min, p.act_max)
    else:
        scaled = requantize(sub(i32(x.load(i)), p.input_zero_point), p.output_multiplier,
                            p.output_shift, p.rounding)
        result = i8(clamp(add(scaled, p.output_offset), p.act_min, p.act_max))
    return make_func(g, node, [x, y], loops([(i, yt.size)], y.store(result, i)))
