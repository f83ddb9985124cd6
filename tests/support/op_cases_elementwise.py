"""Test plans and graph builders of the elementwise family (microcompile/ir/ops_elementwise.py):
sub, mul, maximum, minimum, squared_difference, leaky_relu, prelu, logistic, tanh,
hard_swish, abs, log_softmax, quantize, dequantize.

Merged into op_cases.PLANS / op_cases.BUILDERS on import. dtype conventions for the ops
that change dtype: quantize "int8" is int8 -> int8 (requantize) and "float32" is
float32 -> int8; dequantize is always int8 -> float32.
"""

from __future__ import annotations

import numpy as np

from support.op_cases import ACTS, BUILDERS, PLANS, _act_q
from microcompile.ir import QuantParams

# Broadcast pairs up to 4-D: equal shapes, scalars, either side broadcasting, both at once.
_SHAPES = (((1, 4, 4, 3), (1, 4, 4, 3)), ((1, 4, 4, 3), (3,)), ((2, 1, 5, 3), (1, 4, 1, 3)),
           ((1, 3, 1, 2), (1, 3, 6, 1)), ((5,), (1, 2, 5)), ((2, 6), (2, 6)), ((1,), (2, 3, 4)),
           ((3, 1), (1, 7)), ((1, 2, 3, 4), (1, 1, 1, 1)), ((4, 1, 1, 8), (1, 3, 2, 1)))
_UNARY_SHAPES = ((1, 5, 5, 3), (7,), (2, 3, 9), (1, 16), (1, 2, 2, 32))
# const_rhs: the second operand is a constant (a MUL by a per-channel scale, a SUB of a mean).
_BINARY = {"shapes": _SHAPES, "pot_scales": (False, False, True), "const_rhs": (False, False, True)}
_REQUANT = {"shape": _UNARY_SHAPES, "requant": (False, True, True), "pot_scales": (False, False, True)}

PLANS.update({
    "sub": dict(_BINARY, activation=ACTS),
    "mul": dict(_BINARY, activation=ACTS),
    "maximum": dict(_BINARY, mixed_quant=(False, False, True)),
    "minimum": dict(_BINARY, mixed_quant=(False, False, True)),
    "squared_difference": dict(_BINARY),
    "leaky_relu": dict(_REQUANT, alpha=(0.01, 0.1, 0.2, 0.3, 0.5, 0.9, 1.7)),
    "prelu": {"case": (((1, 4, 4, 3), (3,)), ((1, 4, 4, 3), (1, 1, 3)), ((1, 4, 4, 3), (4, 4, 3)),
                       ((1, 4, 4, 3), (1,)), ((2, 3, 5), (5,)), ((1, 6, 2, 4), (6, 1, 4)), ((7, 8), (8,))),
              "requant": (False, True, True), "pot_scales": (False, False, True)},
    "logistic": {"shape": _UNARY_SHAPES, "pot_scales": (False, False, True)},
    "tanh": {"shape": _UNARY_SHAPES, "pot_scales": (False, False, True)},
    "hard_swish": dict(_REQUANT, requant=(True,)),
    "abs": dict(_REQUANT),
    "log_softmax": {"shape": ((1, 10), (2, 7), (1, 3, 3, 12), (1, 1), (3, 40), (1, 100)),
                    "pot_scales": (False, False, True)},
    "quantize": {"shape": _UNARY_SHAPES, "pot_scales": (False, False, True)},
    "dequantize": {"shape": _UNARY_SHAPES, "pot_scales": (False, False, True)},
})


def _binary(case, b):
    inputs, attrs, out_q = _binary_inputs(case, b)
    if case["const_rhs"]:
        y = b.tensors[inputs[1]]
        data = (b.rng.integers(-128, 128, y.shape, dtype=np.int8) if b.int8
                else b.rng.normal(0, 1.5, y.shape).astype(np.float32))
        b.tensors[y.name] = y.replace(data=data)
    return inputs, attrs, out_q


def _binary_inputs(case, b):
    s1, s2 = case["shapes"]
    attrs = {"activation": case["activation"]} if "activation" in case else {}
    x = b.act("x", s1)
    if case["op"] in ("maximum", "minimum") and b.int8 and not case["mixed_quant"]:
        # The converter gives MAXIMUM/MINIMUM one quantization for all three tensors.
        q = b.tensors[x].quant
        return (x, b.act("y", s2, q)), attrs, q
    y = b.act("y", s2)
    if not b.int8:
        return (x, y), attrs, None
    s_x, s_y = b.tensors[x].quant.s, b.tensors[y].quant.s
    zp = int(b.rng.integers(-50, 50))
    if case["op"] == "mul":
        return (x, y), attrs, QuantParams((float(np.float32(s_x * s_y * b.rng.uniform(20, 200))),), (zp,))
    if case["op"] == "squared_difference":
        scale = max(s_x, s_y) ** 2 * b.rng.uniform(50, 600)
        return (x, y), attrs, QuantParams((float(np.float32(scale)),), (zp,))
    return (x, y), attrs, None


def _unary(case, b, out_q=None):
    """Input of case["shape"]; output quant `out_q`, or the input's unless case["requant"]."""
    x = b.act("x", case["shape"])
    if out_q is None and b.int8 and not case.get("requant", True):
        out_q = b.tensors[x].quant
    return x, out_q


def _leaky_relu(case, b):
    x, out_q = _unary(case, b)
    return (x,), {"alpha": case["alpha"]}, out_q


def _plain_unary(case, b):
    x, out_q = _unary(case, b)
    return (x,), {}, out_q


def _prelu(case, b):
    x_shape, a_shape = case["case"]
    x = b.act("x", x_shape)
    if b.int8:
        data = b.rng.integers(-128, 128, a_shape, dtype=np.int8)
        q = QuantParams((float(np.float32(10 ** b.rng.uniform(-3, -1.5))),), (int(b.rng.integers(-60, 60)),))
        b.tensors["alpha"] = b.tensors[x].replace(name="alpha", shape=tuple(a_shape), quant=q, data=data)
    else:
        data = b.rng.normal(0.2, 0.3, a_shape).astype(np.float32)
        b.tensors["alpha"] = b.tensors[x].replace(name="alpha", shape=tuple(a_shape), data=data)
    out_q = b.tensors[x].quant if b.int8 and not case["requant"] else None
    return (x, "alpha"), {}, out_q


def _fixed_out(scale, zp):
    """The output quantization TFLite fixes for the op; None: a random one."""
    def build(case, b):
        x, _ = _unary(case, b)
        return (x,), {}, QuantParams((scale,), (zp,)) if b.int8 and scale else None
    return build


def _quantize(case, b):
    """int8 -> int8 requantize, or float32 -> int8 (then the output is made int8 here)."""
    x = b.act("x", case["shape"])
    b.int8 = True   # build_graph creates the output with b.act: int8 from here on
    return (x,), {}, _act_q(b.rng)


def _dequantize(case, b):
    b.int8 = True
    x = b.act("x", case["shape"])
    b.int8 = False  # the output is float32
    return (x,), {}, None


BUILDERS.update({op: _binary for op in ("sub", "mul", "maximum", "minimum", "squared_difference")})
BUILDERS.update({
    "leaky_relu": _leaky_relu, "prelu": _prelu,
    "logistic": _fixed_out(1 / 256, -128), "tanh": _fixed_out(1 / 128, 0),
    "hard_swish": _fixed_out(None, None),
    "abs": _plain_unary,
    "log_softmax": _fixed_out(16 / 256, 127),
    "quantize": _quantize, "dequantize": _dequantize,
})
