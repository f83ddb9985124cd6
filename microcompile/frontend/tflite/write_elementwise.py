"""TFLite writers of the elementwise family (ops_elementwise): builtin codes and
the options of SUB, MUL (fused activation) and LEAKY_RELU (alpha)."""

from __future__ import annotations

import tflite

from .writer import activation_code, no_options, writer



@writer("sub", "SUB")
def _sub_options(b, g, n):
    tflite.SubOptionsStart(b)
    tflite.SubOptionsAddFusedActivationFunction(b, activation_code(n))
    return tflite.BuiltinOptions.SubOptions, tflite.SubOptionsEnd(b)


@writer("mul", "MUL")
def _mul_options(b, g, n):
    tflite.MulOptionsStart(b)
    tflite.MulOptionsAddFusedActivationFunction(b, activation_code(n))
    return tflite.BuiltinOptions.MulOptions, tflite.MulOptionsEnd(b)


@writer("div", "DIV")
def _div_options(b, g, n):
    tflite.DivOptionsStart(b)
    tflite.DivOptionsAddFusedActivationFunction(b, activation_code(n))
    return tflite.BuiltinOptions.DivOptions, tflite.DivOptionsEnd(b)


@writer("leaky_relu", "LEAKY_RELU")
def _leaky_relu_options(b, g, n):
    tflite.LeakyReluOptionsStart(b)
    tflite.LeakyReluOptionsAddAlpha(b, float(n.attrs.get("alpha", 0.2)))
    return tflite.BuiltinOptions.LeakyReluOptions, tflite.LeakyReluOptionsEnd(b)


for _op in ("maximum", "minimum", "squared_difference", "prelu", "logistic", "tanh", "hard_swish", "log_softmax",
            "quantize", "dequantize"):
    writer(_op, _op.upper())(no_options)
