"""lstm, gru and svdf: one call of a recurrent micro-kernel (runtime_c/include/mc_recurrent.h)
that runs the whole sequence, with the weights packed gate by gate in flash and the
parameters of reference/recurrent.py.

A variable state input is a "state" buffer: the model's state buffer, which persists from
one inference to the next, updated in place by the kernel. Any other state input (ONNX's
initial_h: a constant or a graph input) is first copied into scratch, which the kernel then
updates: the op is stateless.
"""

from __future__ import annotations

import numpy as np

from ..ir.graph import Graph, Node
from ..reference import recurrent as qr
from ..tir.intrinsics_recurrent import (GRU_PARAMS, LSTM_PARAMS, LSTM_S8_PARAMS, SVDF_ACTIVATION, SVDF_PARAMS,
                                        SVDF_S8_PARAMS)
from ..tir.nodes import Buffer, Call, Evaluate, FloatImm, Var, loops, seq
from .common import address, arena, constant, describe, lowering, make_func, operand


def _state(g: Graph, name: str, buf_name: str) -> tuple[Buffer, list, list]:
    """The buffer a kernel updates for state input `name`, the buffers it needs and the
    statements that initialise it (a copy into scratch when the input is not persistent)."""
    t = g.tensors[name]
    if t.variable:
        return Buffer(buf_name, t.dtype, tuple(t.shape), "state", tensor=name, comment=describe(t)), [], []
    work = Buffer(buf_name, t.dtype, (t.size,), "scratch", comment=f"{describe(t)}, copied: the op is stateless")
    src = operand(g, name, f"{buf_name}_init", shape=(t.size,))
    i = Var(f"i_{buf_name}")
    return work, [work, src], [loops([(i, t.size)], work.store(src.load(i), i))]


def _stacked(g: Graph, names, buf_name: str, comment: str, dtype=None) -> Buffer:
    """The constants `names` (one per gate) stacked into one flash array."""
    data = np.stack([g.const(n) for n in names])
    return constant(buf_name, data.astype(dtype) if dtype else data, comment)


@lowering("lstm")
def lower_lstm(g: Graph, node: Node, target=None):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    units, n_in = g.tensors[node.inputs[1]].shape
    tm = bool(node.attrs.get("time_major", False))
    batch, time = (xt.shape[1], xt.shape[0]) if tm else (xt.shape[0], xt.shape[1])
    x, y = arena(g, xt.name, "x"), arena(g, yt.name, "y")
    h, hbufs, hinit = _state(g, node.inputs[13], "h")
    c, cbufs, cinit = _state(g, node.inputs[14], "c")
    w = _stacked(g, node.inputs[1:5], "w", f"{node.name} input weights [4 gates i,f,c,o][{units}][{n_in}]")
    r = _stacked(g, node.inputs[5:9], "r", f"{node.name} recurrent weights [4][{units}][{units}]")
    shape = dict(batch=batch, time=time, input=n_in, units=units, time_major=int(tm))
    if xt.dtype == "float32":
        b = _stacked(g, node.inputs[9:13], "b", f"{node.name} gate biases [4][{units}]", np.float32)
        scratch = Buffer("gates", "float32", (4 * units,), "scratch", comment="the four gates of one step")
        call = Call("mc_lstm_f32", tuple(address(v) for v in (y, x, w, r, b, h, c, scratch))
                    + (FloatImm(float(node.attrs.get("cell_clip", 0.0))), LSTM_PARAMS(**shape)), "void")
        consts = [w, r, b]
    else:
        p = qr.lstm_params(g, node)
        ib = constant("input_bias", np.stack(p.input_bias).astype(np.int32),
                      f"{node.name} gate biases - zp_in * rowsum(w) [4][{units}]")
        rb = constant("recurrent_bias", np.stack(p.recurrent_bias).astype(np.int32),
                      f"{node.name} -zp_h * rowsum(r) [4][{units}]")
        scales = constant("gate_scales", np.array([p.input_mult, p.input_shift, p.recurrent_mult, p.recurrent_shift],
                                                  np.int32).T.copy(),
                          f"{node.name} per gate: input multiplier, shift, recurrent multiplier, shift (to Q3.12)")
        scratch = Buffer("gates", "int16", (4 * units,), "scratch", comment="the four gates of one step, Q3.12")
        params = LSTM_S8_PARAMS(**shape, cell_scale_log2=p.cell_scale_log2, hidden_multiplier=p.hidden_mult,
                                hidden_shift=p.hidden_shift, hidden_zero_point=p.hidden_zero_point,
                                cell_clip=p.cell_clip)
        call = Call("mc_lstm_s8", tuple(address(v) for v in (y, x, w, r, ib, rb, scales, h, c, scratch)) + (params,),
                    "void")
        consts = [w, r, ib, rb, scales]
    body = seq(*hinit, *cinit, Evaluate(call))
    return make_func(g, node, [x, y, h, c, scratch, *consts, *hbufs[1:], *cbufs[1:]], body)


