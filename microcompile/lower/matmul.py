"""batch_matmul (float32 and int8): attention's Q K^T and P V, two runtime operands.

float32: one loop per output batch dimension, then rows m and columns n, the sum over k
inside; a size-1 batch dimension of an operand is broadcast by holding its index at 0. adj_x /
adj_y read the operand's last two dimensions swapped (no transposed copy).

int8 (and int16, mc_matmul_s16: 16x8, an int64 sum): one call of the micro-kernel mc_matmul_s8 (runtime_c/include/mc_matmul.h) per output
batch element, the operands' layouts (adj_x, adj_y) given as strides: it copies the right
operand, offset added, into int16 scratch once and multiplies with SMLAD on DSP cores; an int32
sum of the offset operands, requantized once per output (reference.qparams.BatchMatMulParams).
"""

from __future__ import annotations

from ..ir.graph import Graph, Node
from ..reference import qparams
from ..tir.intrinsics_matmul import MATMUL_PARAMS, ROUNDING_CODES, scratch_elements
from ..tir.nodes import Address, Allocate, Buffer, Call, Evaluate, Expr, FloatImm, IntImm, Var, add, loops, mul, seq
from .common import lowering, make_func, operand


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
    p = qparams.batch_matmul_params(g, node)
    if p is not None:
        return _quantized_kernel(g, node, p)
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
    acc, init, term = Buffer("acc", "float32", (), "local"), FloatImm(0.0), mul(av, bv)
    result = acc.load()
    body = Allocate(acc, seq(acc.store(init), loops([(k, depth)], acc.store(add(acc.load(), term))),
                             y.store(result, *batch_idx, m, n)))
    nest = loops([*zip(batch_idx, out_batch), (m, rows), (n, cols)], body)
    return make_func(g, node, [a_flat, b_flat, y], nest)


def _quantized_kernel(g: Graph, node: Node, p: qparams.BatchMatMulParams):
    at, bt, yt = (g.tensors[n] for n in (*node.inputs[:2], node.outputs[0]))
    a, b = operand(g, at.name, "a", shape=(at.size,)), operand(g, bt.name, "b", shape=(bt.size,))
    y = operand(g, yt.name, "y", shape=(yt.size,))
    *out_batch, rows, cols = yt.shape
    adj_x, adj_y = node.attrs.get("adj_x"), node.attrs.get("adj_y")
    depth = at.shape[-2] if adj_x else at.shape[-1]
    wide = at.dtype == "int16"
    scratch = Buffer("b_t", "int16", (scratch_elements(cols, depth),), "scratch",
                     comment=f"{bt.name} + its offset, transposed: [{cols}][{depth} rounded up to 4]")
    params = MATMUL_PARAMS(rows=rows, cols=cols, depth=depth,
                           a_row_stride=1 if adj_x else depth, a_col_stride=rows if adj_x else 1,
                           b_row_stride=1 if adj_y else cols, b_col_stride=depth if adj_y else 1,
                           lhs_offset=p.lhs_offset, rhs_offset=p.rhs_offset, output_offset=p.output_offset,
                           output_multiplier=p.output_multiplier, output_shift=p.output_shift,
                           act_min=p.act_min, act_max=p.act_max, rounding=ROUNDING_CODES[p.rounding])
    batch_idx = [Var(f"b{k}") for k in range(len(out_batch))]
    zero = IntImm(0)
    pointers = tuple(Address(buf, _flat(tuple(t.shape), tuple(out_batch), batch_idx, zero, zero))
                     for buf, t in ((y, yt), (a, at), (b, bt)))
    # int16 (16x8): an int64 sum in plain loops, no scratch
    call = Call("mc_matmul_s16", (*pointers, params), "void") if wide else \
        Call("mc_matmul_s8", (*pointers, Address(scratch, zero), params), "void")
    body = loops(list(zip(batch_idx, out_batch)), Evaluate(call))
    return make_func(g, node, [a, b, y] if wide else [a, b, y, scratch], body)


# The 16x8 variant (ops.variant "int16") is the same call: mc_matmul_s16.
lowering("batch_matmul", dtype="int16")(lower_batch_matmul)
