"""Test plans of the int16 variants (16x8 quantization: int16 activations with zero point
0, int8 weights, int64 biases), dtype "int16" in op_cases.cases / build_graph.

Ops whose int8 builder fits (it asks the builder for activations, weights and biases) reuse
their int8 plan; the rest get builders here: the fixed output scales of logistic / tanh /
softmax (1/32768), the output scale of mul, and the dtype changes of quantize / dequantize.
"""

from __future__ import annotations

import numpy as np

from support.op_cases import ACTS, BUILDERS16, PLANS, PLANS16, _act_q, _act_q16
from microcompile.ir import QuantParams

_BINARY_SHAPES = (((1, 4, 4, 3), (1, 4, 4, 3)), ((1, 4, 4, 3), (3,)), ((2, 1, 5, 3), (1, 4, 1, 3)),
                  ((5,), (1, 2, 5)), ((2, 6), (2, 6)), ((1,), (2, 3, 4)), ((3, 1), (1, 7)))
_UNARY_SHAPES = ((1, 5, 5, 3), (7,), (2, 3, 9), (1, 16), (1, 2, 2, 32))
# Input scales of logistic / tanh: the power-of-two ones LiteRT special-cases (2^-12 for
# both, 2^-13 for tanh) and general ones.
_TABLE_SCALES = (2.0 ** -12, 2.0 ** -13, 2.0 ** -11, None, None, None)

PLANS16.update({op: dict(PLANS[op]) for op in ("conv2d", "depthwise_conv2d", "transpose_conv2d", "fully_connected",
                                               "add", "concatenation", "pad", "strided_slice", "reshape")})
# The byte movers LiteRT runs on int16 (DEPTH_TO_SPACE / SPACE_TO_DEPTH refuse it).
PLANS16.update({op: dict(PLANS[op]) for op in ("transpose", "squeeze", "expand_dims", "split", "split_v", "slice",
                                               "pack", "unpack", "gather")})
PLANS16.update({
    "sub": {"shapes": _BINARY_SHAPES, "activation": ACTS, "pot_scales": (False, False, True),
            "const_rhs": (False, False, True)},
    "mul": {"shapes": _BINARY_SHAPES, "activation": ACTS, "pot_scales": (False, False, True),
            "const_rhs": (False, False, True)},
    "leaky_relu": {"shape": _UNARY_SHAPES, "alpha": (0.01, 0.1, 0.2, 0.3, 0.5, 0.9, 1.7), "requant": (False, True)},
    "logistic": {"shape": _UNARY_SHAPES, "in_scale": _TABLE_SCALES},
    "tanh": {"shape": _UNARY_SHAPES, "in_scale": _TABLE_SCALES},
    "softmax": {"shape": ((1, 10), (2, 7), (1, 3, 3, 12), (1, 1), (3, 40)), "beta": (1.0, 0.5, 2.0, 1.0)},
    # int16 -> int8, int8 -> int16, int16 -> int16, float32 -> int16
    "quantize": {"shape": _UNARY_SHAPES, "mode": ("i16>i8", "i8>i16", "i16>i16", "f32>i16")},
    "dequantize": {"shape": _UNARY_SHAPES},
    # (lhs, rhs, adj_x, adj_y): attention's Q K^T and P V, batch broadcasting, both adjoints
    "batch_matmul": {"mm": (((2, 5, 8), (2, 6, 8), False, True), ((1, 3, 7, 9), (3, 9, 4), False, False),
                            ((4, 6), (4, 5), True, False), ((2, 3, 7, 5), (1, 1, 4, 7), True, True),
                            ((3, 17, 16), (3, 16, 17), False, False))},
})


def _const_data(b, shape):
    return np.clip(np.rint(b.rng.normal(0, 8000, shape)), -32768, 32767).astype(np.int16)


def _binary(case, b):
    s1, s2 = case["shapes"]
    x, y = b.act("x", s1), b.act("y", s2)
    if case["const_rhs"]:
        b.tensors[y] = b.tensors[y].replace(data=_const_data(b, b.tensors[y].shape))
    attrs = {"activation": case["activation"]}
    if case["op"] != "mul":
        return (x, y), attrs, None
    # Products of two ~8000-step values, over +-32767 output steps.
    scale = b.tensors[x].quant.s * b.tensors[y].quant.s * b.rng.uniform(500, 4000)
    return (x, y), attrs, QuantParams((float(np.float32(scale)),), (0,))


def _leaky_relu(case, b):
    x = b.act("x", case["shape"])
    return (x,), {"alpha": case["alpha"]}, (None if case["requant"] else b.tensors[x].quant)


def _table_op(case, b):
    s = case["in_scale"]
    q = QuantParams((float(np.float32(s)),), (0,)) if s else _act_q16(b.rng)
    return (b.act("x", case["shape"], q),), {}, QuantParams((1 / 32768,), (0,))


def _softmax(case, b):
    return (b.act("x", case["shape"]),), {"beta": case["beta"]}, QuantParams((1 / 32768,), (0,))


def _quantize(case, b):
    src, dst = case["mode"].split(">")
    b.int8, b.int16 = src != "f32", src == "i16"
    x = b.act("x", case["shape"])
    b.int8, b.int16 = True, dst == "i16"   # the output, made by build_graph with b.act
    return (x,), {}, (_act_q16(b.rng) if dst == "i16" else _act_q(b.rng))


def _dequantize(case, b):
    x = b.act("x", case["shape"])
    b.int8 = b.int16 = False               # a float32 output
    return (x,), {}, None


def _batch_matmul(case, b):
    lhs, rhs, adj_x, adj_y = case["mm"]
    x, y = b.act("x", lhs), b.act("y", rhs)
    depth = lhs[-2] if adj_x else lhs[-1]
    # sums of depth products of two ~8000-step values, over +-32767 output steps
    scale = b.tensors[x].quant.s * b.tensors[y].quant.s * b.rng.uniform(4000, 16000) * np.sqrt(depth)
    return (x, y), {"adj_x": adj_x, "adj_y": adj_y}, QuantParams((float(np.float32(scale)),), (0,))


BUILDERS16.update({"batch_matmul": _batch_matmul, "sub": _binary, "mul": _binary, "leaky_relu": _leaky_relu, "logistic": _table_op,
                   "tanh": _table_op, "softmax": _softmax, "quantize": _quantize, "dequantize": _dequantize})
