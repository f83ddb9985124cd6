"""layer_norm and attention (ir/ops_fused.py): every op of the body, one row at a time.

Each op of the body is lowered as its own kernel would be, on the shapes of one row (the
leading `rows` dims of 1); tir/compose.py runs those parts in sequence inside one loop nest
over the rows: the node's inputs and output are read and written at the row's offset in the
arena (a row is contiguous: the dims after the leading ones are whole), and each tensor between
two ops of the body is one row of scratch. The schedule stage schedules each part as that op's
kernel (keeping its micro-kernels and tables) and composes again (schedule/default.py).

Attention's int8 matmuls read their right operand (K, V) whole per head: its int16 copy
(mc_matmul_s8_pack_b) is made once per head, before the rows, and every row multiplies with
that copy (mc_matmul_s8_packed), as the unfused kernel does once per head.
"""

from __future__ import annotations

import math

from ..ir.graph import Graph, Node
from ..ir.ops_fused import RowGroup
from ..tir.compose import RowNest, RowParts, compose_rows
from ..tir.nodes import Buffer, Expr, IntImm, Var, add, mul
from .common import arena, constant, describe, lowering, lowering_of, make_func


def _offset(body: RowGroup, tensor: str, r: list[Var]) -> Expr:
    """Flat index of the first element of row `r` of `tensor` (a size-1 dim is broadcast)."""
    shape = tuple(body.graph.tensors[tensor].shape)
    flat: Expr = IntImm(0)
    for d in range(body.depth(tensor)):
        if shape[d] != 1:
            flat = add(flat, mul(r[d], math.prod(shape[d + 1:])))
    return flat


@lowering("layer_norm", "attention")
def lower_row_group(g: Graph, node: Node, target=None):
    body: RowGroup = node.attrs["body"]
    bg = body.graph
    per_row = body.row_constants()
    # a constant with a row each is, on one row's shapes, an input the parts read at the row
    rg = bg.replace(tensors={name: t if t.is_const and name not in per_row
                             else t.replace(shape=body.row_shape(name), data=None)
                             for name, t in bg.tensors.items()})
    r = [Var(f"row{d}") for d in range(body.rows)]
    ends = (*bg.inputs, *bg.outputs)
    boundary = {t: (arena(g, t, f"t{i}", shape=(g.tensors[t].size,)), _offset(body, t, r)) for i, t in enumerate(ends)}
    boundary.update({t: (constant(f"c{i}", bg.tensors[t].data.reshape(-1), f"{t} {list(bg.tensors[t].shape)}"),
                         _offset(body, t, r)) for i, t in enumerate(per_row)})
    inner = [t for m in bg.nodes for t in m.outputs if t not in ends]
    scratch = {t: Buffer(f"row_{i}", rg.tensors[t].dtype, (rg.tensors[t].size,), "scratch",
                         comment=f"one row of {describe(rg.tensors[t])}") for i, t in enumerate(inner)}
    nest = RowNest(boundary, scratch, frozenset(boundary[t][0] for t, _ in body.whole), tuple(r), body.iterations,
                   min((k for _, k in body.whole), default=body.rows))
    parts = tuple(lowering_of(rg, m)(rg, m, target) for m in bg.nodes)
    stmt, buffers = compose_rows(list(parts), nest)
    return make_func(g, node, list(buffers), stmt, row_parts=RowParts(parts, nest),
                     fused=f"{', '.join(m.op for m in bg.nodes)}; one row of "
                           f"[{','.join(map(str, body.row_shape(bg.outputs[0])))}] at a time over "
                           f"[{','.join(map(str, body.iterations))}]")
