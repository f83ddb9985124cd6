"""Stable text form of a Graph, for --dump-ir and golden tests."""

from __future__ import annotations

from .graph import Graph, Tensor


def _tensor(t: Tensor) -> str:
    s = f"{t.dtype}{list(t.shape)}"
    if t.quant is not None:
        q = t.quant
        s += (f" q(s={q.scale[0]:.6g}, zp={q.zero_point[0]})" if q.axis is None
              else f" q(per-channel axis={q.axis}, {len(q.scale)} scales)")
    return s


def print_graph(g: Graph) -> str:
    lines = [f"graph {g.name}("
             + ", ".join(f"%{n}: {_tensor(g.tensors[n])}" for n in g.inputs) + ")"]
    for n in g.nodes:
        args = ", ".join(("@" if g.tensors[i].is_const else "%") + i if i else "_" for i in n.inputs)
        attrs = ", ".join(f"{k}={v}" for k, v in sorted(n.attrs.items()))
        outs = ", ".join(f"%{o}: {_tensor(g.tensors[o])}" for o in n.outputs)
        lines.append(f"  {outs} = {n.op}({args}) {{{attrs}}}  # {n.name}")
    lines.append("  return " + ", ".join(f"%{o}" for o in g.outputs))
    return "\n".join(lines)
