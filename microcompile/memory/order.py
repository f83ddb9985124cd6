"""The execution order: where the graph branches (a residual block's shortcut, the inputs of a
concatenation), run the nodes in the topological order whose peak of live bytes is smallest.

The peak of an order is the largest, over its steps, of the bytes live at that step (the
lower bound of liveness.live_bytes: in-place sharing and scratch included). Which tensors are
live after a set of nodes has run depends only on that set, so a dynamic programme over the
sets reachable in topological order finds the best order: the best peak to reach a set is
the best, over its last node, of max(peak before, that node's step); among orders of equal
peak, the one with the fewest live bytes summed over its steps (less for the planner to fit
around the peak). Each layer of the programme keeps at most MAX_STATES sets (a beam; ties go
to the order closest to the graph's own; narrower past WIDE_NODES nodes), and the graph's own
order is kept when nothing beats it. A step costs the degree of its node (the live bytes ride
along with each set), and only the ready nodes of a set are tried: a 263-kernel graph orders
in about a second instead of four minutes.
"""

from __future__ import annotations

from ..ir import Graph, Node
from .liveness import Alias, BufferReq, Overlap, overlap_credit

MAX_STATES = 256      # sets kept per layer of the programme (graphs up to WIDE_NODES nodes)
WIDE_NODES = 64       # past this, the beam narrows to STEP_BUDGET // n sets (at least 32), so
STEP_BUDGET = 16384   # that the work stays about linear in n: compile time, not arena, decides
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
        self.touched: list[tuple[str, ...]] = []   # per node: the roots it reads or writes
        self.written: list[tuple[str, ...]] = []   # per node: the roots it writes
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
            ins = [root(t) for t in node.inputs if t and not g.tensors[t].is_const]
            outs = list(dict.fromkeys(root(t) for t in node.outputs))
            self.written.append(tuple(outs))
            self.touched.append(tuple(dict.fromkeys(ins + outs)))
        self.scratch = [scratch.get(n.name, 0) for n in g.nodes]
        # Overlaps by the node that writes their output.
        self.rules: list[list[Overlap]] = [[] for _ in g.nodes]
        for o in overlaps:
            w = self.writers.get(o.out, 0)
            if w and w & (w - 1) == 0:
                self.rules[w.bit_length() - 1].append(o)

    def live(self, r: str, done: int) -> bool:
        """Whether buffer r holds bytes between steps, after the nodes in `done` ran."""
        return bool((r in self.inputs or self.writers.get(r, 0) & done)
                    and (r in self.outputs or self.users.get(r, 0) & ~done))

    def initial(self) -> int:
        """Live bytes before the first step: the graph inputs someone reads (or outputs)."""
        return sum(self.size[r] for r in self.inputs if self.live(r, 0))

    def step(self, i: int, done: int, live: int) -> tuple[int, int]:
        """(bytes live while node i runs after the nodes in `done`, bytes live after it),
        given `live`, the bytes live before it. Only the buffers node i reads or writes can
        change state, so this costs the node's degree, not the graph's buffer count (a beam
        over a few hundred nodes would otherwise take minutes)."""
        bit = 1 << i
        after = done | bit
        total, nxt = live + self.scratch[i], live
        for r in self.written[i]:
            if not self.live(r, done):
                total += self.size[r]
        for r in self.touched[i]:
            was, now = self.live(r, done), self.live(r, after)
            if was and not now:
                nxt -= self.size[r]
            elif now and not was:
                nxt += self.size[r]
        return total - self._credit(i, done), nxt

    def step_by_definition(self, i: int, done: int) -> int:
        """step's first result computed from scratch over every buffer (the definition the
        incremental step is tested against)."""
        bit = 1 << i
        after = done | bit
        total = self.scratch[i]
        for r, size in self.size.items():
            written = self.writers.get(r, 0)
            if not (r in self.inputs or written & after):
                continue
            if written & bit or r in self.outputs or self.users.get(r, 0) & ~done:
                total += size
        return total - self._credit(i, done)

    def _credit(self, i: int, done: int) -> int:
        """Bytes node i's output may share with an input whose last reader is node i."""
        after = done | (1 << i)
        credit: dict[str, int] = {}
        for o in self.rules[i]:
            if o.src in self.outputs or self.users.get(o.src, 0) & ~after or not self.users.get(o.src, 0) & (1 << i):
                continue      # the input outlives this step: nothing to share
            c = overlap_credit(BufferReq(o.src, self.size[o.src], 0, 0), BufferReq(o.out, self.size[o.out], 0, 0),
                               o.max_shift)
            credit[o.out] = min(self.size[o.out], credit.get(o.out, 0) + c)
        return sum(credit.values())

    def cost(self, order: list[int]) -> tuple[int, int]:
        """(peak, sum over steps) of live bytes."""
        done, peak, total, live = 0, 0, 0, self.initial()
        for i in order:
            c, live = self.step(i, done, live)
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
    # Per reached set: (peak, sum of steps, order, live bytes after it); the live bytes
    # depend only on the set, so they ride along without taking part in the comparison.
    width = MAX_STATES if n <= WIDE_NODES else max(32, STEP_BUDGET // n)
    successors: list[list[int]] = [[] for _ in range(n)]
    for i in range(n):
        for j in _bits(costs.needs[i]):
            successors[j].append(i)
    start = sum(1 << i for i in range(n) if not costs.needs[i])
    layer: dict[int, tuple[int, int, tuple[int, ...], int, int]] = {0: (0, 0, (), costs.initial(), start)}
    for _ in range(n):
        nxt: dict[int, tuple[int, int, tuple[int, ...], int, int]] = {}
        for done, (peak, total, seq, live, ready) in layer.items():
            for i in _bits(ready):     # the nodes whose inputs are all computed
                bit = 1 << i
                key = done | bit
                c, after = costs.step(i, done, live)
                cand = (max(peak, c), total + c, seq + (i,))
                if key not in nxt or cand < nxt[key][:3]:
                    now_ready = (ready & ~bit) | sum(1 << j for j in successors[i] if not costs.needs[j] & ~key)
                    nxt[key] = (*cand, after, now_ready)
        if len(nxt) > width:
            nxt = dict(sorted(nxt.items(), key=lambda kv: kv[1][:3])[:width])
        layer = nxt
    found = min(v[:3] for v in layer.values())
    if found < best:
        best = found
    return [g.nodes[i] for i in best[2]]


def _bits(mask: int):
    """The indices of the set bits of `mask`, lowest first."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low
