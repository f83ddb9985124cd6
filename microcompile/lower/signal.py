"""cast: one loop over the elements; TFLite Micro's signal ops: one call of a micro-kernel
of runtime_c/include/mc_signal.h or mc_signal_fft.h each (the arithmetic of
ir/signal_math.py and ir/signal_fft.py).

CAST follows reference/plain.py: integer conversions keep the low bits, float32 to an
integer saturates to the target's range (NaN gives its largest value, as LiteRT): the tests
come before the C conversion, which is then always defined.
"""

from __future__ import annotations

import numpy as np

from ..ir import signal_fft as sf
from ..ir.graph import NP_DTYPES, Graph, Node
from ..ir.ops_signal import SPECTRAL_SUBTRACTION_OPTIONS
from ..tir.intrinsics_signal import (FILTER_BANK_LOG_PARAMS, FILTER_BANK_PARAMS, FILTER_BANK_SQRT_PARAMS, PCAN_PARAMS,
                                     SPECTRAL_SUBTRACTION_PARAMS, WINDOW_PARAMS)
from ..tir.intrinsics_signal_fft import ENERGY_PARAMS, FFT_AUTO_SCALE_PARAMS, RFFT_PARAMS
from ..tir.nodes import (BinOp, Buffer, Call, Evaluate, Expr, FloatImm, IntImm, Load, PrimFunc, Select, Var,
                         cast, loops)
from .common import address, arena, constant, describe, lowering, make_func, operand

def _float_to_int(x: Expr, dtype: str) -> Expr:
    info = np.iinfo(NP_DTYPES[dtype])
    lo, hi = IntImm(int(info.min), dtype), IntImm(int(info.max), dtype)
    # hi + 1 and lo are powers of two (or 0): exact in float32, so the bounds are exact.
    inside = Select(BinOp("lt", x, FloatImm(float(info.min))), lo, cast(dtype, x))
    saturated = Select(BinOp("ge", x, FloatImm(float(info.max) + 1.0)), hi, inside)
    return Select(BinOp("ne", x, x), hi, saturated)     # NaN


@lowering("cast")
def lower_cast(g: Graph, node: Node, target=None):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    x, y = arena(g, xt.name, "x", (xt.size,)), arena(g, yt.name, "y", (yt.size,))
    i = Var("i")
    v: Expr = Load(x, i)
    v = _float_to_int(v, yt.dtype) if xt.dtype == "float32" and yt.dtype != "float32" else cast(yt.dtype, v)
    body = loops([(i, yt.size)], y.store(v, i))
    return make_func(g, node, [x, y], body)


def _call(g: Graph, node: Node, name: str, buffers: list[Buffer], params) -> PrimFunc:
    """One call of micro-kernel `name` with `buffers` as its pointer arguments, in order."""
    body = Evaluate(Call(name, tuple(address(b) for b in buffers) + (params,), "void"))
    return make_func(g, node, list(dict.fromkeys(buffers)), body)


def _flat(g: Graph, name: str, buf_name: str) -> Buffer:
    t = g.tensors[name]
    return operand(g, name, buf_name, (t.size,)) if t.is_const else arena(g, name, buf_name, (max(t.size, 1),))


