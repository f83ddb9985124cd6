"""resize_nearest_neighbor and resize_bilinear (NHWC).

The source coordinates depend only on the output row/column, so they are computed once
on the host (reference.vision, in TFLite's exact arithmetic) and stored as small flash
tables: the kernel only gathers. Bilinear int8 (ResizeBilinearInteger) weights are in
1/1024 units, the 4-tap sum fits int32 (|x| <= 128, weights <= 1536), and the result is
(sum +/- 2^19) / 2^20 with C's truncating division. Bilinear float32 uses TFLite's
float expression with the float32 source fractions.
"""

from __future__ import annotations

from ..reference import vision as qv
from ..ir.graph import Graph, Node
from ..tir.nodes import FloatImm, IntImm, LetStmt, Select, Var, add, binop, loops, mul, sub
from .common import arena, constant, i32, i8, lowering, make_func


@lowering("resize_nearest_neighbor")
def lower_resize_nearest_neighbor(g: Graph, node: Node, target=None):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    x, y = arena(g, xt.name, "x"), arena(g, yt.name, "y")
    ys, xs = qv.resize_axes(g, node)
    ty = constant("src_y", ys, f"{node.name} source row of each output row")
    tx = constant("src_x", xs, f"{node.name} source column of each output column")
    n, oy, ox, c = Var("n"), Var("oy"), Var("ox"), Var("c")
    body = y.store(x.load(n, ty.load(oy), tx.load(ox), c), n, oy, ox, c)
    return make_func(g, node, [x, y, ty, tx], loops(list(zip((n, oy, ox, c), yt.shape)), body))


@lowering("resize_bilinear")
def lower_resize_bilinear(g: Graph, node: Node, target=None):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    x, y = arena(g, xt.name, "x"), arena(g, yt.name, "y")
    ya, xa = qv.resize_axes(g, node)
    tabs = [constant(f"{name}", arr, f"{node.name} {what}") for name, arr, what in (
        ("y0", ya.lo, "upper source row"), ("y1", ya.hi, "lower source row"), ("dy", ya.frac, "row weight"),
        ("x0", xa.lo, "left source column"), ("x1", xa.hi, "right source column"),
        ("dx", xa.frac, "column weight"))]
    y0, y1, dy, x0, x1, dx = tabs
    n, oy, ox, c = Var("n"), Var("oy"), Var("ox"), Var("c")
    wy1, wx1 = dy.load(oy), dx.load(ox)
    if yt.dtype == "float32":
        wy0, wx0 = sub(FloatImm(1.0), wy1), sub(FloatImm(1.0), wx1)
    else:
        wy0, wx0 = sub(IntImm(1024), wy1), sub(IntImm(1024), wx1)

    def tap(ry, rx, wy, wx):
        v = x.load(n, ry.load(oy), rx.load(ox), c)
        return mul(mul(v if yt.dtype == "float32" else i32(v), wy), wx)

    total = add(add(add(tap(y0, x0, wy0, wx0), tap(y1, x0, wy1, wx0)), tap(y0, x1, wy0, wx1)), tap(y1, x1, wy1, wx1))
    if yt.dtype == "float32":
        body = y.store(total, n, oy, ox, c)
    else:
        acc, half = Var("acc"), IntImm(1 << 19)
        rounded = binop("div", Select(binop("gt", acc, 0), add(acc, half), sub(acc, half)), IntImm(1 << 20))
        body = LetStmt(acc, total, y.store(i8(rounded), n, oy, ox, c))
    return make_func(g, node, [x, y, *tabs], loops(list(zip((n, oy, ox, c), yt.shape)), body))
