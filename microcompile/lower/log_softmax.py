"""log_softmax over the last axis.

int8: an extern call of mc_log_softmax_s8 (runtime_c/kernels/mc_log_softmax.c), bit-exact
with LiteRT BUILTIN_REF's reference_integer_ops::LogSoftmax. The exp of every possible row
difference (0..-255) is a host-computed table of 256 int32 (fixedpoint_log.exp_q12), so the
device only sums, takes the fixed-point log and rescales. float32: a loop nest
(max, sum of exp, log) as reference_ops::LogSoftmax.
"""

from __future__ import annotations

import numpy as np

from ..ir import fixedpoint_log
from ..reference import elementwise as qe
from ..ir.graph import Graph, Node
from ..tir.intrinsics_elementwise import LOG_SOFTMAX_PARAMS
from ..tir.nodes import (Address, Allocate, BinOp, Buffer, Call, Evaluate, FloatImm, IntImm, LetStmt, Var, add,
                         binop, loops, seq, sub)
from .common import arena, constant, lowering, make_func


def exp_table(p: qe.LogSoftmaxParams) -> np.ndarray:
    """table[k] = exp(-k) summand for k = max - x; 0 where -k < diff_min (left out of the sum)."""
    diff = -np.arange(256, dtype=np.int64)
    live = diff >= p.diff_min
    return np.where(live, fixedpoint_log.exp_q12(np.where(live, diff, 0), p), 0).astype(np.int32)


@lowering("log_softmax")
def lower_log_softmax(g: Graph, node: Node, target=None):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    depth = xt.shape[-1]
    rows = xt.size // depth
    x = arena(g, xt.name, "x", shape=(rows, depth))
    y = arena(g, yt.name, "y", shape=(rows, depth))
    if yt.dtype != "float32":
        p = qe.log_softmax_params(g, node)
        table = constant("exp_table", exp_table(p), "exp(-k * input_scale) in Q12.19, k = max - x")
        params = LOG_SOFTMAX_PARAMS(rows=rows, depth=depth, input_multiplier=p.input_multiplier,
                                    input_left_shift=p.input_left_shift, reverse_multiplier=p.reverse_multiplier,
                                    reverse_shift=p.reverse_shift, diff_min=p.diff_min)
        call = Call("mc_log_softmax_s8", (Address(x, IntImm(0)), Address(y, IntImm(0)), Address(table, IntImm(0)),
                                          params), "void")
        return make_func(g, node, [x, table, y], Evaluate(call))
    r, c1, c2, c3 = Var("r"), Var("c"), Var("c_exp"), Var("c_out")
    mx, total = Buffer("max_in_row", "float32", (), "local"), Buffer("sum", "float32", (), "local")
    log_sum = Var("log_sum", "float32")
    row = seq(
        mx.store(x.load(r, 0)),
        loops([(c1, depth)], mx.store(BinOp("max", mx.load(), x.load(r, c1)))),
        total.store(FloatImm(0.0)),
        loops([(c2, depth)], total.store(add(total.load(), Call("expf", (sub(x.load(r, c2), mx.load()),),
                                                                 "float32")))),
        LetStmt(log_sum, Call("logf", (total.load(),), "float32"),
                loops([(c3, depth)], y.store(binop("sub", sub(x.load(r, c3), mx.load()), log_sum), r, c3))),
    )
    return make_func(g, node, [x, y], loops([(r, rows)], Allocate(mx, Allocate(total, row))))
