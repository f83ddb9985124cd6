"""The recurrent family (ops_recurrent): parameters (TFLite's Prepare) and interpreter
kernels of lstm, gru and svdf. The arithmetic is ir/recurrent_math.py's.

A state input that is a variable tensor is updated in place (the interpreter's state dict:
it carries over to the next run when the caller passes the same dict); any other state
input (a constant, an activation) is copied first, so the op is stateless.
"""

from __future__ import annotations

import numpy as np

from ..ir import fixedpoint as fp, recurrent_math as rm
from ..ir.graph import Graph, Node
from . import qparams as qp
from .common import state_array
from .interp import kernel

_f32 = np.float32


@qp.prepare("lstm")
def lstm_params(g: Graph, n: Node) -> rm.LstmInt8Params | None:
    """int8: PopulateQuantizedLstmParams8x8_16 for the standard LSTM (gate inputs in Q3.12,
    i.e. intermediate scale 2^-12, since there is no layer norm)."""
    if g.tensors[n.inputs[0]].dtype == "float32":
        return None
    q = lambda i: g.tensors[n.inputs[i]].quant   # noqa: E731
    s_in, zp_in = _f32(q(0).s), q(0).zp
    s_h, zp_h = _f32(q(13).s), q(13).zp
    gate_scale = _f32(2.0 ** -12)
    mults, shifts, rmults, rshifts, ibias, rbias = [], [], [], [], [], []
    for k in range(4):
        w, r = g.tensors[n.inputs[1 + k]], g.tensors[n.inputs[5 + k]]
        m, s = fp.quantize_multiplier(float(_f32(w.quant.scale[0]) * s_in / gate_scale))
        rm_, rs = fp.quantize_multiplier(float(_f32(r.quant.scale[0]) * s_h / gate_scale))
        mults.append(m), shifts.append(s), rmults.append(rm_), rshifts.append(rs)
        bias = g.const(n.inputs[9 + k]).astype(np.int64)
        ibias.append((bias - zp_in * w.data.astype(np.int64).sum(axis=1)).astype(np.int32))
        rbias.append((-zp_h * r.data.astype(np.int64).sum(axis=1)).astype(np.int32))
    cell = g.tensors[n.inputs[14]].quant
    log2 = int(np.round(np.log2(cell.s)))
    if 2.0 ** log2 != float(_f32(cell.s)):
        raise ValueError(f"{n.name}: int8 lstm needs a power-of-two cell state scale, got {cell.s}")
    hidden_s, hidden_zp = n.attrs["hidden_quant"] or (float(s_h), zp_h)
    # effective_hidden_scale = 2^-15 / intermediate_scale * 2^-15, in float
    hm, hsh = fp.quantize_multiplier(float(_f32(2.0 ** -15) / _f32(hidden_s) * _f32(2.0 ** -15)))
    clip = n.attrs.get("cell_clip", 0.0)
    qclip = int(min(max(_f32(clip) / _f32(cell.s), -32768.0), 32767.0)) if clip > 0 else 0
    return rm.LstmInt8Params(tuple(mults), tuple(shifts), tuple(rmults), tuple(rshifts), tuple(ibias),
                             tuple(rbias), log2, hm, hsh, int(hidden_zp), qclip)


@kernel("lstm")
def _lstm(g, n, x, *operands):
    # TFLite's operand order: input weights i,f,c,o; recurrent weights i,f,c,o; biases i,f,c,o; h; c.
    w, r, b, (h, c) = operands[0:4], operands[4:8], operands[8:12], operands[12:14]
    hs, cs = state_array(g, n.inputs[13], h), state_array(g, n.inputs[14], c)
    tm = n.attrs.get("time_major", False)
    if g.tensors[n.inputs[0]].dtype == "float32":
        return rm.lstm_float(x, w, r, b, hs, cs, tm, n.attrs.get("cell_clip", 0.0))
    return rm.lstm_int8(x, w, r, lstm_params(g, n), hs, cs, tm)


@kernel("gru")
def _gru(g, n, x, w, r, b, h):
    hidden = r.shape[1]
    bias = b if b is not None else np.zeros(6 * hidden, _f32)
    return rm.gru_float(x, w, r, bias, state_array(g, n.inputs[4], h), n.attrs.get("time_major", False),
                        n.attrs.get("linear_before_reset", False))


@qp.prepare("svdf")
def svdf_params(g: Graph, n: Node) -> rm.SvdfInt8Params | None:
    """int8: SVDF Prepare's two effective scales, float products widened to double."""
    if g.tensors[n.inputs[0]].dtype == "float32":
        return None
    qi, qf, qt = (g.tensors[n.inputs[k]].quant for k in range(3))
    qs, qo = g.tensors[n.inputs[4]].quant, g.tensors[n.outputs[0]].quant
    m1, s1 = fp.quantize_multiplier(float(_f32(qi.s) * _f32(qf.s) / _f32(qs.s)))
    m2, s2 = fp.quantize_multiplier(float(_f32(qs.s) * _f32(qt.s) / _f32(qo.s)))
    return rm.SvdfInt8Params(qi.zp, qo.zp, m1, s1, m2, s2)


@kernel("svdf")
def _svdf(g, n, x, wf, wt, bias, state):
    st = state_array(g, n.inputs[4], state)
    if g.tensors[n.inputs[0]].dtype == "float32":
        return rm.svdf_float(x, wf, wt, bias, st, n.attrs["rank"], n.attrs.get("activation", "NONE"))
    return rm.svdf_int8(x, wf, wt, bias, st, n.attrs["rank"], svdf_params(g, n))
