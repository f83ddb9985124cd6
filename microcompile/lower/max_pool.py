"""max_pool2d: the maximum of the in-bounds window, then the fused clamp.

int8 (reference_integer_ops::MaxPool) has no requantization: the input's values are
compared and stored as they are. Padding taps are skipped, never compared.
"""

from __future__ import annotations

from ..reference import vision as qv
from ..ir.graph import Graph, Node
from ..tir.nodes import Allocate, BinOp, Buffer, FloatImm, IfThenElse, IntImm, LetStmt, loops, seq
from .common import clamp, i32, i8, lowering, make_func, pool_window

FLOAT_LOWEST = -3.4028234663852886e38   # -FLT_MAX: every finite input beats it


@lowering("max_pool2d")
def lower_max_pool2d(g: Graph, node: Node, target=None):
    yt = g.tensors[node.outputs[0]]
    w = pool_window(g, node)
    x, y, n, oh, ow, c, ih, iw, valid = w.x, w.y, w.n, w.oh, w.ow, w.c, w.ih, w.iw, w.valid
    p = qv.max_pool_params(g, node)
    is_float = yt.dtype == "float32"
    acc = Buffer("acc", "float32" if is_float else "int32", (), "local")
    xv = x.load(n, ih, iw, c) if is_float else i32(x.load(n, ih, iw, c))
    update = acc.store(BinOp("max", acc.load(), xv))
    if valid is not None:
        update = IfThenElse(valid, update)
    inner = LetStmt(ih, w.ih_value, LetStmt(iw, w.iw_value, update))
    result = clamp(acc.load(), p.act_min, p.act_max)
    body = seq(acc.store(FloatImm(FLOAT_LOWEST) if is_float else IntImm(-128)),
               loops(w.window, inner),
               y.store(result if is_float else i8(result), n, oh, ow, c))
    return make_func(g, node, [x, y], loops(w.outer, Allocate(acc, body)))
