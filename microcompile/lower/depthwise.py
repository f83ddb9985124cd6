"""depthwise_conv2d: a border/interior split with every tap unrolled and no bounds checks.

The output plane is cut into regions in which the set of in-bounds filter taps is the same
for every pixel: runs of output rows with one valid-`kh` set, crossed with runs of output
columns with one valid-`kw` set (with padding 1 and a 3x3 filter: top row, interior rows,
bottom row times left column, interior columns, right column). Each run of rows loops over
its rows once and visits the column regions inside, so pixels are written in row-major
order and the output may be planned over the input (memory/inplace.py). Inside a region the taps are
known at compile time, so each one is a plain load with constant offsets:

  int8   (reference_integer_ops::DepthwiseConvPerChannel)
         acc = bias'[c] + sum x*w, bias'[c] = bias[c] - zp_in * sum(w[c]) folded on the host.
         A padded tap reads "value zp_in" as in TFLite: zp_in * w cancels that tap's share
         of the fold, so a border region gets its own bias over its in-bounds taps only.
  float  acc = bias[c] + sum x*w over the in-bounds taps only.

The in-bounds taps of a region are a sub-window, a (kh, kw) loop nest with constant bounds.
Channels are the loop around the taps (NHWC: consecutive input, weight and output bytes), so the
per-channel bias, multiplier and shift are plain array reads. Requantization is the
double-rounding multiply of qparams.conv_params through mc_requant.h's cheaper exact form;
a per-tensor multiplier becomes an immediate.
"""

from __future__ import annotations

import numpy as np

from ..reference import qparams
from ..ir.graph import Graph, Node
from ..tir.nodes import Allocate, Buffer, LetStmt, Var, add, loops, mul, seq, sub, walk
from .common import Requant, arena, clamp, constant, i32, lowering, make_func
from .saturate import to_int8


def tap_runs(out_n: int, in_n: int, k: int, stride: int, dil: int, pad: int) -> list[tuple[int, int, tuple]]:
    """Maximal runs [start, start+length) of output positions whose in-bounds taps are the
    same: [(start, length, valid taps)]. Interior positions form one run."""
    runs: list[tuple[int, int, tuple]] = []
    for o in range(out_n):
        valid = tuple(t for t in range(k) if 0 <= o * stride - pad + t * dil < in_n)
        if runs and runs[-1][2] == valid:
            runs[-1] = (runs[-1][0], runs[-1][1] + 1, valid)
        else:
            runs.append((o, 1, valid))
    return runs


def _bias(g: Graph, node: Node, channels: int, dtype) -> np.ndarray:
    if len(node.inputs) > 2 and node.inputs[2]:
        return g.const(node.inputs[2]).astype(dtype)
    return np.zeros(channels, dtype)


