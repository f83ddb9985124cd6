"""Fuse the ops of a LayerNorm, and of an attention head, into one row-by-row node.

A LayerNorm arrives as five to ten ops (TFLite's converter: MEAN, SQUARED_DIFFERENCE, MEAN,
ADD, RSQRT, MUL, SUB, ADD; ONNX's function body and PyTorch: mean, sub, mul, mean, add, sqrt,
div, mul, add; after PTQ with quantize/dequantize between int8 and float steps). Run one by
one they hold several whole-size tensors (float32 ones four times the int8 size) in the arena
at once. Attention (Q K^T, a scale, softmax, times V) holds a square score matrix per head.
Both compute each row of their output from the same row of their inputs, so the fused node
(ir/ops_fused.py) runs the same ops a row at a time with one row of each tensor between them.
The ops and their quantization stay as they are: the result is the same to the bit.

What is fused:
  layer_norm  a `mean` over trailing axes (keep_dims) of a tensor x, grown in graph order by
              every op that works row by row (elementwise ops with constants that are the same
              for every row or have a row each, means over the same axes, softmax when the rows end before the last
              axis) and reads only x, constants or the group's own results, until exactly
              one result leaves the group; kept when it holds two means and a square root
              (sqrt or rsqrt) and its result has x's shape
  attention   batch_matmul(Q, K) -> elementwise ops with constants -> softmax ->
              batch_matmul(P, V), each result read only by the next op: one row of scores
              per head and query row; K and V are read whole per head
Left alone: a norm over leading axes (rows not contiguous), int16 (16x8) groups, and groups
whose intermediate results something else reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph, Node, ops
from ..ir.ops_fused import RowGroup

_REDUCTIONS = ("mean",)
_ROW_LAST_AXIS = ("softmax", "log_softmax")


def _const_broadcast(g: Graph, name: str, rank: int, k: int) -> bool:
    """A constant operand is the same for every row: its dims among the first k are 1."""
    shape = tuple(g.tensors[name].shape)
    lead = rank - len(shape)
    return all(d == 1 for i, d in enumerate(shape) if lead + i < k)


def _const_rows(g: Graph, name: str, lead: tuple[int, ...]) -> bool:
    """A constant with a row of its own for some rows (an attention mask: one row per query
    row): of the output's rank, each of its first k dims 1 or the output's. The kernel reads it
    at the row's offset, as an input."""
    shape = tuple(g.tensors[name].shape)
    return len(shape) > len(lead) and all(d in (1, e) for d, e in zip(shape, lead))


def _rowwise(g: Graph, n: Node, lead: tuple[int, ...]) -> bool:
    """Each row (the first len(lead) dims fixed) of n's output comes from the same row of its
    non-constant inputs, which all have the output's rank and lead."""
    k = len(lead)
    out = g.tensors[n.outputs[0]]
    if len(n.outputs) != 1 or out.dtype == "int16" or len(out.shape) <= k or tuple(out.shape[:k]) != lead:
        return False
    d = ops.get(n.op)
    if n.op in _REDUCTIONS:
        if not n.attrs.get("keep_dims") or min(n.attrs["axes"]) < k:
            return False
    elif n.op not in _ROW_LAST_AXIS and d.layout != "elementwise":
        return False
    for i in n.inputs:
        t = g.tensors[i]
        if t.is_const:
            if not (_const_broadcast(g, i, len(out.shape), k)
                    or (len(t.shape) == len(out.shape) and _const_rows(g, i, lead))):
                return False
        elif t.variable or len(t.shape) != len(out.shape) or tuple(t.shape[:k]) != lead or t.dtype == "int16":
            return False
    return True


def _body(g: Graph, group: list[Node], inputs: tuple[str, ...], output: str, rows: int, whole=()) -> RowGroup:
    names = {i for n in group for i in n.inputs if i} | {o for n in group for o in n.outputs}
    sub = Graph(f"{group[-1].name}_body", {k: g.tensors[k] for k in sorted(names)}, tuple(group), inputs, (output,))
    return RowGroup(sub, rows, tuple(whole))


def _fused(op: str, body: RowGroup, group: list[Node]) -> Node:
    last = group[-1]
    return Node(op, last.name, body.graph.inputs, body.graph.outputs, {"body": body},
                tuple(dict.fromkeys(o for n in group for o in (n.origin or (n.name,)))))


