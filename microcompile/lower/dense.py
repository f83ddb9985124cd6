"""fully_connected: y[r, u] = sum_d x[r, d] * w[u, d] (+ bias), the input viewed as
[rows, depth] (TFLite flattens all leading dimensions).

int8 (reference_integer_ops::FullyConnected): acc = bias + sum (x + in_off) * (w + w_off).
The input offset is folded into the bias on the host, bias' = bias + in_off * sum(w + w_off),
so the inner loop is x * (w + w_off) (just x * w for symmetric weights). Rounding and
multipliers come from qparams.fully_connected_params (SINGLE rounding in LiteRT).
"""

from __future__ import annotations

import numpy as np

from ..reference import qparams
from ..ir.graph import Graph, Node
from ..tir.nodes import Allocate, Buffer, LetStmt, Var, add, loops, mul, seq
from .common import arena, clamp, constant, i32, loop_vars, lowering, make_func, requantize
from .saturate import to_int8


@lowering("fully_connected")
def lower_fully_connected(g: Graph, node: Node, target=None):
    xt, wt, yt = g.tensors[node.inputs[0]], g.tensors[node.inputs[1]], g.tensors[node.outputs[0]]
    units, depth = wt.shape
    rows = xt.size // depth
    # Flat [rows, depth] / [rows, units] views of the NHWC tensors: same bytes.
    x = arena(g, xt.name, "x", shape=(rows, depth))
    y = arena(g, yt.name, "y", shape=(rows, units))
    wdata = g.const(wt.name)
    w = constant("w", wdata, f"{node.name} weights [{units},{depth}] {wt.dtype}")
    has_bias = len(node.inputs) > 2 and bool(node.inputs[2])
    r, u, d = loop_vars("r", "u", "d")
    p = qparams.fully_connected_params(g, node)
    if yt.dtype == "float32":
        bias = constant("bias", g.const(node.inputs[2]).astype(np.float32) if has_bias
                        else np.zeros(units, np.float32), f"{node.name} bias [{units}] float32")
        acc = Buffer("acc", "float32", (), "local")
        update = acc.store(add(acc.load(), mul(x.load(r, d), w.load(u, d))))
        result = clamp(acc.load(), p.act_min, p.act_max)
        consts = [w, bias]
    else:
        wsum = (wdata.astype(np.int64) + p.weights_offset).sum(axis=1)
        b = g.const(node.inputs[2]).astype(np.int64) if has_bias else np.zeros(units, np.int64)
        folded = b + p.input_offset * wsum
        assert np.all(np.abs(folded) < 2**31), f"{node.name}: folded bias overflows int32"
        bias = constant("bias", folded.astype(np.int32), f"{node.name} bias + in_off*sum(w) [{units}] int32")
        wv = i32(w.load(u, d))
        if p.weights_offset:
            wv = add(wv, p.weights_offset)
        acc = Buffer("acc", "int32", (), "local")
        # The input element is named (`xv`) so a schedule can cache it (widened to int16).
        xv = Var("xv", "int8")
        update = LetStmt(xv, x.load(r, d), acc.store(add(acc.load(), mul(i32(xv), wv))))
        consts = [w, bias]
        if p.per_channel:
            mult = constant("mult", np.array(p.output_multiplier, np.int32), f"{node.name} requant multipliers")
            shift = constant("shift", np.array(p.output_shift, np.int32), f"{node.name} requant shifts")
            scaled = requantize(acc.load(), mult.load(u), shift.load(u), p.rounding)
            consts += [mult, shift]
        else:
            scaled = requantize(acc.load(), p.output_multiplier[0], p.output_shift[0], p.rounding)
        result = to_int8(add(scaled, p.output_offset), p.act_min, p.act_max, target)
    body = Allocate(acc, seq(acc.store(bias.load(u)), loops([(d, depth)], update), y.store(result, r, u)))
    return make_func(g, node, [x, y, *consts], loops([(r, rows), (u, units)], body))
