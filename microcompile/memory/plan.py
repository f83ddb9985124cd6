"""Apply the planners to a graph: the static arena layout the code generator reads.

plan_memory runs liveness over the graph's node order, every planner of PLANNED_BY, keeps
the smallest arena (the first on a tie) and checks it with check_no_overlap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..ir import Graph
from .liveness import (ALIGNMENT, Alias, BufferReq, Overlap, aliases, analyze, live_bytes, scratch_name,
                       overlap_credit, valid_overlaps)
from .planner import PLANNERS, arena_end, branch_and_bound, check_no_overlap

# The planners plan_memory tries, in order of preference on a tie.
PLANNED_BY = ("greedy_by_size", "greedy_by_conflict", "branch_and_bound")


@dataclass(frozen=True)
class MemoryPlan:
    buffers: tuple[BufferReq, ...]
    offsets: dict[str, int]
    alias: dict[str, Alias]
    arena_bytes: int
    steps: int
    overlaps: tuple[Overlap, ...] = ()
    planner: str = "greedy_by_size"
    # The arena each planner reached (bytes, aligned), for the report.
    tried: dict[str, int] = field(default_factory=dict)
    # The state buffer: variable tensors (recurrent state), which persist between
    # inferences, each at its own offset (no reuse: they are all live all the time).
    state_offsets: dict[str, int] = field(default_factory=dict)
    state_bytes: int = 0
    # Multi-bank placement (memory/banks.py): the bank of every root buffer placed outside the
    # first (primary) bank, whose offsets are then within that bank's own arena, and each such
    # bank's arena bytes. Both empty for the one arena of a plan that fits one bank.
    banks: dict[str, str] = field(default_factory=dict)
    bank_bytes: dict[str, int] = field(default_factory=dict)
    # The in-place rules the offsets use, when fewer than `overlaps` (memory/plan.py
    # _fewer_rules); `overlaps`, every rule, still gives the lower bound.
    used: tuple[Overlap, ...] | None = None

    def offset(self, tensor_name: str) -> int:
        a = self.alias.get(tensor_name)
        return self.offsets[tensor_name] if a is None else self.offsets[a.root] + a.offset

    def bank(self, tensor_name: str) -> str:
        """The bank holding `tensor_name` (or a scratch buffer's name): "" for the primary arena."""
        a = self.alias.get(tensor_name)
        return self.banks.get(tensor_name if a is None else a.root, "")

    def state_offset(self, tensor_name: str) -> int:
        return self.state_offsets[tensor_name]

    def scratch_offset(self, node_name: str) -> int:
        return self.offsets[scratch_name(node_name)]

    def scratch_bank(self, node_name: str) -> str:
        return self.banks.get(scratch_name(node_name), "")

    def timeline(self) -> list[int]:
        """Bytes live at each step (0..steps), in-place sharing credited: the memory report's
        curve, whose maximum is the lower bound."""
        return live_bytes(list(self.buffers), self.overlaps, self.steps)

    @property
    def lower_bound(self) -> int:
        return max(self.timeline(), default=0)

    def live(self, step: int) -> list[BufferReq]:
        """The buffers live at `step`, largest first."""
        return sorted((b for b in self.buffers if b.first <= step <= b.last), key=lambda b: (-b.size, b.name))

    def to_json(self) -> dict:
        banks = {"banks": dict(self.bank_bytes)} if self.bank_bytes else {}
        return {**banks, "arena_bytes": self.arena_bytes, "lower_bound_bytes": self.lower_bound,
                "planner": self.planner, "planners": dict(self.tried),
                "state_bytes": self.state_bytes, "state": dict(self.state_offsets),
                "buffers": [{"name": b.name, "offset": self.offsets[b.name], "size": b.size,
                             "first": b.first, "last": b.last, **({"bank": self.banks[b.name]} if b.name in self.banks
                                                                  else {})} for b in self.buffers],
                "in_place": [{"out": o.out, "src": o.src, "max_shift": o.max_shift}
                             for o in (self.overlaps if self.used is None else self.used)],
                "timeline": self.timeline()}


def _aligned(n: int) -> int:
    return (n + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


def plan_memory(g: Graph, scratch: dict[str, int] | None = None, planner: str | None = None,
                overlaps=(), slices: dict[str, Alias] | None = None) -> MemoryPlan:
    """Plan the arena for `g` in its node order. `scratch` maps node name -> scratch bytes its
    kernel needs; `overlaps` are the in-place rules (memory/inplace.py; those whose input does
    not die where the output is born are dropped); `slices` the concatenation inputs written
    straight into their output. `planner` forces one planner (default: the best of PLANNED_BY)."""
    alias = aliases(g, slices)
    reqs = analyze(g, scratch, alias)
    rules = tuple(valid_overlaps(reqs, overlaps))
    end, offsets, name, tried = best_offsets(reqs, rules, planner)
    used = None
    if rules and planner is None:
        (end, offsets, name, tried), used = _fewer_rules(reqs, rules, (end, offsets, name, tried))
    state_offsets, state_bytes = plan_state(g)
    return MemoryPlan(tuple(reqs), offsets, alias, end, len(g.nodes), rules, name, tried, state_offsets, state_bytes,
                      used=used)


# In-place rules worth trying one by one (bytes they may share, at least) and how many.
RULE_MIN_CREDIT = 2048
RULE_TRIES = 6
QUICK_PLANNERS = ("greedy_by_size", "greedy_by_conflict")


def _fewer_rules(reqs: list[BufferReq], rules: tuple, best: tuple) -> tuple:
    """The planners place a chain of in-place outputs as one rigid unit, each member where it
    shares most with the one before; down a long chain whose kernels must write a little
    below their input (window kernels), the unit drifts and can cost more than it shares.
    Rules are permissions, not obligations: the same planners with fewer of them (those that
    update exactly in place; those over no graph input), and from none, the rules that share
    most added one at a time, each kept only if the arena shrinks. The smallest arena wins;
    `best` is the plan with every rule. Returns (plan, the rules it uses; None: every rule)."""
    by_name = {r.name: r for r in reqs}

    def credit(o):
        return overlap_credit(by_name[o.src], by_name[o.out], o.max_shift)

    exact = tuple(o for o in rules if o.max_shift >= 0 and credit(o) * 2 >= by_name[o.out].size)
    given = {r.name for r in reqs if r.given}
    kept = tuple(o for o in rules if o.src not in given)
    strongest = sorted((o for o in rules if credit(o) >= RULE_MIN_CREDIT), key=lambda o: -credit(o))[:RULE_TRIES]

    # Each fast planner compares the subsets on its own (a greedy path that one planner likes may
    # mislead the other); the best subset is then planned by all of them.
    found = {}
    for name in QUICK_PLANNERS:
        def quick(subset):
            return best_offsets(reqs, subset, name)[0]

        # From no rule, the rules that share most, one at a time, each kept if the arena shrinks.
        grown, at = (), quick(())
        for o in strongest:
            end = quick(grown + (o,))
            if end < at:
                at, grown = end, grown + (o,)
        for subset, end in [(grown, at)] + [(k, quick(k)) for k in (kept, exact) if k != rules]:
            found[subset] = min(end, found.get(subset, end))
    subset = min(found, key=lambda k: found[k])
    if found[subset] >= best[0]:
        return best, None
    plan = best_offsets(reqs, subset)
    return (plan, subset) if plan[0] < best[0] else (best, None)


def best_offsets(reqs: list[BufferReq], rules, planner: str | None = None):
    """(arena bytes, offsets, planner, {planner: bytes}) of the smallest arena any planner of
    PLANNED_BY reaches (`planner`: that one only), checked with check_no_overlap."""
    tried: dict[str, int] = {}
    best = None
    for name in ((planner,) if planner else PLANNED_BY):
        if name == "branch_and_bound" and best is not None:
            offsets = branch_and_bound(reqs, rules, start=best[1])
        else:
            offsets = PLANNERS[name](reqs, rules)
        end = _aligned(arena_end(reqs, offsets))
        tried[name] = end
        if best is None or end < best[0]:
            best = (end, offsets, name)
    end, offsets, name = best
    check_no_overlap(reqs, offsets, rules)
    return end, offsets, name, tried


def plan_state(g: Graph) -> tuple[dict[str, int], int]:
    """The state buffer: every variable tensor back to back (16-byte aligned), in graph
    order; its offsets and its size. A pure function of the graph, like the arena plan."""
    offsets, end = {}, 0
    for name, t in g.tensors.items():
        if t.variable:
            offsets[name] = end
            end += -(-t.nbytes // ALIGNMENT) * ALIGNMENT
    return offsets, end