def _layer_norm(g: Graph, m: Node, consumers, taken: set[str]) -> tuple[RowGroup, list[Node]] | None:
    x = m.inputs[0]
    xt = g.tensors[x]
    if xt.is_const or not m.attrs.get("keep_dims") or not m.attrs["axes"]:
        return None
    k = min(m.attrs["axes"])
    if tuple(m.attrs["axes"]) != tuple(range(k, len(xt.shape))) or k == 0:
        return None
    lead = tuple(xt.shape[:k])
    if not _rowwise(g, m, lead):
        return None
    group, produced = [m], {m.outputs[0]}
    for n in g.nodes[g.nodes.index(m) + 1:]:
        live = [i for i in n.inputs if i and not g.tensors[i].is_const]
        if n.name in taken or not any(i in produced for i in live) or not all(i in produced or i == x for i in live):
            continue
        if not _rowwise(g, n, lead):
            return None      # a consumer of the group that is not row-wise: not a layer norm
        group.append(n)
        produced.update(n.outputs)
        names = {c.name for c in group}
        leaving = [t for t in produced
                   if t in g.outputs or any(c.name not in names for c in consumers.get(t, []))]
        if (len(leaving) == 1 and sum(c.op in _REDUCTIONS for c in group) >= 2
                and any(c.op in ("sqrt", "rsqrt") for c in group) and leaving[0] == n.outputs[0]):
            out = leaving[0]
            # The scale and shift (and a quantize after float steps) that end the norm.
            while (tail := _single_consumer(g, consumers, out)) is not None \
                    and tail.name not in taken and _rowwise(g, tail, lead) \
                    and all(i in (out, x) or g.tensors[i].is_const for i in tail.inputs if i):
                group.append(tail)
                out = tail.outputs[0]
            if tuple(g.tensors[out].shape) != tuple(xt.shape):
                return None
            return _body(g, group, (x,), out, k), group
    return None


def _single_consumer(g: Graph, consumers, t: str) -> Node | None:
    """The one node that reads `t` (not a graph output), else None."""
    users = consumers.get(t, [])
    return users[0] if len(users) == 1 and t not in g.outputs else None


def _attention(g: Graph, qk: Node, consumers, taken: set[str]) -> tuple[RowGroup, list[Node]] | None:
    if qk.attrs.get("adj_x"):
        return None
    q, kt_name = qk.inputs
    s = g.tensors[qk.outputs[0]]
    rank = len(s.shape)
    if any(g.tensors[t].is_const or len(g.tensors[t].shape) != rank for t in (q, kt_name)) or s.dtype == "int16" \
            or q == kt_name:
        return None
    lead = tuple(s.shape[:rank - 1])
    group, t = [qk], qk.outputs[0]
    while True:
        n = _single_consumer(g, consumers, t)
        if n is None or n.name in taken or (n.op != "softmax" and ops.get(n.op).layout != "elementwise") \
                or not _rowwise(g, n, lead) \
                or any(not g.tensors[i].is_const for i in n.inputs if i and i != t):
            return None
        group.append(n)
        t = n.outputs[0]
        if n.op == "softmax":
            break
    pv = _single_consumer(g, consumers, t)
    if pv is None or pv.op != "batch_matmul" or pv.name in taken or pv.inputs[0] != t or pv.attrs.get("adj_x") or pv.inputs[1] == t:
        return None
    v = g.tensors[pv.inputs[1]]
    y = g.tensors[pv.outputs[0]]
    if v.is_const or v.name == q or len(v.shape) != rank or tuple(y.shape[:rank - 1]) != lead or y.dtype == "int16":
        return None
    group.append(pv)
    whole = ((kt_name, rank - 2), (v.name, rank - 2)) if kt_name != v.name else ((v.name, rank - 2),)
    return _body(g, group, tuple(dict.fromkeys((q, kt_name, v.name))), y.name, rank - 1, whole), group


@dataclass(frozen=True)
class FuseRows:
    name: str = "fuse_rows"

    def __call__(self, g: Graph) -> Graph:
        consumers = g.consumers()
        taken: set[str] = set()
        fused: dict[str, Node] = {}     # name of the group's last node -> the fused node
        for n in g.nodes:
            if n.name in taken:
                continue
            found = _layer_norm(g, n, consumers, taken) if n.op == "mean" else \
                _attention(g, n, consumers, taken) if n.op == "batch_matmul" else None
            if found is None:
                continue
            body, group = found
            if any(m.name in taken for m in group):
                continue
            taken.update(m.name for m in group)
            fused[group[-1].name] = _fused("layer_norm" if n.op == "mean" else "attention", body, group)
        if not fused:
            return g
        nodes = [fused.get(n.name, n) for n in g.nodes if n.name not in taken or n.name in fused]
        inner = {t for f in fused.values() for t in f.attrs["body"].graph.tensors
                 if t not in f.inputs and t not in f.outputs}
        used = {i for n in nodes for i in (*n.inputs, *n.outputs)} | set(g.inputs) | set(g.outputs)
        tensors = {k: v for k, v in g.tensors.items() if k not in inner or k in used}
        return g.replace(nodes=nodes, tensors=tensors)