@lowering("gru")
def lower_gru(g: Graph, node: Node, target=None):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    units3, n_in = g.tensors[node.inputs[1]].shape
    units = units3 // 3
    tm = bool(node.attrs.get("time_major", False))
    batch, time = (xt.shape[1], xt.shape[0]) if tm else (xt.shape[0], xt.shape[1])
    x, y = arena(g, xt.name, "x"), arena(g, yt.name, "y")
    h, hbufs, hinit = _state(g, node.inputs[4], "h")
    w = constant("w", g.const(node.inputs[1]).astype(np.float32), f"{node.name} input weights [3 gates z,r,h][{units}][{n_in}]")
    r = constant("r", g.const(node.inputs[2]).astype(np.float32), f"{node.name} recurrent weights [3][{units}][{units}]")
    bias = (g.const(node.inputs[3]).astype(np.float32) if node.inputs[3] else np.zeros(6 * units, np.float32))
    b = constant("b", bias, f"{node.name} input then recurrent biases [6][{units}]")
    scratch = Buffer("gates", "float32", (4 * units,), "scratch", comment="z, r, the previous h and r * h")
    params = GRU_PARAMS(batch=batch, time=time, input=n_in, units=units, time_major=int(tm),
                        linear_before_reset=int(bool(node.attrs.get("linear_before_reset", False))))
    call = Call("mc_gru_f32", tuple(address(v) for v in (y, x, w, r, b, h, scratch)) + (params,), "void")
    return make_func(g, node, [x, y, h, scratch, w, r, b, *hbufs[1:]], seq(*hinit, Evaluate(call)))


@lowering("svdf")
def lower_svdf(g: Graph, node: Node, target=None):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    filters, n_in = g.tensors[node.inputs[1]].shape
    memory = g.tensors[node.inputs[2]].shape[1]
    rank = node.attrs["rank"]
    units = filters // rank
    x, y = arena(g, xt.name, "x"), arena(g, yt.name, "y")
    state, sbufs, sinit = _state(g, node.inputs[4], "state")
    wf = constant("weights_feature", g.const(node.inputs[1]), f"{node.name} weights_feature [{filters}][{n_in}]")
    wt = constant("weights_time", g.const(node.inputs[2]), f"{node.name} weights_time [{filters}][{memory}]")
    shape = dict(batch=xt.shape[0], input=n_in, filters=filters, memory=memory, rank=rank)
    if xt.dtype == "float32":
        bias_data = g.const(node.inputs[3]).astype(np.float32) if node.inputs[3] else np.zeros(units, np.float32)
        scratch = Buffer("filters", "float32", (filters,), "scratch", comment="weights_time . state per filter")
        params = SVDF_PARAMS(**shape, activation=SVDF_ACTIVATION[node.attrs.get("activation", "NONE")])
        kernel = "mc_svdf_f32"
    else:
        bias_data = g.const(node.inputs[3]).astype(np.int32) if node.inputs[3] else np.zeros(units, np.int32)
        scratch = Buffer("filters", "int32", (filters,), "scratch", comment="weights_time . state per filter")
        p = qr.svdf_params(g, node)
        params = SVDF_S8_PARAMS(**shape, input_zero_point=p.input_zero_point, output_zero_point=p.output_zero_point,
                                scale_1_multiplier=p.scale_1_mult, scale_1_shift=p.scale_1_shift,
                                scale_2_multiplier=p.scale_2_mult, scale_2_shift=p.scale_2_shift)
        kernel = "mc_svdf_s8_s8state" if g.tensors[node.inputs[4]].dtype == "int8" else "mc_svdf_s8"
    bias = constant("bias", bias_data, f"{node.name} bias [{units}]")
    call = Call(kernel, tuple(address(v) for v in (y, x, wf, wt, bias, state, scratch)) + (params,), "void")
    return make_func(g, node, [x, y, state, scratch, wf, wt, bias, *sbufs[1:]], seq(*sinit, Evaluate(call)))
