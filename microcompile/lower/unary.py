"""leaky_relu, logistic, tanh, hard_swish, abs, sqrt, rsqrt, erf, gelu, quantize and dequantize:
one loop over the elements.

int8 inputs: the output is a pure function of the input byte, so the kernel is a lookup in
a 256-entry table that reference.elementwise.int8_table computes on the host with LiteRT's
exact arithmetic (tested over all 256 inputs against LiteRT): y[i] = table[x[i] + 128].
That is one load per element in flash, faster than any of the fixed-point formulas.

float32 inputs compute the formula as TFLite's reference kernels do; float32 -> int8
quantize is round-half-away(x / scale) + zero_point, clamped (roundf, then the clamp in
float so that the int conversion never overflows).
"""

from __future__ import annotations

import numpy as np

from ..reference import elementwise as qe
from ..ir.graph import Graph, Node
from ..tir.nodes import BinOp, Call, Cast, Expr, FloatImm, Load, Select, Var, add, binop, loops
from .common import arena, clamp, constant, i32, lowering, make_func


def _logistic(node, x: Expr) -> Expr:
    e = Call("expf", (binop("sub", 0.0, x),), "float32")
    return binop("div", 1.0, binop("add", 1.0, e))


def _hard_swish(node, x: Expr) -> Expr:
    relu6 = BinOp("min", BinOp("max", binop("add", x, 3.0), FloatImm(0.0)), FloatImm(6.0))
    return binop("div", binop("mul", x, relu6), 6.0)


def _gelu(node, x: Expr) -> Expr:
    """x/2 (1 + erf(x / sqrt 2)), or PyTorch's tanh form when `approximate`."""
    if node.attr("approximate", False):
        cube = binop("mul", binop("mul", x, x), x)
        inner = binop("mul", float(np.float32(np.sqrt(2 / np.pi))), binop("add", x, binop("mul", 0.044715, cube)))
        return binop("mul", binop("mul", 0.5, x), binop("add", 1.0, Call("tanhf", (inner,), "float32")))
    erf = Call("erff", (binop("mul", x, float(np.float32(np.sqrt(0.5)))),), "float32")
    return binop("mul", binop("mul", 0.5, x), binop("add", 1.0, erf))


_FLOAT = {
    "leaky_relu": lambda node, x: Select(binop("gt", x, 0.0), x,
                                         binop("mul", x, float(np.float32(node.attr("alpha", 0.2))))),
    "logistic": _logistic,
    "tanh": lambda node, x: Call("tanhf", (x,), "float32"),
    "hard_swish": _hard_swish,
    "abs": lambda node, x: Select(binop("lt", x, 0.0), binop("sub", 0.0, x), x),
    "sqrt": lambda node, x: Call("sqrtf", (x,), "float32"),
    "rsqrt": lambda node, x: binop("div", 1.0, Call("sqrtf", (x,), "float32")),
    "erf": lambda node, x: Call("erff", (x,), "float32"),
    "gelu": _gelu,
}


def _quantize_float(g: Graph, node: Node, x: Expr) -> Expr:
    p = qe.quantize_params(g, node)
    r = Call("rintf" if p.half_even else "roundf", (binop("div", x, p.scale),), "float32")
    r = clamp(r, -128.0 - p.zero_point, 127.0 - p.zero_point)
    return Cast("int8", add(Cast("int32", r), p.zero_point))


@lowering("leaky_relu", "logistic", "tanh", "hard_swish", "abs", "sqrt", "rsqrt", "erf", "gelu", "quantize",
          "dequantize")
def lower_unary(g: Graph, node: Node, target=None):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    x = arena(g, xt.name, "x", shape=(xt.size,))
    y = arena(g, yt.name, "y", shape=(yt.size,))
    i = Var("i")
    buffers = [x, y]
    if qe.uses_table(g, node):
        table = constant("table", qe.int8_table(g, node), f"{node.op} of each int8 input + 128")
        result = Load(table, add(i32(x.load(i)), 128))
        buffers.insert(1, table)
    elif node.op == "quantize":
        result = _quantize_float(g, node, x.load(i))
    else:
        result = _FLOAT[node.op](node, x.load(i))
    return make_func(g, node, buffers, loops([(i, yt.size)], y.store(result, i)))
