"""softmax over the last axis.

int8: an extern call of the micro-kernel mc_softmax_s8 (runtime_c/kernels/mc_softmax.c),
bit-exact with LiteRT BUILTIN_REF's gemmlowp fixed-point softmax; its parameters come
from qparams.softmax_params. float32: a loop nest (max, exp-and-sum, divide), as
reference_ops::Softmax.
"""

from __future__ import annotations

import numpy as np

from ..reference import qparams
from ..ir.graph import Graph, Node
from ..tir.intrinsics import SOFTMAX_PARAMS
from ..tir.nodes import (Address, Allocate, BinOp, Buffer, Call, Evaluate, FloatImm, IntImm, Var, add, binop,
                         loops, mul, seq, sub)
from .common import arena, lowering, make_func


@lowering("softmax")
def lower_softmax(g: Graph, node: Node, target=None):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    depth = xt.shape[-1]
    rows = xt.size // depth
    x = arena(g, xt.name, "x", shape=(rows, depth))
    y = arena(g, yt.name, "y", shape=(rows, depth))
    if yt.dtype != "float32":
        p = qparams.softmax_params(g, node)
        params = SOFTMAX_PARAMS(rows=rows, depth=depth, input_multiplier=p.input_multiplier,
                                input_left_shift=p.input_left_shift, diff_min=p.diff_min)
        kernel = "mc_softmax_s8_s16" if p.output_bits == 16 else "mc_softmax_s8"
        call = Call(kernel, (Address(x, IntImm(0)), Address(y, IntImm(0)), params), "void")
        return make_func(g, node, [x, y], Evaluate(call))
    beta = float(np.float32(node.attr("beta", 1.0)))
    r, c1, c2, c3 = Var("r"), Var("c"), Var("c_exp"), Var("c_norm")
    mx, total = Buffer("max_in_row", "float32", (), "local"), Buffer("sum", "float32", (), "local")
    diff = sub(x.load(r, c2), mx.load())
    e = Call("expf", (diff if beta == 1.0 else mul(diff, FloatImm(beta)),), "float32")
    row = seq(
        mx.store(x.load(r, 0)),
        loops([(c1, depth)], mx.store(BinOp("max", mx.load(), x.load(r, c1)))),
        total.store(FloatImm(0.0)),
        loops([(c2, depth)], seq(y.store(e, r, c2), total.store(add(total.load(), y.load(r, c2))))),
        loops([(c3, depth)], y.store(binop("div", y.load(r, c3), total.load()), r, c3)),
    )
    body = loops([(r, rows)], Allocate(mx, Allocate(total, row)))
    return make_func(g, node, [x, y], body)
