"""add, with NumPy broadcasting: one loop per output dimension; a broadcast input dimension
gets stride 0 (it drops out of the index).

int8 (reference_integer_ops::Add): both inputs are rescaled to a common scale with
20 bits of headroom, summed, and rescaled to the output, all with the
smaller-than-one-exp multiplier of qparams.add_params.
"""

from __future__ import annotations

from ..ir import qparams
from ..ir.graph import Graph, Node
from ..ir.tir import Buffer, Call, Expr, IntImm, Load, Var, add, binop, loops, mul
from .common import arena, clamp, i8, i32, make_func


def _broadcast_index(buf: Buffer, out_shape: tuple[int, ...], idx: list[Var]) -> Expr:
    """Flat index into `buf` (right-aligned to out_shape) with size-1 dims held at 0."""
    shape = buf.shape
    lead = len(out_shape) - len(shape)
    flat: Expr = IntImm(0)
    stride = 1
    for k in reversed(range(len(shape))):
        if shape[k] != 1:
            flat = add(mul(idx[lead + k], stride), flat)
        stride *= shape[k]
    return flat


def _smaller_than_one(x: Expr, mult: int, shift: int) -> Expr:
    return Call("mc_mul_by_qm_smaller_than_one_exp", (x, IntImm(mult), IntImm(shift)), "int32")


def lower_add(g: Graph, node: Node, target=None):
    at, bt, yt = (g.tensors[t] for t in (*node.inputs, node.outputs[0]))
    a, b, y = arena(g, at.name, "a"), arena(g, bt.name, "b"), arena(g, yt.name, "y")
    idx = [Var(f"i{k}") for k in range(len(yt.shape))]
    av = Load(a, _broadcast_index(a, yt.shape, idx))
    bv = Load(b, _broadcast_index(b, yt.shape, idx))
    p = qparams.add_params(g, node)
    if yt.dtype == "float32":
        result = clamp(binop("add", av, bv), p.act_min, p.act_max)
    else:
        x1 = _smaller_than_one(mul(add(i32(av), p.input1_offset), 1 << p.left_shift),
                               p.input1_multiplier, p.input1_shift)
        x2 = _smaller_than_one(mul(add(i32(bv), p.input2_offset), 1 << p.left_shift),
                               p.input2_multiplier, p.input2_shift)
        raw = add(_smaller_than_one(binop("add", x1, x2), p.output_multiplier, p.output_shift),
                  p.output_offset)
        result = i8(clamp(raw, p.act_min, p.act_max))
    body = loops(list(zip(idx, yt.shape)), y.store(result, *idx))
    return make_func(g, node, [a, b, y], body)
