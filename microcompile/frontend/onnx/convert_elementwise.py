"""Add, Sub, Mul, Div, activations (Relu, LeakyRelu, PRelu, Clip, Sigmoid, Tanh,
HardSigmoid, HardSwish), Abs, Pow (constant exponents 1, 2, 3, 0.5, -0.5), Where, Softmax,
LogSoftmax, Identity, Dropout.

Broadcasting is NumPy's, as the IR's binary ops; an operand of lower rank is reshaped to
the output's rank first (leading 1s), which keeps every kernel's index arithmetic simple.
Clip becomes relu / relu6 / relu_n1_to_1 when its bounds match one, else maximum/minimum
with constants. Softmax below opset 13 flattens to 2-D at `axis`; from 13 it normalizes
one axis, moved last with a transpose when it is not already last.
"""

from __future__ import annotations

import numpy as np

from ...ir.budget import elements
from .registry import converter


def _full_rank(ctx, name: str, rank: int) -> str:
    shape = ctx.tensors[name].shape
    if len(shape) == rank:
        return name
    new = (1,) * (rank - len(shape)) + tuple(shape)
    t = ctx.tensors[name]
    if t.is_const:
        return ctx.add_const(t.data.reshape(new), name, dtype=t.dtype, quant=t.quant)
    return ctx.reshape(name, new)


def binary(ctx, node, op: str, a: str, b: str, out: str | None = None) -> str:
    rank = max(len(ctx.tensors[a].shape), len(ctx.tensors[b].shape))
    a, b = _full_rank(ctx, a, rank), _full_rank(ctx, b, rank)
    return ctx.emit1(op, [a, b], out=out)


def _float_operand(ctx, node, i: int) -> str:
    if ctx.dtype(node.input[i]) != "float32" and ctx.const(node.input[i]) is None:
        ctx.unsupported(node, f"{ctx.dtype(node.input[i])} operands (only float32 arithmetic is supported)")
    c = ctx.const(node.input[i])
    if c is not None:
        return ctx.add_const(np.asarray(c, np.float32), node.input[i])
    return ctx.ir(node.input[i])


def _binary_converter(onnx_op: str, our_op: str):
    @converter(onnx_op)
    def convert(ctx, node):
        a, b = _float_operand(ctx, node, 0), _float_operand(ctx, node, 1)
        binary(ctx, node, our_op, a, b, out=node.output[0])
    return convert


for _onnx, _ours in (("Add", "add"), ("Sub", "sub"), ("Mul", "mul")):
    _binary_converter(_onnx, _ours)


def _variadic_converter(onnx_op: str, our_op: str):
    """Max/Min take 1..N inputs: a left fold of the binary op (exact: max/min associate)."""
    @converter(onnx_op)
    def convert(ctx, node):
        operands = [_float_operand(ctx, node, i) for i in range(len(node.input))]
        if len(operands) == 1:
            ctx.reshape(operands[0], ctx.tensors[operands[0]].shape, out=node.output[0])
            return
        acc = operands[0]
        for k, b in enumerate(operands[1:], start=2):
            acc = binary(ctx, node, our_op, acc, b, out=node.output[0] if k == len(operands) else None)
    return convert


_variadic_converter("Max", "maximum")
_variadic_converter("Min", "minimum")


@converter("Div")
def _div(ctx, node):
    a = _float_operand(ctx, node, 0)
    c = ctx.const(node.input[1])
    if c is not None:   # division by a constant: multiply by its float32 reciprocal
        recip = (np.float32(1) / np.asarray(c, np.float32)).astype(np.float32)
        binary(ctx, node, "mul", a, ctx.add_const(recip, node.input[1] + "_recip"), out=node.output[0])
        return
    binary(ctx, node, "div", a, _float_operand(ctx, node, 1), out=node.output[0])


# Pow with a constant scalar exponent, as exporters write squares and roots (the decomposed
# LayerNormalization of opsets before 17: ReduceMean, Sub, Pow(d, 2), ReduceMean, Add, Sqrt,
# Div): the exponents below become the ops that compute them (x*x is what pow(x, 2) rounds to;
# x*x*x differs from pow(x, 3) by at most a rounding). Any other exponent is refused by name.
_POW = {1.0: (), 2.0: ("square",), 3.0: ("cube",), 0.5: ("sqrt",), -0.5: ("rsqrt",)}


