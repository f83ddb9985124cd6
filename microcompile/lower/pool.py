"""average_pool2d: the mean of the in-bounds window (padding pixels are not counted).

int8 (reference_integer_ops::AveragePool): input and output share quantization, so no
multiplier: out = clamp((sum +/- count/2) / count) with C's truncating division, i.e.
rounding half away from zero. Without padding the count is a compile-time constant;
with padding it is counted alongside the sum.
"""

from __future__ import annotations

from ..reference import qparams
from ..ir.graph import Graph, Node
from ..tir.nodes import (Allocate, Buffer, FloatImm, IfThenElse, IntImm, LetStmt, Select, add, binop, cast, loops,
                         seq, sub)
from .common import clamp, i32, i8, lowering, make_func, pool_window


@lowering("average_pool2d")
def lower_average_pool2d(g: Graph, node: Node, target=None):
    yt = g.tensors[node.outputs[0]]
    w = pool_window(g, node)
    x, y, n, oh, ow, c, ih, iw, valid = w.x, w.y, w.n, w.oh, w.ow, w.c, w.ih, w.iw, w.valid
    fh, fw = node.attrs["filter"]
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
    inner = LetStmt(ih, w.ih_value, LetStmt(iw, w.iw_value, inner))
    body = seq(*stmts_in, loops(w.window, inner), y.store(result, n, oh, ow, c))
    for b in reversed(allocs):
        body = Allocate(b, body)
    return make_func(g, node, [x, y], loops(w.outer, body))
