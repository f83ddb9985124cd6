"""Hybrid (dynamic-range) conv2d: float32 activations, int8 per-tensor weights, as
TFLite's EvalHybrid.

Per batch: the input is quantized symmetrically into scratch (q = round(x * 127/max|x|),
clamped to +-127), an integer convolution runs on it (padding taps contribute 0), and
out = float(acc) * (max|x|/127 * w_scale) + bias, clamped by the fused activation. The
quantized input lives in the kernel's scratch space, requested from the memory planner.
"""

from __future__ import annotations

import numpy as np

from ..reference import qparams
from ..ir.graph import Graph, Node
from ..tir.nodes import (Allocate, BinOp, Buffer, Call, Cast, FloatImm, IntImm, LetStmt, Select, Store, Var, add,
                         binop, loops, mul, seq, sub)
from .common import arena, clamp, constant, i8, i32, in_bounds, loop_vars, make_func


def lower_hybrid_conv2d(g: Graph, node: Node, target=None):
    xt, wt, yt = g.tensors[node.inputs[0]], g.tensors[node.inputs[1]], g.tensors[node.outputs[0]]
    batch, in_h, in_w, in_c = xt.shape
    _, out_h, out_w, out_c = yt.shape
    per_batch = in_h * in_w * in_c
    x = arena(g, xt.name, "x", shape=(batch, per_batch))
    y = arena(g, yt.name, "y")
    xq = Buffer("xq", "int8", (batch, in_h, in_w, in_c), "scratch", comment="input quantized per batch")
    wdata = g.const(wt.name)
    _, kh_n, kw_n, _ = wdata.shape
    w = constant("w", wdata, f"{node.name} filter {list(wdata.shape)} int8 (hybrid)")
    bias = constant("bias", g.const(node.inputs[2]).astype(np.float32) if len(node.inputs) > 2 and node.inputs[2]
                    else np.zeros(out_c, np.float32), f"{node.name} bias [{out_c}] float32")
    w_scale = float(np.float32(wt.quant.scale[0]))
    p = qparams.conv_params(g, node)
    sh, sw = node.attrs.get("stride", (1, 1))
    dh, dw = node.attrs.get("dilation", (1, 1))
    pt, pl, pb, pr = node.attrs.get("padding", (0, 0, 0, 0))

    n, i, j = Var("n"), Var("i"), Var("j")
    rng, acc = Buffer("range", "float32", (), "local"), Buffer("acc", "int32", (), "local")
    safe, inv, scale = Var("safe", "float32"), Var("inv", "float32"), Var("scale", "float32")
    xv = x.load(n, i)
    absx = Select(binop("lt", xv, FloatImm(0.0)), sub(FloatImm(0.0), xv), xv)
    q = Call("roundf", (BinOp("mul", x.load(n, j), inv),), "float32")
    q8 = i8(BinOp("min", BinOp("max", Cast("int32", q), IntImm(-127)), IntImm(127)))
    quantize = loops([(j, per_batch)], Store(xq, add(mul(n, per_batch), j), q8))

    oh, ow, oc, kh, kw, ic = loop_vars("oh", "ow", "oc", "kh", "kw", "ic")
    ih, iw = Var("ih"), Var("iw")
    valid = in_bounds([(ih, in_h, pt, pb), (iw, in_w, pl, pr)])
    qv = i32(xq.load(n, ih, iw, ic))
    if valid is not None:
        qv = Select(valid, qv, IntImm(0))
    update = LetStmt(ih, add(sub(mul(oh, sh), pt), mul(kh, dh)),
                     LetStmt(iw, add(sub(mul(ow, sw), pl), mul(kw, dw)),
                             acc.store(add(acc.load(), mul(qv, i32(w.load(oc, kh, kw, ic)))))))
    out = add(mul(Cast("float32", acc.load()), scale), bias.load(oc))
    conv = loops([(oh, out_h), (ow, out_w), (oc, out_c)], Allocate(acc, seq(
        acc.store(IntImm(0)),
        loops([(kh, kh_n), (kw, kw_n), (ic, in_c)], update),
        y.store(clamp(out, p.act_min, p.act_max), n, oh, ow, oc))))

    body = loops([(n, batch)], Allocate(rng, seq(
        rng.store(FloatImm(0.0)),
        loops([(i, per_batch)], rng.store(BinOp("max", rng.load(), absx))),
        LetStmt(safe, Select(binop("eq", rng.load(), FloatImm(0.0)), FloatImm(1.0), rng.load()),
                LetStmt(inv, BinOp("div", FloatImm(127.0), safe), seq(
                    quantize,
                    LetStmt(scale, BinOp("mul", BinOp("div", safe, FloatImm(127.0)), FloatImm(w_scale)),
                            conv)))))))
    return make_func(g, node, [x, y, xq, w, bias], body, hybrid=True)
