"""conv2d: a direct loop nest over NHWC with an int32 (or float) accumulator per output
element (depthwise_conv2d has its own lowering, depthwise.py).

int8 (reference_integer_ops::ConvPerChannel): acc = bias[c] + sum (x - zp_in) * w. The
input zero point is folded into the bias once, on the host:
    bias'[c] = bias[c] - zp_in * sum(w[c])
so the inner loop is a plain x*w. A padded tap reads zp_in in place of x (select), which
adds zp_in * w and cancels its share of the fold exactly: padding stays "value zp_in",
as TFLite's. Requantization uses qparams.conv_params (per-channel multiplier/shift in
flash, or immediates when shared) through common.Requant's cheapest exact form.
"""

from __future__ import annotations

import numpy as np

from ..reference import qparams
from ..ir.graph import Graph, Node
from ..tir.nodes import Allocate, Buffer, FloatImm, IntImm, LetStmt, Select, Var, add, loops, mul, seq, sub
from .common import Requant, arena, clamp, constant, i32, in_bounds, lowering, loop_vars, make_func
from .conv2d_hybrid import lower_hybrid_conv2d
from .saturate import to_int8


def _int8_bias(g: Graph, node: Node, w_per_out: np.ndarray, zp_in: int, channels: int) -> np.ndarray:
    """bias - zp_in * sum(w) per output channel, as int32 (the folded accumulator start)."""
    bias = (g.const(node.inputs[2]).astype(np.int64) if len(node.inputs) > 2 and node.inputs[2]
            else np.zeros(channels, np.int64))
    folded = bias - zp_in * w_per_out.astype(np.int64).sum(axis=1)
    assert np.all(np.abs(folded) < 2**31), f"{node.name}: folded bias overflows int32"
    return folded.astype(np.int32)


def _float_bias(g: Graph, node: Node, channels: int) -> np.ndarray:
    if len(node.inputs) > 2 and node.inputs[2]:
        return g.const(node.inputs[2]).astype(np.float32)
    return np.zeros(channels, np.float32)


@lowering("conv2d")
def lower_conv2d(g: Graph, node: Node, target=None):
    if g.tensors[node.inputs[0]].dtype == "float32" and g.tensors[node.inputs[1]].dtype == "int8":
        return lower_hybrid_conv2d(g, node, target)
    xt, wt, yt = g.tensors[node.inputs[0]], g.tensors[node.inputs[1]], g.tensors[node.outputs[0]]
    x, y = arena(g, xt.name, "x"), arena(g, yt.name, "y")
    batch, in_h, in_w, in_c = xt.shape
    _, out_h, out_w, out_c = yt.shape
    sh, sw = node.attrs.get("stride", (1, 1))
    dh, dw = node.attrs.get("dilation", (1, 1))
    pt, pl, pb, pr = node.attrs.get("padding", (0, 0, 0, 0))
    wdata = g.const(wt.name)
    _, kh_n, kw_n, _ = wdata.shape
    w_per_out = wdata.reshape(out_c, -1)
    w = constant("w", wdata, f"{node.name} filter {list(wdata.shape)} {wt.dtype}")

    n, oh, ow, kh, kw = loop_vars("n", "oh", "ow", "kh", "kw")
    # Input coordinates are named (let) inside the innermost body, so the nest stays perfect
    # for the schedule while the C reads `ih`/`iw`.
    ih, iw = Var("ih"), Var("iw")
    ih_value = add(sub(mul(oh, sh), pt), mul(kh, dh))
    iw_value = add(sub(mul(ow, sw), pl), mul(kw, dw))
    valid = in_bounds([(ih, in_h, pt, pb), (iw, in_w, pl, pr)])
    oc, ic = loop_vars("oc", "ic")
    outer = [(n, batch), (oh, out_h), (ow, out_w), (oc, out_c)]
    inner = [(kh, kh_n), (kw, kw_n), (ic, in_c)]
    w_load = w.load(oc, kh, kw, ic)
    x_index = (n, ih, iw, ic)

    if yt.dtype == "float32":
        p = qparams.conv_params(g, node)
        bias = constant("bias", _float_bias(g, node, out_c), f"{node.name} bias [{out_c}] float32")
        acc = Buffer("acc", "float32", (), "local")
        xv = x.load(*x_index)
        if valid is not None:
            xv = Select(valid, xv, FloatImm(0.0))
        # named as int8's tap is, so the float GEMM schedule can cache it (im2col)
        tap = Var("xv", "float32")
        update = LetStmt(tap, xv, acc.store(add(acc.load(), mul(tap, w_load))))
        result = clamp(acc.load(), p.act_min, p.act_max)
        consts = [w, bias]
    else:
        p = qparams.conv_params(g, node)
        folded = _int8_bias(g, node, w_per_out, -p.input_offset, out_c)
        bias = constant("bias", folded, f"{node.name} bias - zp_in*sum(w) [{out_c}] int32")
        # |acc| <= |bias'| + 128 * sum|w| (every tap is an int8 or zp_in): lets the requant
        # use mc_requant.h's cheap exact form; the clamp is one SSAT where the core has it.
        bound = int((np.abs(folded.astype(np.int64)) + 128 * np.abs(w_per_out.astype(np.int64)).sum(axis=1)).max())
        req = Requant(node, p, bound)
        acc = Buffer("acc", "int32", (), "local")
        xv = x.load(*x_index)
        if valid is not None:
            xv = Select(valid, xv, IntImm(-p.input_offset, "int8"))
        # The input tap is named (`xv`) so a schedule can cache it (cache_read: im2col).
        tap = Var("xv", "int8")
        update = LetStmt(tap, xv, acc.store(add(acc.load(), mul(i32(tap), i32(w_load)))))
        result = to_int8(add(req(acc.load(), oc), p.output_offset), p.act_min, p.act_max, target)
        consts = [w, bias, *req.buffers]
    update = LetStmt(ih, ih_value, LetStmt(iw, iw_value, update))
    body = Allocate(acc, seq(acc.store(bias.load(oc)), loops(inner, update),
                             y.store(result, n, oh, ow, oc)))
    # The geometry a whole-layer kernel needs (schedule/conv_mve.py), int8 only.
    extra = {} if yt.dtype == "float32" else {
        "window": {"kernel": [kh_n, kw_n], "stride": [sh, sw], "dilation": [dh, dw], "padding": [pt, pl],
                   "zp_in": -p.input_offset}}
    return make_func(g, node, [x, y, *consts], loops(outer, body), **extra)
