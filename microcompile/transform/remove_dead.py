"""Remove nodes whose results never reach a graph output, and tensors nothing uses."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph


@dataclass(frozen=True)
class RemoveDeadCode:
    name: str = "remove_dead"

    def __call__(self, g: Graph) -> Graph:
        live = set(g.outputs)
        kept = []
        for n in reversed(g.nodes):
            if any(o in live for o in n.outputs):
                kept.append(n)
                live.update(i for i in n.inputs if i)
        kept.reverse()
        used = live | set(g.inputs) | {o for n in kept for o in n.outputs}
        tensors = {k: t for k, t in g.tensors.items() if k in used}
        return g.replace(tensors=tensors, nodes=kept)
