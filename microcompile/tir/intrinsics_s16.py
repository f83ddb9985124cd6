"""The 16x8 micro-kernels of runtime_c/include/mc_s16.h: declarations and Python semantics
(ir/fixedpoint16.py, the arithmetic the interpreter runs too).

    mc_conv_<v>_s16 / mc_depthwise_<v>_s16 / mc_transpose_conv_<v>_s16
        (y, x, w, bias, mult, shift, &mc_conv_s16_params_t)
    mc_fc_<v>_s16(y, x, w, bias, scale, &mc_fc_s16_params_t)
    mc_softmax_s16(x, y, exp_lut, recip_lut, &mc_softmax_s16_params_t)
    mc_logistic_s16 / mc_tanh_s16(x, y, &mc_sigmoid_s16_params_t)

variant <v> is "c" (portable, int8 weights) or "dsp" (SMLALD, weights widened to int16 at
compile time); both compute the same integers.
"""

from __future__ import annotations

import numpy as np

from ..ir.budget import elements
from ..ir import fixedpoint16 as fp16
from .intrinsics import StructType, intrinsic

CONV_S16_PARAMS = StructType("mc_conv_s16_params_t", (
    "batch", "in_h", "in_w", "in_c", "out_h", "out_w", "out_c", "k_h", "k_w", "stride_h", "stride_w", "dil_h",
    "dil_w", "pad_top", "pad_left", "depth_multiplier", "act_min", "act_max"))
FC_S16_PARAMS = StructType("mc_fc_s16_params_t", ("rows", "units", "depth", "weights_offset", "per_channel",
                                                  "act_min", "act_max"))
SOFTMAX_S16_PARAMS = StructType("mc_softmax_s16_params_t", ("rows", "depth", "input_multiplier", "input_left_shift"))
SIGMOID_S16_PARAMS = StructType("mc_sigmoid_s16_params_t", ("size", "input_multiplier", "input_left_shift"))

VARIANTS = ("c", "dsp")
_H = "mc_s16.h"


def kernel_name(op: str, variant: str) -> str:
    """mc_<op>_<variant>_s16 for op conv, depthwise, transpose_conv, fc."""
    return f"mc_{op}_{variant}_s16"


def _view(ptr, n: int) -> np.ndarray:
    a, o = ptr
    return a[o:o + n]


def _conv_shapes(p: dict):
    x_shape = (p["batch"], p["in_h"], p["in_w"], p["in_c"])
    y_shape = (p["batch"], p["out_h"], p["out_w"], p["out_c"])
    return x_shape, y_shape


def _conv_impl(kind: str):
    def impl(y_ptr, x_ptr, w_ptr, bias_ptr, mult_ptr, shift_ptr, p: dict):
        x_shape, y_shape = _conv_shapes(p)
        co, kh, kw, ci = p["out_c"], p["k_h"], p["k_w"], p["in_c"]
        w_shape = (1, kh, kw, co) if kind == "depthwise" else (co, kh, kw, ci)
        x = _view(x_ptr, elements(x_shape)).reshape(x_shape)
        w = _view(w_ptr, elements(w_shape)).reshape(w_shape)
        bias, mult, shift = (_view(ptr, co) for ptr in (bias_ptr, mult_ptr, shift_ptr))
        rq = fp16.Requant(mult, shift, p["act_min"], p["act_max"])
        stride, pad = (p["stride_h"], p["stride_w"]), (p["pad_top"], p["pad_left"], 0, 0)
        if kind == "transpose_conv":
            y = fp16.transpose_conv_s16(x, w, bias, rq, stride, pad, (p["out_h"], p["out_w"]))
        else:
            # bottom/right padding: whatever makes the window count come out at out_h x out_w
            dil = (p["dil_h"], p["dil_w"])
            bottom = (p["out_h"] - 1) * stride[0] + (kh - 1) * dil[0] + 1 - p["in_h"] - p["pad_top"]
            right = (p["out_w"] - 1) * stride[1] + (kw - 1) * dil[1] + 1 - p["in_w"] - p["pad_left"]
            pad = (p["pad_top"], p["pad_left"], max(bottom, 0), max(right, 0))
            fn = fp16.depthwise_s16 if kind == "depthwise" else fp16.conv2d_s16
            y = fn(x, w, bias, rq, stride, dil, pad)[:, :p["out_h"], :p["out_w"]]
        ya, yo = y_ptr
        ya[yo:yo + y.size] = y.reshape(-1)
    return impl


_CONV_ARGS = ("handle",) * 6 + (CONV_S16_PARAMS,)
for _kind in ("conv", "depthwise", "transpose_conv"):
    for _v in VARIANTS:
        intrinsic(kernel_name(_kind, _v), _CONV_ARGS, "void", _H, extern=True, writes=(0,))(_conv_impl(_kind))


def _fc_impl(y_ptr, x_ptr, w_ptr, bias_ptr, scale_ptr, p: dict):
    rows, units, depth = p["rows"], p["units"], p["depth"]
    x = _view(x_ptr, rows * depth).reshape(rows, depth)
    w = _view(w_ptr, units * depth).reshape(units, depth)
    scale = _view(scale_ptr, units if p["per_channel"] else 1)
    y = fp16.fully_connected_s16(x, w, _view(bias_ptr, units), p["weights_offset"], scale, p["act_min"],
                                 p["act_max"])
    ya, yo = y_ptr
    ya[yo:yo + y.size] = y.reshape(-1)


for _v in VARIANTS:
    intrinsic(kernel_name("fc", _v), ("handle",) * 5 + (FC_S16_PARAMS,), "void", _H, extern=True,
              writes=(0,))(_fc_impl)


@intrinsic("mc_softmax_s16", ("handle",) * 4 + (SOFTMAX_S16_PARAMS,), "void", _H, extern=True, writes=(1,))
def _softmax_s16(x_ptr, y_ptr, exp_ptr, recip_ptr, p: dict):
    rows, depth = p["rows"], p["depth"]
    x = _view(x_ptr, rows * depth).reshape(rows, depth)
    y = fp16.softmax16(x, p["input_multiplier"], p["input_left_shift"], _view(exp_ptr, 513), _view(recip_ptr, 513))
    ya, yo = y_ptr
    ya[yo:yo + y.size] = y.reshape(-1)


def _table_impl(fn):
    def impl(x_ptr, y_ptr, p: dict):
        y = fn(_view(x_ptr, p["size"]), p["input_multiplier"], p["input_left_shift"])
        ya, yo = y_ptr
        ya[yo:yo + y.size] = y
    return impl


intrinsic("mc_logistic_s16", ("handle", "handle", SIGMOID_S16_PARAMS), "void", _H, extern=True,
          writes=(1,))(_table_impl(fp16.logistic16))
intrinsic("mc_tanh_s16", ("handle", "handle", SIGMOID_S16_PARAMS), "void", _H, extern=True,
          writes=(1,))(_table_impl(fp16.tanh16))
