"""TFLite converters of the elementwise family (ops_elementwise): SUB, MUL, MAXIMUM, MINIMUM,
SQUARED_DIFFERENCE, LEAKY_RELU, PRELU, LOGISTIC, TANH, HARD_SWISH, LOG_SOFTMAX, QUANTIZE,
DEQUANTIZE. All map one to one; only SUB/MUL carry a fused activation, LEAKY_RELU its alpha.
"""

from __future__ import annotations

import numpy as np

from . import tflite_reader as r

r._OPTION_FIELDS.update({
    "SUB": ("SubOptions", ("FusedActivationFunction",)),
    "MUL": ("MulOptions", ("FusedActivationFunction",)),
    "DIV": ("DivOptions", ("FusedActivationFunction",)),
    "LEAKY_RELU": ("LeakyReluOptions", ("Alpha",)),
})


def _binary(our_op: str, fused: bool):
    def convert(ctx, op):
        attrs = {"activation": r._activation(op)} if fused else {}
        return our_op, r._inputs(ctx, op, 2, 2), attrs
    return convert


def _leaky_relu(ctx, op):
    # No options means alpha 0, as TFLite's own parser defaults it.
    alpha = float(np.float32((op.options or {}).get("Alpha", 0.0)))
    return "leaky_relu", r._inputs(ctx, op, 1, 1), {"alpha": alpha}


r.CONVERTERS.update({
    "SUB": _binary("sub", True),
    "MUL": _binary("mul", True),
    "DIV": _binary("div", True),   # float32; an int8 DIV fails verify (LiteRT has no int8 kernel)
    "MAXIMUM": _binary("maximum", False),
    "MINIMUM": _binary("minimum", False),
    "SQUARED_DIFFERENCE": _binary("squared_difference", False),
    "PRELU": _binary("prelu", False),
    "LEAKY_RELU": _leaky_relu,
    "LOGISTIC": r._standalone("logistic"),
    "TANH": r._standalone("tanh"),
    "HARD_SWISH": r._standalone("hard_swish"),
    "LOG_SOFTMAX": r._standalone("log_softmax"),
    "QUANTIZE": r._standalone("quantize"),
    "DEQUANTIZE": r._standalone("dequantize"),
})