@lowering("signal_window")
def lower_window(g: Graph, node: Node, target=None):
    xt = g.tensors[node.inputs[0]]
    size = xt.shape[-1]
    params = WINDOW_PARAMS(frames=xt.size // size, size=size, shift=node.attrs["shift"])
    return _call(g, node, "mc_window_s16", [_flat(g, node.outputs[0], "y"), _flat(g, xt.name, "x"),
                                            _flat(g, node.inputs[1], "weights")], params)


@lowering("signal_fft_auto_scale")
def lower_fft_auto_scale(g: Graph, node: Node, target=None):
    xt = g.tensors[node.inputs[0]]
    return _call(g, node, "mc_fft_auto_scale_s16", [_flat(g, node.outputs[0], "y"), _flat(g, node.outputs[1], "scale_bits"),
                                                    _flat(g, xt.name, "x")], FFT_AUTO_SCALE_PARAMS(size=xt.size))


@lowering("signal_rfft")
def lower_rfft(g: Graph, node: Node, target=None):
    xt, length = g.tensors[node.inputs[0]], node.attrs["fft_length"]
    tables = sf.rfft_tables(length)
    consts = [constant(k, v, f"kissfft {k} for fft_length {length}") for k, v in tables.items()]
    params = RFFT_PARAMS(rows=xt.size // xt.shape[-1], input_length=xt.shape[-1], fft_length=length,
                         stages=len(tables["factors"]))
    return _call(g, node, "mc_rfft_s16", [_flat(g, node.outputs[0], "y"), _flat(g, xt.name, "x"), *consts], params)


@lowering("signal_energy")
def lower_energy(g: Graph, node: Node, target=None):
    yt = g.tensors[node.outputs[0]]
    params = ENERGY_PARAMS(length=yt.size, start_index=node.attrs["start_index"], end_index=node.attrs["end_index"])
    return _call(g, node, "mc_energy_s16", [_flat(g, yt.name, "y"), _flat(g, node.inputs[0], "x")], params)


@lowering("signal_filter_bank")
def lower_filter_bank(g: Graph, node: Node, target=None):
    names = ("x", "weights", "unweights", "channel_frequency_starts", "channel_weight_starts", "channel_widths")
    ins = [_flat(g, t, b) for t, b in zip(node.inputs, names)]
    return _call(g, node, "mc_filter_bank_u32", [_flat(g, node.outputs[0], "y"), *ins],
                 FILTER_BANK_PARAMS(num_channels=node.attrs["num_channels"]))


@lowering("signal_filter_bank_square_root")
def lower_filter_bank_square_root(g: Graph, node: Node, target=None):
    yt = g.tensors[node.outputs[0]]
    return _call(g, node, "mc_filter_bank_sqrt_u64", [_flat(g, yt.name, "y"), _flat(g, node.inputs[0], "x"),
                                                      _flat(g, node.inputs[1], "scale_bits")],
                 FILTER_BANK_SQRT_PARAMS(channels=yt.size))


@lowering("signal_spectral_subtraction")
def lower_spectral_subtraction(g: Graph, node: Node, target=None):
    xt, st = g.tensors[node.inputs[0]], g.tensors[node.inputs[1]]
    # The noise estimate persists between inferences: the model's state buffer (zero at reset).
    state = Buffer("noise_state", st.dtype, (st.size,), "state", tensor=st.name, comment=describe(st))
    a = node.attrs
    params = SPECTRAL_SUBTRACTION_PARAMS(num_channels=xt.size, **{k: int(a[k]) for k in SPECTRAL_SUBTRACTION_OPTIONS})
    return _call(g, node, "mc_spectral_subtraction_u32", [_flat(g, node.outputs[0], "y"),
                                                          _flat(g, node.outputs[1], "noise_out"),
                                                          _flat(g, xt.name, "x"), state], params)


@lowering("signal_pcan")
def lower_pcan(g: Graph, node: Node, target=None):
    yt = g.tensors[node.outputs[0]]
    ins = [_flat(g, t, b) for t, b in zip(node.inputs, ("x", "noise_estimate", "gain_lut"))]
    return _call(g, node, "mc_pcan_u32", [_flat(g, yt.name, "y"), *ins],
                 PCAN_PARAMS(channels=yt.size, snr_shift=node.attrs["snr_shift"]))


@lowering("signal_filter_bank_log")
def lower_filter_bank_log(g: Graph, node: Node, target=None):
    yt = g.tensors[node.outputs[0]]
    params = FILTER_BANK_LOG_PARAMS(channels=yt.size, input_correction_bits=node.attrs["input_correction_bits"],
                                    output_scale=node.attrs["output_scale"])
    return _call(g, node, "mc_filter_bank_log_u32", [_flat(g, yt.name, "y"), _flat(g, node.inputs[0], "x")], params)
