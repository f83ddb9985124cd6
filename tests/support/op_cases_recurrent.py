"""Test plans and graph builders of the recurrent family (microcompile/ir/ops_recurrent.py):
lstm (TFLite's UNIDIRECTIONAL_SEQUENCE_LSTM, float32 and int8 with an int16 cell state) and
svdf (float32, and int8 with int16 weights_time and state). gru is ONNX-only (LiteRT has no
GRU), so its cases live with the ONNX tests.

State tensors are variable (persistent) tensors, as the TFLite converter writes them; the
int8 LSTM's hidden state shares the output's quantization and its cell state has a
power-of-two scale (what LiteRT requires).
"""

from __future__ import annotations

import numpy as np

from support.op_cases import BUILDERS, PLANS, _act_q
from microcompile.ir import QuantParams, Tensor

PLANS.update({
    "lstm": {"batch": (1, 1, 2), "time": (1, 3, 6), "features": (1, 4, 7), "units": (1, 5, 8, 12),
             "time_major": (False, False, True), "cell_clip": (0.0, 0.0, 3.0), "cell_log2": (-11, -13, -15),
             "weight_std": (0.3, 1.0, 2.5)},
    "svdf": {"batch": (1, 2), "features": (1, 5, 16), "units": (1, 3, 8), "rank": (1, 2, 3), "memory": (1, 4, 10),
             "activation": ("NONE", "RELU", "NONE"), "bias": (True, True, False)},
})


def _const(b, name, shape, quant=None, std=1.0, dtype=None):
    if dtype == "int8":
        data = b.rng.integers(-127, 128, shape, dtype=np.int8)
    elif dtype == "int16":
        data = np.clip(np.rint(b.rng.normal(0, 6000, shape)), -32767, 32767).astype(np.int16)
    elif dtype == "int32":
        data = b.rng.integers(-20000, 20000, shape, dtype=np.int32)
    else:
        data = (b.rng.normal(0, std, shape)).astype(np.float32)
        dtype = "float32"
    b.tensors[name] = Tensor(name, tuple(shape), dtype, quant, data=data)
    return name


def _state(b, name, shape, dtype, quant=None):
    b.tensors[name] = Tensor(name, tuple(shape), dtype, quant, variable=True)
    return name


def _sym(scale):
    return QuantParams((float(np.float32(scale)),), (0,))


def _lstm(case, b):
    bs, t, f, h = case["batch"], case["time"], case["features"], case["units"]
    x = b.act("x", (t, bs, f) if case["time_major"] else (bs, t, f))
    attrs = {"time_major": case["time_major"], "cell_clip": case["cell_clip"]}
    std = case["weight_std"]
    if not b.int8:
        ws = [_const(b, f"w{g}", (h, f), std=std / np.sqrt(f)) for g in "ifco"]
        rs = [_const(b, f"r{g}", (h, h), std=std / np.sqrt(h)) for g in "ifco"]
        bs_ = [_const(b, f"b{g}", (h,), std=0.5) for g in "ifco"]
        hs = _state(b, "h", (bs, h), "float32")
        cs = _state(b, "c", (bs, h), "float32")
        return (x, *ws, *rs, *bs_, hs, cs), attrs, None
    qx = b.tensors[x].quant
    qh = _act_q(b.rng)   # the hidden state, and the output: TFLite copies one to the other
    ws, rs, bias = [], [], []
    for g in "ifco":
        qw = _sym(10 ** b.rng.uniform(-2.7, -1.8) * std)
        qr = _sym(10 ** b.rng.uniform(-2.7, -1.8) * std)
        ws.append(_const(b, f"w{g}", (h, f), qw, dtype="int8"))
        rs.append(_const(b, f"r{g}", (h, h), qr, dtype="int8"))
        bias.append(_const(b, f"b{g}", (h,), _sym(np.float32(qx.s) * np.float32(qw.s)), dtype="int32"))
    hs = _state(b, "h", (bs, h), "int8", qh)
    cs = _state(b, "c", (bs, h), "int16", _sym(2.0 ** case["cell_log2"]))
    attrs["hidden_quant"] = (float(qh.s), int(qh.zp))
    return (x, *ws, *rs, *bias, hs, cs), attrs, qh


def _svdf(case, b):
    bs, f, u, rank, m = case["batch"], case["features"], case["units"], case["rank"], case["memory"]
    filters = u * rank
    x = b.act("x", (bs, f))
    attrs = {"rank": rank, "activation": case["activation"]}
    if not b.int8:
        wf = _const(b, "wf", (filters, f), std=1 / np.sqrt(f))
        wt = _const(b, "wt", (filters, m), std=1 / np.sqrt(m))
        bias = _const(b, "bias", (u,), std=0.5) if case["bias"] else ""
        return (x, wf, wt, bias, _state(b, "state", (bs, filters * m), "float32")), attrs, None
    attrs["activation"] = "RELU"   # LiteRT's int8 SVDF requires it (and, like TFLM, clamps nothing)
    qx = b.tensors[x].quant
    qf = _sym(10 ** b.rng.uniform(-2.5, -1.5))
    qt = _sym(10 ** b.rng.uniform(-5, -4))
    # the state holds feature activations: about |x| * |wf| * sqrt(f) per entry, over +-32767
    qs = _sym(qx.s * qf.s * 128 * 64 * np.sqrt(f) / 32767 * b.rng.uniform(0.5, 2))
    wf = _const(b, "wf", (filters, f), qf, dtype="int8")
    wt = _const(b, "wt", (filters, m), qt, dtype="int16")
    bias = _const(b, "bias", (u,), _sym(np.float32(qs.s) * np.float32(qt.s)), dtype="int32") if case["bias"] else ""
    state = _state(b, "state", (bs, filters * m), "int16", qs)
    out_s = qs.s * qt.s * 6000 * 10000 * np.sqrt(m * rank) / 127 * b.rng.uniform(0.02, 0.2)
    return (x, wf, wt, bias, state), attrs, QuantParams((float(np.float32(out_s)),), (int(b.rng.integers(-30, 30)),))


BUILDERS.update({"lstm": _lstm, "svdf": _svdf})
