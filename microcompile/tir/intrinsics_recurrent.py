"""The recurrent micro-kernels of runtime_c/include/mc_recurrent.h: declarations and Python
semantics (ir/recurrent_math.py, the arithmetic the interpreter runs too). Their state
pointers (and scratch) are written in place: the declarations list them among the written
arguments.

    mc_lstm_f32(y, x, w, r, b, h, c, scratch, cell_clip, &mc_lstm_params_t)
    mc_lstm_s8(y, x, w, r, input_bias, recurrent_bias, gate_scales, h, c, scratch, &mc_lstm_s8_params_t)
    mc_gru_f32(y, x, w, r, b, h, scratch, &mc_gru_params_t)
    mc_svdf_f32(y, x, wf, wt, bias, state, scratch, &mc_svdf_params_t)
    mc_svdf_s8(y, x, wf, wt, bias, state, scratch, &mc_svdf_s8_params_t)
"""

from __future__ import annotations

import numpy as np

from ..ir.budget import elements
from ..ir import recurrent_math as rm
from .intrinsics import StructType, intrinsic

LSTM_PARAMS = StructType("mc_lstm_params_t", ("batch", "time", "input", "units", "time_major"))
LSTM_S8_PARAMS = StructType("mc_lstm_s8_params_t", (
    "batch", "time", "input", "units", "time_major", "cell_scale_log2", "hidden_multiplier", "hidden_shift",
    "hidden_zero_point", "cell_clip"))
GRU_PARAMS = StructType("mc_gru_params_t", ("batch", "time", "input", "units", "time_major", "linear_before_reset"))
SVDF_PARAMS = StructType("mc_svdf_params_t", ("batch", "input", "filters", "memory", "rank", "activation"))
SVDF_S8_PARAMS = StructType("mc_svdf_s8_params_t", (
    "batch", "input", "filters", "memory", "rank", "input_zero_point", "output_zero_point", "scale_1_multiplier",
    "scale_1_shift", "scale_2_multiplier", "scale_2_shift"))
# The fused activation of a float SVDF, as mc_svdf_params_t.activation numbers it.
SVDF_ACTIVATION = {"NONE": 0, "RELU": 1, "RELU6": 2, "RELU_N1_TO_1": 3}

_H = "mc_recurrent.h"


def _view(ptr, shape) -> np.ndarray:
    """A view (not a copy: states are updated in place) of a pointer argument."""
    a, o = ptr
    n = elements(shape)
    return a[o:o + n].reshape(shape)


def _seq_shape(p: dict, width: int) -> tuple[int, int, int]:
    return (p["time"], p["batch"], width) if p["time_major"] else (p["batch"], p["time"], width)


def _store(y_ptr, value) -> None:
    ya, yo = y_ptr
    ya[yo:yo + value.size] = value.reshape(-1)


@intrinsic("mc_lstm_f32", ("handle",) * 8 + ("float32", LSTM_PARAMS), "void", _H, extern=True, writes=(0, 5, 6, 7))
def _lstm_f32(y, x, *args):
    w, r, b, h, c, _scratch, cell_clip, p = args     # mc_lstm_f32's arguments, in its order
    units, n_in = p["units"], p["input"]
    wv, rv, bv = _view(w, (4, units, n_in)), _view(r, (4, units, units)), _view(b, (4, units))
    out = rm.lstm_float(_view(x, _seq_shape(p, n_in)), wv, rv, bv, _view(h, (p["batch"], units)),
                        _view(c, (p["batch"], units)), bool(p["time_major"]), float(cell_clip))
    _store(y, out)


@intrinsic("mc_lstm_s8", ("handle",) * 10 + (LSTM_S8_PARAMS,), "void", _H, extern=True, writes=(0, 7, 8, 9))
def _lstm_s8(y, x, *args):
    w, r, ibias, rbias, scales, h, c, _scratch, p = args     # mc_lstm_s8's arguments, in its order
    units, n_in = p["units"], p["input"]
    sc = _view(scales, (4, 4)).astype(np.int64)
    params = rm.LstmInt8Params(tuple(sc[:, 0]), tuple(sc[:, 1]), tuple(sc[:, 2]), tuple(sc[:, 3]),
                               tuple(_view(ibias, (4, units))), tuple(_view(rbias, (4, units))),
                               p["cell_scale_log2"], p["hidden_multiplier"], p["hidden_shift"],
                               p["hidden_zero_point"], p["cell_clip"])
    out = rm.lstm_int8(_view(x, _seq_shape(p, n_in)), _view(w, (4, units, n_in)), _view(r, (4, units, units)),
                       params, _view(h, (p["batch"], units)), _view(c, (p["batch"], units)), bool(p["time_major"]))
    _store(y, out)


@intrinsic("mc_gru_f32", ("handle",) * 7 + (GRU_PARAMS,), "void", _H, extern=True, writes=(0, 5, 6))
def _gru_f32(y, x, w, r, b, h, scratch, p: dict):
    units, n_in = p["units"], p["input"]
    out = rm.gru_float(_view(x, _seq_shape(p, n_in)), _view(w, (3 * units, n_in)), _view(r, (3 * units, units)),
                       _view(b, (6 * units,)), _view(h, (p["batch"], units)), bool(p["time_major"]),
                       bool(p["linear_before_reset"]))
    _store(y, out)


_ACTIVATION_NAME = {v: k for k, v in SVDF_ACTIVATION.items()}


@intrinsic("mc_svdf_f32", ("handle",) * 7 + (SVDF_PARAMS,), "void", _H, extern=True, writes=(0, 5, 6))
def _svdf_f32(y, x, wf, wt, bias, state, scratch, p: dict):
    f, m, rank = p["filters"], p["memory"], p["rank"]
    out = rm.svdf_float(_view(x, (p["batch"], p["input"])), _view(wf, (f, p["input"])), _view(wt, (f, m)),
                        _view(bias, (f // rank,)), _view(state, (p["batch"], f * m)), rank,
                        _ACTIVATION_NAME[p["activation"]])
    _store(y, out)


@intrinsic("mc_svdf_s8", ("handle",) * 7 + (SVDF_S8_PARAMS,), "void", _H, extern=True, writes=(0, 5, 6))
@intrinsic("mc_svdf_s8_s8state", ("handle",) * 7 + (SVDF_S8_PARAMS,), "void", _H, extern=True, writes=(0, 5, 6))
def _svdf_s8(y, x, wf, wt, bias, state, scratch, p: dict):
    """Both int8 SVDFs: the state's dtype (int16, or int8 in TFLM's variant) sets the saturation."""
    f, m, rank = p["filters"], p["memory"], p["rank"]
    params = rm.SvdfInt8Params(p["input_zero_point"], p["output_zero_point"], p["scale_1_multiplier"],
                               p["scale_1_shift"], p["scale_2_multiplier"], p["scale_2_shift"])
    out = rm.svdf_int8(_view(x, (p["batch"], p["input"])), _view(wf, (f, p["input"])), _view(wt, (f, m)),
                       _view(bias, (f // rank,)), _view(state, (p["batch"], f * m)), rank, params)
    _store(y, out)
