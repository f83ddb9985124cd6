"""The execution order: where the graph branches (a residual block's shortcut, the inputs of a
concatenation), run the nodes in the topological order whose peak of live bytes is smallest.

The peak of an order is the largest, over its steps, of the bytes live at that step (the
lower bound of liveness.live_bytes: in-place sharing and scratch included). Which tensors are
live after a set of nodes has run depends only on that set, so a dynamic programme over the
sets reachable in topological order finds the best order: the best peak to reach a set is
the best, over its last node, of max(peak before, that node's step); among orders of equal
peak, the one with the fewest live bytes summed over its steps (less for the planner to fit
around the peak). Each layer of the
programme keeps at most MAX_STATES sets (a beam; ties go to the order closest to the
graph's own), and the graph's own order is kept when nothing beats it.
"""

from __future__ import annotations

from ..ir import Graph, Node
from .liveness import Alias, BufferReq, Overlap, overlap_credit

MAX_STATES = 256      # sets kept per layer of the programme
MAX_NODES = 400       # larger graphs keep their own order


class _Costs:
    """Per root buffer: size, writers, users (as bit masks over node indices)."""

    def __init__(self, g: Graph, scratch: dict[str, int], overlaps, alias: dict[str, Alias]):
        self.n = len(g.nodes)
        root = lambda t: alias[t].root if t in alias else t   # noqa: E731
        self.size: dict[str, int] = {}
        self.writers: dict[str, int] = {}
        self.users: dict[str, int] = {}
        for t in g.inputs:
            self.size[root(t)] = g.tensors[root(t)].nbytes
        self.inputs = {root(t) for t in g.inputs}
        self.outputs = {root(t) for t in g.outputs}
        self.needs: list[int] = []      # per node: mask of the nodes producing its inputs
        producer = {o: i for i, n in enumerate(g.nodes) for o in n.outputs}
        for i, node in enumerate(g.nodes):
            bit = 1 << i
            need = 0
            for t in node.inputs:
                if not t or g.tensors[t].is_const:
                    continue
                r = root(t)
                self.size.setdefault(r, g.tensors[r].nbytes)
                self.users[r] = self.users.get(r, 0) | bit
                if t in producer:
                    need |= 1 << producer[t]
            for t in node.outputs:
                r = root(t)
                self.size.setdefault(r, g.tensors[r].nbytes)
                self.writers[r] = self.writers.get(r, 0) | bit
            self.needs.append(need)
        self.scratch = [scratch.get(n.name, 0) for n in g.nodes]
        # Overlaps by the node that writes their output.
        self.rules: list[list[Overlap]] = [[] for _ in g.nodes]
        for o in overlaps:
            w = self.writers.get(o.out, 0)
            if w and w & (w - 1) == 0:
                self.rules[w.bit_length() - 1].append(o)

    def step(self, i: int, done: int) -> int:
        """Bytes live while node i runs after the nodes in `done`."""
        bit = 1 << i
        after = done | bit
        total = self.scratch[i]
        for r, size in self.size.items():
            written = self.writers.get(r, 0)
            if not (r in self.inputs or written & after):
                continue
            if written & bit or r in self.outputs or self.users.get(r, 0) & ~done:
                total += size
        credit: dict[str, int] = {}
        for o in self.rules[i]:
            if o.src in self.outputs or self.users.get(o.src, 0) & ~after or not self.users.get(o.src, 0) & bit:
                continue      # the input outlives this step: nothing to share
            c = overlap_credit(BufferReq(o.src, self.size[o.src], 0, 0), BufferReq(o.out, self.size[o.out], 0, 0),
                               o.max_shift)
            credit[o.out] = min(self.size[o.out], credit.get(o.out, 0) + c)
        return total - sum(credit.values())

    def cost(self, order: list[int]) -> tuple[int, int]:
        """(peak, sum over steps) of live bytes."""
        done, peak, total = 0, 0, 0
        for i in order:
            c = self.step(i, done)
            peak, total = max(peak, c), total + c
            done |= 1 << i
        return peak, total


def best_order(g: Graph, scratch: dict[str, int] | None = None, overlaps=(),
               alias: dict[str, Alias] | None = None) -> list[Node]:
    """The nodes of `g` in the topological order with the smallest peak (see the module
    docstring); `g`'s own order on a tie."""
    n = len(g.nodes)
    if n > MAX_NODES:
        return list(g.nodes)
    costs = _Costs(g, scratch or {}, overlaps, alias or {})
    own = list(range(n))
    best = (*costs.cost(own), tuple(own))
    layer: dict[int, tuple[int, int, tuple[int, ...]]] = {0: (0, 0, ())}
    for _ in range(n):
        nxt: dict[int, tuple[int, int, tuple[int, ...]]] = {}
        for done, (peak, total, seq) in layer.items():
            for i in range(n):
                bit = 1 << i
                if done & bit or costs.needs[i] & ~done:
                    continue
                c = costs.step(i, done)
                cand = (max(peak, c), total + c, seq + (i,))
                key = done | bit
                if key not in nxt or cand < nxt[key]:
                    nxt[key] = cand
        if len(nxt) > MAX_STATES:
            nxt = dict(sorted(nxt.items(), key=lambda kv: kv[1])[:MAX_STATES])
        layer = nxt
    found = min(layer.values())
    if found < best:
        best = found
    return [g.nodes[i] for i in best[2]]
