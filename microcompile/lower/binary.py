"""sub, mul, maximum, minimum, squared_difference, prelu and where, with NumPy broadcasting.

One loop per output dimension; an input dimension of size 1 drops out of that input's
index (stride 0). int8 arithmetic is reference.elementwise's (the interpreter's):

  sub                 ADD's rescaling (left shift 20) with a difference instead of a sum
  mul                 MBQM((a - zp_a) * (b - zp_b)) + zp_out
  maximum, minimum    raw int8 comparison
  squared_difference  rescale (left shift 7), square the int32 difference, rescale
  prelu               x >= zp: MBQM(x - zp, M1); else MBQM((x - zp) * (alpha - zp_a), M2)
"""

from __future__ import annotations

from ..reference import elementwise as qe
from ..reference import plain
from ..ir.graph import Graph, Node
from ..tir.nodes import BinOp, Expr, IntImm, Load, Select, Var, add, binop, cast, loops, mul
from .common import (Requant, arena, broadcast_index, clamp, i32, i8, lowering, make_func, operand, requantize,
                     smaller_than_one)
from .saturate import to_int8


def _rescaled(v: Expr, offset: int, left_shift: int, mult: int, shift: int) -> Expr:
    return smaller_than_one(mul(add(i32(v), offset), 1 << left_shift), mult, shift)


def _int8_result(op: str, g: Graph, node: Node, a: Expr, b: Expr, target=None) -> Expr:
    if op in ("maximum", "minimum"):
        return i8(BinOp(op[:3], i32(a), i32(b)))
    if op == "mul":
        p = qe.mul_params(g, node)
        prod = mul(add(i32(a), p.input1_offset), add(i32(b), p.input2_offset))
        # mc_requant.h's cheaper exact forms where they apply: |prod| <= 255^2 < 2^30
        scaled = Requant(node, p, 255 * 255)(prod, IntImm(0))
        return to_int8(add(scaled, p.output_offset), p.act_min, p.act_max, target)
    p = qe.sub_params(g, node) if op == "sub" else qe.squared_difference_params(g, node)
    x1 = _rescaled(a, p.input1_offset, p.left_shift, p.input1_multiplier, p.input1_shift)
    x2 = _rescaled(b, p.input2_offset, p.left_shift, p.input2_multiplier, p.input2_shift)
    diff = binop("sub", x1, x2)
    if op == "squared_difference":
        diff = binop("mul", diff, diff)   # |diff| < 2^15: the square fits in int32
    raw = add(smaller_than_one(diff, p.output_multiplier, p.output_shift), p.output_offset)
    return i8(clamp(raw, p.act_min, p.act_max))


def int32_result(op: str, node: Node, a: Expr, b: Expr) -> Expr:
    """Plain int32 arithmetic (reference/plain.py): add, sub and mul in uint32 (wrapping, which
    C defines for unsigned only), div truncating with TFLite's and the Cortex-M's edge cases
    spelled out (x / 0 = 0, INT32_MIN / -1 = INT32_MIN), then the fused clamp."""
    if op in ("maximum", "minimum"):
        return BinOp(op[:3], a, b)
    if op == "div":
        quotient = Select(BinOp("eq", b, IntImm(-1)), cast("int32", binop("sub", IntImm(0, "uint32"), u32(a))),
                          binop("div", a, b))
        result = Select(BinOp("eq", b, IntImm(0)), IntImm(0), quotient)
    else:
        result = cast("int32", binop(op, u32(a), u32(b)))
    lo, hi = plain.ACTIVATION_RANGE[node.attrs.get("activation", "NONE")]
    return result if (lo, hi) == plain.ACTIVATION_RANGE["NONE"] else clamp(result, lo, hi)


def u32(e: Expr) -> Expr:
    return cast("uint32", e)


def _float_result(op: str, g: Graph, node: Node, a: Expr, b: Expr) -> Expr:
    if op in ("maximum", "minimum"):
        return BinOp(op[:3], a, b)
    if op == "squared_difference":
        d = binop("sub", a, b)
        return binop("mul", d, d)
    p = qe.mul_params(g, node) if op in ("mul", "div") else qe.sub_params(g, node)
    return clamp(binop(op, a, b), p.act_min, p.act_max)


@lowering("sub", "mul", "div", "maximum", "minimum", "squared_difference")
def lower_binary(g: Graph, node: Node, target=None):
    at, bt, yt = (g.tensors[t] for t in (*node.inputs, node.outputs[0]))
    a, b, y = operand(g, at.name, "a"), operand(g, bt.name, "b"), arena(g, yt.name, "y")
    idx = [Var(f"i{k}") for k in range(len(yt.shape))]
    av, bv = Load(a, broadcast_index(a, yt.shape, idx)), Load(b, broadcast_index(b, yt.shape, idx))
    if yt.dtype == "int32":
        result = int32_result(node.op, node, av, bv)
    elif yt.dtype == "float32":
        result = _float_result(node.op, g, node, av, bv)
    else:
        result = _int8_result(node.op, g, node, av, bv, target)
    return make_func(g, node, [a, b, y], loops(list(zip(idx, yt.shape)), y.store(result, *idx)))


@lowering("where")
def lower_where(g: Graph, node: Node, target=None):
    """x where the condition is not 0, else y: one Select per output element (float32, int32)."""
    ct, xt, yt, ot = (g.tensors[t] for t in (*node.inputs, node.outputs[0]))
    c, x, y = operand(g, ct.name, "c"), operand(g, xt.name, "x"), operand(g, yt.name, "y")
    out = arena(g, ot.name, "out")
    idx = [Var(f"i{k}") for k in range(len(ot.shape))]
    pick = Select(binop("ne", Load(c, broadcast_index(c, ot.shape, idx)), IntImm(0)),
                  Load(x, broadcast_index(x, ot.shape, idx)), Load(y, broadcast_index(y, ot.shape, idx)))
    return make_func(g, node, [c, x, y, out], loops(list(zip(idx, ot.shape)), out.store(pick, *idx)))


@lowering("prelu")
def lower_prelu(g: Graph, node: Node, target=None):
    xt, at, yt = (g.tensors[t] for t in (*node.inputs, node.outputs[0]))
    x, y = operand(g, xt.name, "x"), arena(g, yt.name, "y")
    alpha = operand(g, at.name, "alpha")   # a constant in every converted model
    idx = [Var(f"i{k}") for k in range(len(yt.shape))]
    xv, av = x.load(*idx), Load(alpha, broadcast_index(alpha, yt.shape, idx))
    if yt.dtype == "float32":
        result = Select(binop("ge", xv, 0.0), xv, binop("mul", xv, av))
    else:
        p = qe.prelu_params(g, node)
        v = add(i32(xv), p.input_offset)
        pos = requantize(v, p.identity_multiplier, p.identity_shift, p.rounding)
        neg = requantize(mul(v, add(i32(av), p.alpha_offset)), p.alpha_multiplier, p.alpha_shift, p.rounding)
        result = i8(clamp(add(Select(binop("ge", v, 0), pos, neg), p.output_offset), -128, 127))
    return make_func(g, node, [x, alpha, y], loops(list(zip(idx, yt.shape)), y.store(result, *idx)))