@lowering("depthwise_conv2d")
def lower_depthwise_conv2d(g: Graph, node: Node, target=None):
    xt, wt, yt = g.tensors[node.inputs[0]], g.tensors[node.inputs[1]], g.tensors[node.outputs[0]]
    x, y = arena(g, xt.name, "x"), arena(g, yt.name, "y")
    batch, in_h, in_w, in_c = xt.shape
    _, out_h, out_w, out_c = yt.shape
    sh, sw = node.attrs.get("stride", (1, 1))
    dh, dw = node.attrs.get("dilation", (1, 1))
    pt, pl, _, _ = node.attrs.get("padding", (0, 0, 0, 0))
    wdata = g.const(wt.name)
    _, kh_n, kw_n, _ = wdata.shape
    mult_n = out_c // in_c
    w = constant("w", wdata, f"{node.name} filter {list(wdata.shape)} {wt.dtype}")
    is_float = yt.dtype == "float32"
    p = qparams.conv_params(g, node)
    if is_float:
        bias = constant("bias", _bias(g, node, out_c, np.float32), f"{node.name} bias [{out_c}] float32")
        consts, zp_in = [w, bias], 0
    else:
        zp_in = -p.input_offset
        folded = _bias(g, node, out_c, np.int64) - zp_in * wdata.reshape(-1, out_c).astype(np.int64).sum(axis=0)
        assert np.all(np.abs(folded) < 2**31), f"{node.name}: folded bias overflows int32"
        bias = constant("bias", folded.astype(np.int32), f"{node.name} bias - zp_in*sum(w) [{out_c}] int32")
        # |acc| <= |bias'| + 128 * sum|w| per channel: every tap reads an int8 or zp_in.
        bound = int((np.abs(folded) + 128 * np.abs(wdata.reshape(-1, out_c).astype(np.int64)).sum(axis=0)).max())
        req = Requant(node, p, bound)
        consts = [w, bias, *req.buffers]

    n = Var("n")
    regions = []
    excluded: dict[str, list[tuple[int, int]]] = {}
    # Per-tap integer weights, for the border regions' biases (int8 only: a float weight cast
    # to int64 would warn on huge values and mean nothing).
    w_taps = None if is_float else wdata.reshape(kh_n, kw_n, out_c).astype(np.int64)
    for r, (h0, hn, kh_valid) in enumerate(tap_runs(out_h, in_h, kh_n, sh, dh, pt)):
        oh_r = Var(f"oh_{r}")
        row = []
        for c, (w0, wn, kw_valid) in enumerate(tap_runs(out_w, in_w, kw_n, sw, dw, pl)):
            tag = f"{r}_{c}"
            ow_r, ic, m = Var(f"ow_{tag}"), Var(f"ic_{tag}"), Var(f"m_{tag}")
            kh, kw = Var(f"kh_{tag}"), Var(f"kw_{tag}")
            oh, ow = add(oh_r, h0), add(ow_r, w0)
            oc = add(mul(ic, mult_n), m)
            ih0, iw0 = Var(f"ih_{tag}"), Var(f"iw_{tag}")
            acc = Buffer(f"acc_{tag}", "float32" if is_float else "int32", (), "local")
            region_bias = bias
            if not is_float and zp_in != 0 and (len(kh_valid) < kh_n or len(kw_valid) < kw_n):
                # The padded taps read "value zp_in": their zp_in * w cancels that tap's share of
                # the folded -zp_in * sum(w), so this region's bias keeps only in-bounds taps.
                inside = w_taps[list(kh_valid)][:, list(kw_valid)].sum(axis=(0, 1)) if kh_valid and kw_valid else 0
                rb = _bias(g, node, out_c, np.int64) - zp_in * inside
                region_bias = constant(f"bias_{tag}", rb.astype(np.int32),
                                       f"{node.name} bias - zp_in*sum(in-bounds w) of region {tag} [{out_c}] int32")
                consts.append(region_bias)
                # Which taps it leaves out, so a schedule may compute it at run time instead
                # (schedule/depthwise_intrin.py: region_bias_at_runtime).
                excluded[tag] = [(i, j) for i in range(kh_n) for j in range(kw_n)
                                 if i not in kh_valid or j not in kw_valid]
            # The in-bounds taps of a region form one sub-window [kh0, kh0+nkh) x [kw0, kw0+nkw).
            taps = None
            if kh_valid and kw_valid:
                khe, kwe = add(kh, kh_valid[0]), add(kw, kw_valid[0])
                xv = x.load(n, add(ih0, mul(khe, dh)), add(iw0, mul(kwe, dw)), ic)
                wv = w.load(0, khe, kwe, oc)
                term = mul(xv, wv) if is_float else mul(i32(xv), i32(wv))
                taps = loops([(kh, len(kh_valid)), (kw, len(kw_valid))], acc.store(add(acc.load(), term)))
            if is_float:
                result = clamp(acc.load(), p.act_min, p.act_max)
            else:
                result = to_int8(add(req(acc.load(), oc), p.output_offset), p.act_min, p.act_max, target)
            body = Allocate(acc, seq(acc.store(region_bias.load(oc)), taps, y.store(result, n, oh, ow, oc)))
            body = loops([(ic, in_c), (m, mult_n)], body)
            for v, value in ((iw0, sub(mul(ow, sw), pl)), (ih0, sub(mul(oh, sh), pt))):
                if any(e == v for e in walk(body)):      # a region of padded taps reads no input
                    body = LetStmt(v, value, body)
            row.append(loops([(ow_r, wn)], body))
        # Row by row (each row's column regions in turn), so output pixels are written in
        # row-major order: what in-place planning (memory/inplace.py, "window") relies on.
        regions.append(loops([(oh_r, hn)], seq(*row)))
    extra = {"zp_in": zp_in, "region_taps": excluded} if excluded else {}
    if not is_float:
        # The geometry a whole-layer kernel needs (schedule/depthwise_intrin.py: depthwise_rows).
        extra["window"] = {"kernel": [kh_n, kw_n], "stride": [sh, sw], "dilation": [dh, dw], "padding": [pt, pl],
                           "multiplier": mult_n, "zp_in": zp_in}
    return make_func(g, node, [x, y, *consts], loops([(n, batch)], seq(*regions)), **extra)