@converter("Pow")
def _pow(ctx, node):
    x = _float_operand(ctx, node, 0)
    e = ctx.const(node.input[1])
    if e is None or np.asarray(e).size != 1:
        ctx.unsupported(node, "an exponent that is not a constant scalar")
    e = float(np.asarray(e).reshape(()))
    if e not in _POW:
        ctx.unsupported(node, f"exponent {e:g} (supported: {', '.join(f'{k:g}' for k in _POW)})")
    out = node.output[0]
    steps = _POW[e]
    if not steps:
        ctx.reshape(x, ctx.tensors[x].shape, out=out)
    elif steps[0] in ("sqrt", "rsqrt"):
        ctx.emit1(steps[0], [x], out=out)
    else:
        sq = ctx.emit1("mul", [x, x], out=out if steps[0] == "square" else None)
        if steps[0] == "cube":
            ctx.emit1("mul", [sq, x], out=out)


@converter("Where")
def _where(ctx, node):
    """X where the condition holds, else Y (masking: a constant mask picks the scores or a
    masked value). The condition becomes int32 0/1; X and Y float32 (or int32)."""
    c = ctx.const(node.input[0])
    if c is not None:
        cond = ctx.add_const(np.asarray(c).astype(bool).astype(np.int32), node.input[0] + "_mask")
    elif ctx.dtype(node.input[0]) == "int32":
        cond = ctx.ir(node.input[0])
    else:
        ctx.unsupported(node, f"a {ctx.dtype(node.input[0])} condition")
    x, y = _float_operand(ctx, node, 1), _float_operand(ctx, node, 2)
    rank = max(len(ctx.tensors[t].shape) for t in (cond, x, y))
    ctx.emit1("where", [_full_rank(ctx, t, rank) for t in (cond, x, y)], out=node.output[0])


def _unary(onnx_op: str, our_op: str, attrs=lambda ctx, node: {}):
    @converter(onnx_op)
    def convert(ctx, node):
        ctx.emit1(our_op, [ctx.ir(node.input[0])], attrs(ctx, node), out=node.output[0])
    return convert


_unary("Relu", "relu")
_unary("Sigmoid", "logistic")
_unary("Tanh", "tanh")
_unary("HardSwish", "hard_swish")
_unary("Abs", "abs")
_unary("Sqrt", "sqrt")
_unary("Erf", "erf")
_unary("Gelu", "gelu", lambda ctx, node: {"approximate": ctx.attr(node, "approximate", "none") == "tanh"})


@converter("LayerNormalization")
def _layer_norm(ctx, node):
    """(x - mean) / sqrt(var + eps) * scale + bias over the axes from `axis` on, as the ops
    of ONNX's own function body (float32; var is the biased variance)."""
    x = _float_operand(ctx, node, 0)
    if len(node.output) > 1 and any(node.output[1:]):
        ctx.unsupported(node, "the Mean and InvStdDev outputs (training only)")
    rank = len(ctx.tensors[x].shape)
    axes = tuple(range(int(ctx.attr(node, "axis", -1)) % rank, rank))
    eps = np.float32(ctx.attr(node, "epsilon", 1e-5))
    mean = ctx.emit1("mean", [x], {"axes": axes, "keep_dims": True})
    d = ctx.emit1("sub", [x, mean])
    var = ctx.emit1("mean", [ctx.emit1("mul", [d, d])], {"axes": axes, "keep_dims": True})
    std = ctx.emit1("sqrt", [ctx.emit1("add", [var, ctx.add_const(np.full((1,) * rank, eps, np.float32),
                                                                     "ln_epsilon")])])
    y = ctx.emit1("div", [d, std])
    scale = ctx.const(node.input[1]) if len(node.input) > 1 else None
    bias = ctx.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if len(node.input) > 1 and scale is None or len(node.input) > 2 and node.input[2] and bias is None:
        ctx.unsupported(node, "runtime scale or bias (they must be constants)")
    y = binary(ctx, node, "mul", y, ctx.add_const(np.asarray(scale, np.float32), "ln_scale"),
               out=node.output[0] if bias is None else None)
    if bias is not None:
        binary(ctx, node, "add", y, ctx.add_const(np.asarray(bias, np.float32), "ln_bias"), out=node.output[0])
_unary("LeakyRelu", "leaky_relu", lambda ctx, node: {"alpha": float(np.float32(ctx.attr(node, "alpha", 0.01)))})


@converter("PRelu")
def _prelu(ctx, node):
    x = ctx.ir(node.input[0])
    slope = ctx.const(node.input[1])
    if slope is None:
        ctx.unsupported(node, "the slope must be a constant")
    shape = tuple(ctx.tensors[x].shape)
    slope = np.asarray(slope, np.float32)
    try:   # opset >= 7: unidirectional (NumPy) broadcasting of the slope to the input
        np.broadcast_shapes(slope.shape, shape)
    except ValueError:
        ctx.unsupported(node, f"slope of shape {list(slope.shape)} does not broadcast to the input {list(shape)} "
                              "(the pre-opset-7 per-channel PRelu semantics are not supported)")
    slope = slope.reshape((1,) * (len(shape) - slope.ndim) + slope.shape)
    ctx.emit1("prelu", [x, ctx.add_const(slope, node.input[1])], out=node.output[0])


