"""tflite_writer support for the elementwise family (ops_elementwise): builtin codes and
the options of SUB, MUL (fused activation) and LEAKY_RELU (alpha)."""

from __future__ import annotations

import tflite

from . import tflite_writer as w

_OP = tflite.BuiltinOperator
w._BUILTIN.update({
    "sub": _OP.SUB, "mul": _OP.MUL, "div": _OP.DIV, "maximum": _OP.MAXIMUM, "minimum": _OP.MINIMUM,
    "squared_difference": _OP.SQUARED_DIFFERENCE, "prelu": _OP.PRELU, "leaky_relu": _OP.LEAKY_RELU,
    "logistic": _OP.LOGISTIC, "tanh": _OP.TANH, "hard_swish": _OP.HARD_SWISH,
    "log_softmax": _OP.LOG_SOFTMAX, "quantize": _OP.QUANTIZE, "dequantize": _OP.DEQUANTIZE,
})


def _sub_options(b, g, n):
    tflite.SubOptionsStart(b)
    tflite.SubOptionsAddFusedActivationFunction(b, w._ACTIVATION[n.attrs.get("activation", "NONE")])
    return tflite.BuiltinOptions.SubOptions, tflite.SubOptionsEnd(b)


def _mul_options(b, g, n):
    tflite.MulOptionsStart(b)
    tflite.MulOptionsAddFusedActivationFunction(b, w._ACTIVATION[n.attrs.get("activation", "NONE")])
    return tflite.BuiltinOptions.MulOptions, tflite.MulOptionsEnd(b)


def _div_options(b, g, n):
    tflite.DivOptionsStart(b)
    tflite.DivOptionsAddFusedActivationFunction(b, w._ACTIVATION[n.attrs.get("activation", "NONE")])
    return tflite.BuiltinOptions.DivOptions, tflite.DivOptionsEnd(b)


def _leaky_relu_options(b, g, n):
    tflite.LeakyReluOptionsStart(b)
    tflite.LeakyReluOptionsAddAlpha(b, float(n.attrs.get("alpha", 0.2)))
    return tflite.BuiltinOptions.LeakyReluOptions, tflite.LeakyReluOptionsEnd(b)


w._OPTIONS.update({"sub": _sub_options, "mul": _mul_options, "div": _div_options,
                   "leaky_relu": _leaky_relu_options})
