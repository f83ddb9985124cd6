"""The elementwise family (ops_elementwise) in TFLite: SUB, MUL, DIV, MAXIMUM, MINIMUM,
SQUARED_DIFFERENCE, LEAKY_RELU, PRELU, LOGISTIC, TANH, HARD_SWISH, ABS, LOG_SOFTMAX, QUANTIZE,
DEQUANTIZE, SQRT, RSQRT, GELU (float32): the converter of each builtin (@converter), then the writer of each op
(@writer). All map one to one; only SUB/MUL/DIV carry a fused activation, LEAKY_RELU its
alpha.
"""
from __future__ import annotations

import numpy as np
import tflite

from . import reader as r
from .nn import pot_scale_int16_problem
from .reader import converter
from .writer import activation_code, no_options, writer

def _binary(our_op: str, fused: bool):
    def convert(ctx, op):
        attrs = {"activation": r.fused_activation(op)} if fused else {}
        return our_op, r.op_inputs(ctx, op, 2, 2), attrs
    return convert


@converter("LEAKY_RELU", options=("LeakyReluOptions", ("Alpha",)))
def _leaky_relu(ctx, op):
    # No options means alpha 0, as TFLite's own parser defaults it.
    alpha = float(np.float32((op.options or {}).get("Alpha", 0.0)))
    return "leaky_relu", r.op_inputs(ctx, op, 1, 1), {"alpha": alpha}


# TFLite builtin, our op, options class of the ones with a fused activation.
_BINARY = (("SUB", "sub", "SubOptions"), ("MUL", "mul", "MulOptions"),
           ("DIV", "div", "DivOptions"),     # float32; an int8 DIV fails verify (LiteRT has no int8 kernel)
           ("MAXIMUM", "maximum", None), ("MINIMUM", "minimum", None),
           ("SQUARED_DIFFERENCE", "squared_difference", None), ("PRELU", "prelu", None))
for _builtin, _op, _options in _BINARY:
    fields = ("FusedActivationFunction", "PotScaleInt16") if _builtin == "SUB" else ("FusedActivationFunction",)
    converter(_builtin, options=(_options, fields) if _options else None,
              problem=pot_scale_int16_problem if _builtin == "SUB" else None)(_binary(_op, _options is not None))
for _builtin in ("LOGISTIC", "TANH", "HARD_SWISH", "ABS", "LOG_SOFTMAX", "QUANTIZE", "DEQUANTIZE", "SQRT",
                 "RSQRT"):
    converter(_builtin)(r.standalone(_builtin.lower()))


@converter("GELU", options=("GeluOptions", ("Approximate",)))
def _gelu(ctx, op):
    return "gelu", r.op_inputs(ctx, op, 1, 1), {"approximate": bool((op.options or {}).get("Approximate", False))}


# --- the writers ----------------------------------------------------------------------

@writer("sub", "SUB")
def _sub_options(b, g, n):
    tflite.SubOptionsStart(b)
    tflite.SubOptionsAddFusedActivationFunction(b, activation_code(n))
    # int16: the general-scale kernel (the schema's default, true, picks a power-of-two one).
    tflite.SubOptionsAddPotScaleInt16(b, False)
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


for _op in ("maximum", "minimum", "squared_difference", "prelu", "logistic", "tanh", "hard_swish", "abs",
            "log_softmax", "quantize", "dequantize", "sqrt", "rsqrt"):
    writer(_op, _op.upper())(no_options)


@writer("gelu", "GELU")
def _gelu_options(b, g, n):
    tflite.GeluOptionsStart(b)
    tflite.GeluOptionsAddApproximate(b, bool(n.attrs.get("approximate", False)))
    return tflite.BuiltinOptions.GeluOptions, tflite.GeluOptionsEnd(b)
