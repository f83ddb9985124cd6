"""transpose_conv2d as a gather: each output element sums the taps that TFLite's scatter
(reference_integer_ops::TransposeConv) would add into it.

Output (oy, ox) receives input (iy, ix) through filter tap (ky, kx) when
oy + pad_top - ky = iy * stride_h (and likewise for x). The gather keeps one accumulator
per output in a register, so no int32 scratch canvas is needed; the integer sum is the
same as the scatter's (addition is exact), and float32 differs only in summation order.
int8: acc = bias + sum (x - zp_in) * w, then the per-channel DOUBLE requantization of
conv2d. Unlike conv2d the input zero point cannot be folded into the bias: how many taps
reach an output depends on its position.
"""

from __future__ import annotations

import numpy as np

from ..reference import vision as qv
from ..ir.graph import Graph, Node
from ..tir.nodes import (Allocate, Buffer, FloatImm, IfThenElse, IntImm, LetStmt, Var, add, all_of, binop, loops,
                         mul, seq, sub)
from .common import arena, clamp, constant, i32, i8, loop_vars, lowering, make_func, requantize


def _source(t: Var, stride: int, size: int, reach_lo: bool, reach_hi: bool):
    """Conditions under which tap coordinate t = o + pad - k hits an input pixel t / stride."""
    conds = []
    if reach_lo:
        conds.append(binop("ge", t, 0))
    if stride > 1:
        conds.append(binop("eq", binop("mod", t, stride), 0))
    if reach_hi:
        conds.append(binop("lt", t, size * stride))
    return conds, (t if stride == 1 else binop("div", t, stride))


@lowering("transpose_conv2d")
def lower_transpose_conv2d(g: Graph, node: Node, target=None):
    xt, wt, yt = g.tensors[node.inputs[0]], g.tensors[node.inputs[1]], g.tensors[node.outputs[0]]
    x, y = arena(g, xt.name, "x"), arena(g, yt.name, "y")
    batch, in_h, in_w, in_c = xt.shape
    _, out_h, out_w, out_c = yt.shape
    _, kh_n, kw_n, _ = wt.shape
    sh, sw = node.attrs["stride"]
    pt, pl = node.attrs["padding"][:2]
    w = constant("w", g.const(wt.name), f"{node.name} filter {list(wt.shape)} {wt.dtype}")
    n, oy, ox, oc, ky, kx, ic = loop_vars("n", "oy", "ox", "oc", "ky", "kx", "ic")
    ty, tx = Var("ty"), Var("tx")
    # t ranges over [pad - (k-1), out - 1 + pad]; drop a bound check that can never fail.
    cy, iy = _source(ty, sh, in_h, pt - (kh_n - 1) < 0, out_h - 1 + pt >= in_h * sh)
    cx, ix = _source(tx, sw, in_w, pl - (kw_n - 1) < 0, out_w - 1 + pl >= in_w * sw)
    has_bias = len(node.inputs) > 2 and bool(node.inputs[2])
    p = qv.transpose_conv_params(g, node)
    if yt.dtype == "float32":
        bdata = g.const(node.inputs[2]).astype(np.float32) if has_bias else np.zeros(out_c, np.float32)
        acc = Buffer("acc", "float32", (), "local")
        term = mul(x.load(n, iy, ix, ic), w.load(oc, ky, kx, ic))
        result = clamp(acc.load(), p.act_min, p.act_max)
        consts = [w]
    else:
        bdata = g.const(node.inputs[2]).astype(np.int32) if has_bias else np.zeros(out_c, np.int32)
        mult = constant("mult", np.array(p.output_multiplier, np.int32), f"{node.name} requant multipliers")
        shift = constant("shift", np.array(p.output_shift, np.int32), f"{node.name} requant shifts")
        acc = Buffer("acc", "int32", (), "local")
        term = mul(add(i32(x.load(n, iy, ix, ic)), p.input_offset), i32(w.load(oc, ky, kx, ic)))
        scaled = requantize(acc.load(), mult.load(oc), shift.load(oc), p.rounding)
        result = i8(clamp(add(scaled, p.output_offset), p.act_min, p.act_max))
        consts = [w, mult, shift]
    bias = constant("bias", bdata, f"{node.name} bias [{out_c}] {bdata.dtype}")
    gather = loops([(ic, in_c)], acc.store(add(acc.load(), term)))
    cond = all_of(cy + cx)
    tap = gather if cond is None else IfThenElse(cond, gather)
    tap = LetStmt(ty, sub(add(oy, pt), ky), LetStmt(tx, sub(add(ox, pl), kx), tap))
    body = Allocate(acc, seq(acc.store(bias.load(oc)), loops([(ky, kh_n), (kx, kw_n)], tap),
                             y.store(result, n, oy, ox, oc)))
    return make_func(g, node, [x, y, *consts, bias],
                     loops([(n, batch), (oy, out_h), (ox, out_w), (oc, out_c)], body))