def clamp(ctx, x: str, lo: float, hi: float, out: str | None = None) -> str:
    """min(max(x, lo), hi) as the cheapest IR op that computes it exactly."""
    named = {(0.0, np.inf): "relu", (0.0, 6.0): "relu6", (-1.0, 1.0): "relu_n1_to_1"}.get((lo, hi))
    if named:
        return ctx.emit1(named, [x], out=out)
    rank = len(ctx.tensors[x].shape)
    if lo == -np.inf and hi == np.inf:
        return ctx.reshape(x, ctx.tensors[x].shape, out=out)
    if lo > -np.inf:
        x = ctx.emit1("maximum", [x, ctx.add_const(np.full((1,) * rank, lo, np.float32), "clip_min")],
                      out=out if hi == np.inf else None)
    if hi < np.inf:
        x = ctx.emit1("minimum", [x, ctx.add_const(np.full((1,) * rank, hi, np.float32), "clip_max")], out=out)
    return x


@converter("Clip")
def _clip(ctx, node):
    x = ctx.ir(node.input[0])
    if ctx.opset < 11:   # attribute form (opset 6..10; readable for completeness)
        lo, hi = ctx.attr(node, "min", -np.inf), ctx.attr(node, "max", np.inf)
    else:
        bounds = []
        for i, default in ((1, -np.inf), (2, np.inf)):
            if len(node.input) > i and node.input[i]:
                v = ctx.const(node.input[i])
                if v is None:
                    ctx.unsupported(node, "runtime min/max inputs (they must be constants)")
                bounds.append(float(np.float32(v)))
            else:
                bounds.append(default)
        lo, hi = bounds
    clamp(ctx, x, float(lo), float(hi), out=node.output[0])


@converter("HardSigmoid")
def _hard_sigmoid(ctx, node):
    x = ctx.ir(node.input[0])
    rank = len(ctx.tensors[x].shape)
    alpha, beta = np.float32(ctx.attr(node, "alpha", 0.2)), np.float32(ctx.attr(node, "beta", 0.5))
    y = ctx.emit1("mul", [x, ctx.add_const(np.full((1,) * rank, alpha, np.float32), "hs_alpha")])
    y = ctx.emit1("add", [y, ctx.add_const(np.full((1,) * rank, beta, np.float32), "hs_beta")])
    clamp(ctx, y, 0.0, 1.0, out=node.output[0])


def _softmax_like(our_op: str):
    def convert(ctx, node):
        x = ctx.ir(node.input[0])
        shape = ctx.tensors[x].shape
        rank = len(shape)
        attrs = {"beta": 1.0} if our_op == "softmax" else {}
        if ctx.opset < 13:   # coerce to 2-D at axis, normalize each row
            axis = int(ctx.attr(node, "axis", 1)) % rank
            rows = elements(shape[:axis])
            flat = ctx.reshape(x, (rows, elements(shape[axis:]))) if axis != rank - 1 else x
            y = ctx.emit1(our_op, [flat], attrs)
            if flat != x:
                ctx.reshape(y, shape, out=node.output[0])
            else:
                ctx.bind(node.output[0], y)
            return
        axis = int(ctx.attr(node, "axis", -1)) % rank
        if axis == rank - 1:
            ctx.emit1(our_op, [x], attrs, out=node.output[0])
            return
        perm = [d for d in range(rank) if d != axis] + [axis]
        y = ctx.emit1(our_op, [ctx.transpose(x, perm)], attrs)
        ctx.emit1("transpose", [y], {"perm": tuple(int(p) for p in np.argsort(perm))}, out=node.output[0])
    return convert


converter("Softmax")(_softmax_like("softmax"))
converter("LogSoftmax")(_softmax_like("log_softmax"))


def _passthrough(ctx, node):
    x = node.input[0]
    if ctx.const(x) is not None and x not in ctx.values:
        ctx.set_const(node.output[0], ctx.const(x))
    else:
        ctx.bind(node.output[0], ctx.ir(x))


converter("Identity")(_passthrough)


@converter("Dropout")
def _dropout(ctx, node):
    # Inference: the identity. A requested mask output would be all ones (a constant).
    _passthrough(ctx, node)
    if len(node.output) > 1 and node.output[1]:
        ctx.set_const(node.output[1], np.ones(ctx.shape(node.input[0]), np.bool_))
