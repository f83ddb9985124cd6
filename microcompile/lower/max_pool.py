"""max_pool2d: the maximum of the in-bounds window, then the fused clamp.

int8 (reference_integer_ops::MaxPool) has no requantization: the input's values are
compared and stored as they are. Padding taps are skipped, never compared.
"""

from __future__ import annotations

from ..ir import qparams_vision as qv
from ..ir.graph import Graph, Node
from ..ir.tir import Allocate, BinOp, Buffer, FloatImm, IfThenElse, IntImm, LetStmt, Var, add, loops, mul, seq, sub
from .common import arena, clamp, i8, i32, in_bounds, loop_vars, make_func

FLOAT_LOWEST = -3.4028234663852886e38   # -FLT_MAX: every finite input beats it


def lower_max_pool2d(g: Graph, node: Node, target=None):
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
    p = qv.max_pool_params(g, node)
    is_float = yt.dtype == "float32"
    acc = Buffer("acc", "float32" if is_float else "int32", (), "local")
    xv = x.load(n, ih, iw, c) if is_float else i32(x.load(n, ih, iw, c))
    update = acc.store(BinOp("max", acc.load(), xv))
    if valid is not None:
        update = IfThenElse(valid, update)
    inner = LetStmt(ih, add(sub(mul(oh, sh), pt), kh), LetStmt(iw, add(sub(mul(ow, sw), pl), kw), update))
    result = clamp(acc.load(), p.act_min, p.act_max)
    body = seq(acc.store(FloatImm(FLOAT_LOWEST) if is_float else IntImm(-128)),
               loops([(kh, fh), (kw, fw)], inner),
               y.store(result if is_float else i8(result), n, oh, ow, c))
    return make_func(g, node, [x, y], loops([(n, batch), (oh, out_h), (ow, out_w), (c, chans)], Allocate(acc, body)))
