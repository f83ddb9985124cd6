"""average_pool2d: the mean of the in-bounds window (padding pixels are not counted).

int8 (reference_integer_ops::AveragePool): input and output share quantization, so no
multiplier: out = clamp((sum +/- count/2) / count) with C's truncating division, i.e.
rounding half away from zero. Without padding the count is a compile-time constant;
with padding it is counted alongside the sum.
"""

from __future__ import annotations

from ..ir import qparams
from ..ir.graph import Graph, Node
from ..ir.tir import (Allocate, Buffer, FloatImm, IfThenElse, IntImm, LetStmt, Select, Var, add, binop, cast,
                      loops, mul, seq, sub)
from .common import arena, clamp, i8, i32, in_bounds, loop_vars, make_func


def lower_average_pool2d(g: Graph, node: Node, target=None):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    x, y = arena(g, xt.name, "x"), arena(g, yt.name, "y")
    batch, in_h, in_w, _ = xt.shape
    _, out_h, out_w, chans = yt.shape
    fh, fw = node.attrs["filter"]
    sh, sw = node.attrs.get("stride", (1, 1))
    pt, pl, pb, pr = node.attrs.get("padding", (0, 0, 0, 0))
    n, oh, ow, c, kh, kw = loop_vars("n", "oh", "ow", "c", "kh", "kw")
    ih, iw = Var("ih"), Var("iw")
    valid = in_bounds([(ih, in_h, pt, pb), (iw, in_w, pl, pr)])
    is_float = yt.dtype == "float32"
    p = qparams.average_pool_params(g, node)
    acc_t = "float32" if is_float else "int32"
    acc = Buffer("acc", acc_t, (), "local")
    xv = x.load(n, ih, iw, c) if is_float else i32(x.load(n, ih, iw, c))
    update = acc.store(add(acc.load(), xv))
    stmts_in, allocs = [acc.store(FloatImm(0.0) if is_float else IntImm(0))], [acc]
    if valid is None:
        count = IntImm(fh * fw)
        inner = update
    else:
        cnt = Buffer("count", "int32", (), "local")
        allocs.append(cnt)
        stmts_in.append(cnt.store(IntImm(0)))
        inner = IfThenElse(valid, seq(update, cnt.store(add(cnt.load(), 1))))
        count = cnt.load()
    if is_float:
        result = clamp(binop("div", acc.load(), cast("float32", count)), p.act_min, p.act_max)
    else:
        s = acc.load()
        half = IntImm(fh * fw // 2) if valid is None else binop("div", count, 2)
        rounded = Select(binop("gt", s, 0), add(s, half), sub(s, half))
        result = i8(clamp(binop("div", rounded, count), p.act_min, p.act_max))
    inner = LetStmt(ih, add(sub(mul(oh, sh), pt), kh), LetStmt(iw, add(sub(mul(ow, sw), pl), kw), inner))
    body = seq(*stmts_in, loops([(kh, fh), (kw, fw)], inner), y.store(result, n, oh, ow, c))
    for b in reversed(allocs):
        body = Allocate(b, body)
    return make_func(g, node, [x, y], loops([(n, batch), (oh, out_h), (ow, out_w), (c, chans)], body))
