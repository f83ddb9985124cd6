"""batch_matmul (float32 and int8): attention's Q K^T and P V, two runtime operands.

One loop per output batch dimension, then rows m and columns n, the sum over k inside; a
size-1 batch dimension of an operand is broadcast by holding its index at 0. adj_x / adj_y
read the operand's last two dimensions swapped (no transposed copy). int8: an int32 sum of
the offset operands, requantized once per output (reference.qparams.BatchMatMulParams).
"""

from __future__ import annotations

from ..ir.graph import Graph, Node
from ..reference import qparams
from ..tir.nodes import Allocate, Buffer, Expr, FloatImm, IntImm, Var, add, loops, mul, seq
from .common import clamp, i32, i8, lowering, make_func, operand, requantize


def _flat(shape: tuple[int, ...], out_batch: tuple[int, ...], batch_idx: list[Var], row: Expr, col: Expr) -> Expr:
    """Flat index of x[..., row, col] for x of `shape`, its batch dims right-aligned to the output's."""
    lead = len(out_batch) - (len(shape) - 2)
    flat: Expr = add(mul(row, shape[-1]), col)
    stride = shape[-2] * shape[-1]
    for k in reversed(range(len(shape) - 2)):
        if shape[k] != 1:
            flat = add(mul(batch_idx[lead + k], stride), flat)
        stride *= shape[k]
    return flat


@lowering("batch_matmul")
def lower_batch_matmul(g: Graph, node: Node, target=None):
    at, bt, yt = (g.tensors[n] for n in (*node.inputs[:2], node.outputs[0]))
    a_flat = operand(g, at.name, "a", shape=(at.size,))
    b_flat = operand(g, bt.name, "b", shape=(bt.size,))
    y = operand(g, yt.name, "y")
    *out_batch, rows, cols = yt.shape
    depth = at.shape[-2] if node.attrs.get("adj_x") else at.shape[-1]
    batch_idx = [Var(f"b{k}") for k in range(len(out_batch))]
    m, n, k = Var("m"), Var("n"), Var("k")
    a_rc = (k, m) if node.attrs.get("adj_x") else (m, k)
    b_rc = (n, k) if node.attrs.get("adj_y") else (k, n)
    av = a_flat.load(_flat(tuple(at.shape), tuple(out_batch), batch_idx, *a_rc))
    bv = b_flat.load(_flat(tuple(bt.shape), tuple(out_batch), batch_idx, *b_rc))
    p = qparams.batch_matmul_params(g, node)
    if p is None:
        acc, init, term = Buffer("acc", "float32", (), "local"), FloatImm(0.0), mul(av, bv)
        result = acc.load()
    else:
        acc, init = Buffer("acc", "int32", (), "local"), IntImm(0)
        term = mul(add(i32(av), p.lhs_offset), add(i32(bv), p.rhs_offset))
        scaled = requantize(acc.load(), p.output_multiplier, p.output_shift, p.rounding)
        result = i8(clamp(add(scaled, p.output_offset), p.act_min, p.act_max))
    body = Allocate(acc, seq(acc.store(init), loops([(k, depth)], acc.store(add(acc.load(), term))),
                             y.store(result, *batch_idx, m, n)))
    nest = loops([*zip(batch_idx, out_batch), (m, rows), (n, cols)], body)
    return make_func(g, node, [a_flat, b_flat, y], nest)
