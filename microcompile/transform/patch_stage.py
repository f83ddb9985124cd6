"""Patch stages: a chain of convolutions, depthwise convolutions, pools and elementwise ops
becomes one patch_stage node run band by band (ir/ops_patch.py).

Which chain and how many bands is the compiler's choice (compiler/patches.py: the smallest
arena within the instruction budget) or the user's (`--patch BANDSx1@[FIRST:]LAST`);
this module finds the chains a stage can take and builds the stage.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph
from ..ir.graph import Node
from ..ir.ops_patch import PatchStage, bandable


@dataclass(frozen=True)
class StageSpec:
    """A stage: the ops from `first` to `last` (node names, in graph order), their output
    split into `bands` bands of full rows (a grid of bands x 1), as `--patch` spells it."""

    first: str
    last: str
    bands: int

    def __str__(self) -> str:
        return f"{self.bands}x1@{self.first}:{self.last}"


def rows_per_band(height: int, bands: int) -> int:
    """Output rows per band for `bands` bands of a `height`-row output (the last band may be
    shorter; fewer bands when they divide unevenly: 7 of 24 rows are 6 bands of 4)."""
    return -(-height // bands)


def chains(g: Graph) -> list[list[Node]]:
    """The longest runs of ops a stage can take: each op bandable, each reading the output of
    the one before, which nothing else reads and which is no graph output."""
    consumers = g.consumers()
    out, cur = [], []
    for n in g.nodes:
        x = [i for i in n.inputs if i and not g.tensors[i].is_const]
        follows = (cur and x == [cur[-1].outputs[0]] and len(consumers.get(x[0], [])) == 1
                   and x[0] not in g.outputs)
        if bandable(g, n) and follows:
            cur.append(n)
            continue
        if len(cur) > 1:
            out.append(cur)
        cur = [n] if bandable(g, n) else []
    if len(cur) > 1:
        out.append(cur)
    return out


def stage_nodes(g: Graph, spec: StageSpec) -> list[Node] | None:
    """The ops of `spec` when they are one chain's (at least two ops), else None."""
    for chain in chains(g):
        names = [n.name for n in chain]
        if spec.first in names and spec.last in names and names.index(spec.first) < names.index(spec.last):
            return chain[names.index(spec.first):names.index(spec.last) + 1]
    return None


def make_stage(g: Graph, spec: StageSpec) -> Graph:
    """`g` with the ops of `spec` replaced by one patch_stage node (ValueError when they are
    not a chain a stage can take, or a band is more rows than the output has)."""
    nodes = stage_nodes(g, spec)
    if nodes is None:
        raise ValueError(f"{spec.first}..{spec.last} is not a chain of convolutions, pools and elementwise ops")
    x = next(i for i in nodes[0].inputs if i and not g.tensors[i].is_const)
    y = nodes[-1].outputs[0]
    if not 1 <= spec.bands <= g.tensors[y].shape[1]:
        raise ValueError(f"{spec.bands} bands: {y} has {g.tensors[y].shape[1]} rows")
    rows = rows_per_band(g.tensors[y].shape[1], spec.bands)
    names = dict.fromkeys(i for n in nodes for i in (*n.inputs, *n.outputs) if i)   # in node order
    body = Graph(f"{g.name}:{spec}", {t: g.tensors[t] for t in names}, tuple(nodes), (x,), (y,))
    stage = Node("patch_stage", f"patches_{nodes[0].name}", (x,), (y,), {"body": PatchStage(body, rows)},
                 origin=tuple(o for n in nodes for o in (n.origin or (n.name,))))
    inner = {n.outputs[0] for n in nodes[:-1]}
    at = list(g.nodes).index(nodes[0])
    kept = [n for n in g.nodes if n not in nodes]
    kept.insert(at, stage)
    used = {i for n in kept for i in (*n.inputs, *n.outputs) if i}
    return g.replace(nodes=kept, tensors={t: v for t, v in g.tensors.items() if t not in inner or t in used})
