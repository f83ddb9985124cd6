"""Memory planners: pure functions from buffer requests (and the in-place overlaps they may
use) to arena offsets, and the independent overlap checker every test runs on every plan.

    greedy_by_size      TFLM's GreedyMemoryPlanner: largest first, each at the lowest offset
                        that collides with no placed buffer it is live with
    greedy_by_conflict  the buffers live with the most bytes of others first (TVM USMP's
                        greedy_by_conflicts), then by size
    branch_and_bound    a depth-first search over the order of placement, each unit at its
                        lowest offset, pruned by the best arena found so far; it stops at the
                        lower bound (proven optimal; or within what alignment alone may cost)
                        or after BNB_NODES placements (deterministic: a node budget, not a clock)
    linear              no reuse at all: the baseline

In-place chains. An `Overlap` lets a kernel's output sit over an input that dies with it,
at most max_shift bytes above it. The planners take, for every output, the input it can
share most with, and place the resulting chains (x -> y written over x -> z over y ...) as
rigid units with each member exactly where it shares most; a unit goes to the lowest offset
where none of its members collides with a placed buffer. Every other placed buffer forbids
an open interval of offsets; that is the one operation all planners share.
"""

from __future__ import annotations

from .liveness import BufferReq, Overlap, lower_bound, overlap_credit, valid_overlaps

# Placements the branch-and-bound search may try before it keeps its best plan.
BNB_NODES = 5000
# Larger problems are left to the greedy planners.
BNB_MAX_UNITS = 48


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def live_together(reqs: list[BufferReq]) -> list[tuple[int, int]]:
    """Index pairs (i < j) of the buffers whose lifetimes overlap, by a sweep over birth steps:
    proportional to the buffers and the pairs found, not to every pair (a chain of 20,000 ops
    has 20,000 buffers but only a few live at each step)."""
    order = sorted(range(len(reqs)), key=lambda i: reqs[i].first)
    active: list[int] = []
    pairs = []
    for j in order:
        r = reqs[j]
        active = [i for i in active if reqs[i].last >= r.first]
        pairs += [(min(i, j), max(i, j)) for i in active]
        active.append(j)
    return sorted(pairs)


Unit = tuple[tuple[BufferReq, int], ...]    # members and their offsets relative to the unit


class _Problem:
    """Buffers, their conflicts, the overlap rules between them and the in-place units."""

    def __init__(self, reqs: list[BufferReq], overlaps=()):
        self.reqs = list(reqs)
        self.rules = valid_overlaps(self.reqs, overlaps)
        self.shift = {(o.out, o.src): o.max_shift for o in self.rules}
        conflicts: dict[str, list[int]] = {r.name: [] for r in self.reqs}
        for i, j in live_together(self.reqs):
            conflicts[self.reqs[i].name].append(j)
            conflicts[self.reqs[j].name].append(i)
        # each list in the order of the buffers, as an all-pairs scan gave it
        self.conflicts = {name: [self.reqs[k] for k in sorted(ks)] for name, ks in conflicts.items()}
        self.units = self._chains()

    def _chains(self) -> list[Unit]:
        by_name = {r.name: r for r in self.reqs}
        over: dict[str, Overlap] = {}           # out -> the overlap it uses
        taken: set[str] = set()                 # sources already written over
        ranked = sorted(self.rules, key=lambda o: -overlap_credit(by_name[o.src], by_name[o.out], o.max_shift))
        for o in ranked:
            if o.out in over or o.src in taken or o.max_shift % by_name[o.out].align:
                continue
            if overlap_credit(by_name[o.src], by_name[o.out], o.max_shift) <= 0:
                continue
            over[o.out] = o
            taken.add(o.src)
        # Walk each chain from its head (the member written over nothing) along `over`,
        # iteratively: a chain is as long as the graph (a 20,000-op chain of ADDs).
        written_over = {o.src: o.out for o in over.values()}     # src -> the out over it
        rel: dict[str, int] = {}
        groups: dict[str, list[str]] = {}                        # head -> chain members
        for r in self.reqs:
            if r.name in over:
                continue                                         # not a head
            members, name, offset = [r.name], r.name, 0
            rel[name] = 0
            while name in written_over:
                o = over[written_over[name]]
                name, offset = o.out, offset + min(o.max_shift, 0)
                rel[name] = offset
                members.append(name)
            groups[r.name] = members
        by_req = {r.name: r for r in self.reqs}
        order = {r.name: i for i, r in enumerate(self.reqs)}
        units = []
        chains = sorted((sorted(members, key=order.__getitem__) for members in groups.values()),
                        key=lambda members: order[members[0]])
        for members in chains:
            low = min(rel[m] for m in members)
            units.append(tuple((by_req[m], rel[m] - low) for m in members))
        return units

    def forbidden(self, r: BufferReq, p: BufferReq, off_p: int) -> tuple[int, int]:
        """The open interval of offsets r may not take while p sits at off_p."""
        lo, hi = off_p - r.size, off_p + p.size
        d = self.shift.get((r.name, p.name))
        if d is not None:                 # r written over p: r at most d above p
            lo = max(lo, off_p + d)
        d = self.shift.get((p.name, r.name))
        if d is not None:                 # p written over r: p at most d above r
            hi = min(hi, off_p - d)
        return lo, hi

    def lowest(self, unit: Unit, offsets: dict[str, int]) -> int:
        """The lowest base offset where no member of `unit` collides with a placed buffer."""
        walls = []
        for m, rel in unit:
            for p in self.conflicts[m.name]:
                if p.name in offsets:
                    lo, hi = self.forbidden(m, p, offsets[p.name])
                    if hi - lo > 1:
                        walls.append((lo - rel, hi - rel))
        walls.sort()
        align = max(m.align for m, _ in unit)
        cand = 0
        moved = True
        while moved:
            moved = False
            for lo, hi in walls:
                if lo < cand < hi:
                    cand, moved = _align(hi, align), True
        return cand


def _place(problem: _Problem, units: list[Unit]) -> dict[str, int]:
    offsets: dict[str, int] = {}
    for u in units:
        base = problem.lowest(u, offsets)
        for m, rel in u:
            offsets[m.name] = base + rel
    return offsets


def _unit_size(u: Unit) -> int:
    return max(m.size for m, _ in u)


def _unit_key(u: Unit):
    return min(m.first for m, _ in u), min(m.name for m, _ in u)


def greedy_by_size(reqs: list[BufferReq], overlaps=()) -> dict[str, int]:
    problem = _Problem(reqs, overlaps)
    return _place(problem, sorted(problem.units, key=lambda u: (-_unit_size(u), *_unit_key(u))))


def greedy_by_conflict(reqs: list[BufferReq], overlaps=()) -> dict[str, int]:
    problem = _Problem(reqs, overlaps)
    degree = {id(u): sum(p.size for m, _ in u for p in problem.conflicts[m.name]) for u in problem.units}
    return _place(problem, sorted(problem.units, key=lambda u: (-degree[id(u)], -_unit_size(u), *_unit_key(u))))


def arena_end(reqs: list[BufferReq], offsets: dict[str, int]) -> int:
    return max((offsets[r.name] + r.size for r in reqs), default=0)


def branch_and_bound(reqs: list[BufferReq], overlaps=(), nodes: int = BNB_NODES,
                     start: dict[str, int] | None = None) -> dict[str, int]:
    """The best plan found by placing the units in every order (largest first), each at its
    lowest offset, pruning any partial plan whose end already reaches the best one.
    `start` is a plan to beat (default: greedy_by_size's)."""
    problem = _Problem(reqs, overlaps)
    best = dict(start) if start is not None else greedy_by_size(reqs, overlaps)
    best_end = arena_end(reqs, best)
    bound = lower_bound(reqs, overlaps)
    units = sorted(problem.units, key=lambda u: (-_unit_size(u), *_unit_key(u)))
    if best_end <= bound or len(units) > BNB_MAX_UNITS or best_end - bound < _alignment_slack(reqs):
        return best
    budget = [nodes]
    offsets: dict[str, int] = {}
    seen: set[frozenset] = set()      # partial plans already searched (reached in another order)

    def search(placed: int, end: int) -> bool:
        """True when the search is over (the bound is reached or the budget spent)."""
        nonlocal best, best_end
        if placed == len(units):
            if end < best_end:
                best, best_end = dict(offsets), end
            return best_end <= bound
        for u in units:
            if u[0][0].name in offsets:
                continue
            budget[0] -= 1
            if budget[0] < 0:
                return True
            base = problem.lowest(u, offsets)
            new_end = max(end, *(base + rel + m.size for m, rel in u))
            if new_end >= best_end:
                continue
            for m, rel in u:
                offsets[m.name] = base + rel
            key = frozenset(offsets.items())
            done = False
            if key not in seen:
                seen.add(key)
                done = search(placed + 1, new_end)
            for m, _ in u:
                del offsets[m.name]
            if done:
                return True
        return False

    search(0, 0)
    return best


def _alignment_slack(reqs: list[BufferReq]) -> int:
    """Bytes the bound may miss by alignment alone: padding each buffer live at the busiest
    step to its alignment. A plan that close is not worth a search."""
    steps = max((r.last for r in reqs), default=0) + 1
    return max((sum(-r.size % r.align for r in reqs if r.first <= s <= r.last) for s in range(steps)), default=0) + 1


def linear(reqs: list[BufferReq], overlaps=()) -> dict[str, int]:
    """No reuse at all: every buffer gets its own bytes. The baseline planners are judged against."""
    offsets, cursor = {}, 0
    for r in reqs:
        cursor = _align(cursor, r.align)
        offsets[r.name] = cursor
        cursor += r.size
    return offsets


PLANNERS = {"greedy_by_size": greedy_by_size, "greedy_by_conflict": greedy_by_conflict,
            "branch_and_bound": branch_and_bound, "linear": linear}


class OverlapError(AssertionError):
    """Two buffers alive at the same step share bytes that no in-place rule allows: a planner bug."""


def check_no_overlap(reqs: list[BufferReq], offsets: dict[str, int], overlaps=()) -> None:
    """Every buffer aligned; no two buffers live at the same step share a byte, unless an
    Overlap lets one be written over the other and the plan keeps within its max_shift."""
    reqs = list(reqs)
    shift = {(o.out, o.src): o.max_shift for o in valid_overlaps(reqs, overlaps)}
    for a in reqs:
        oa = offsets[a.name]
        if oa < 0 or oa % a.align:
            raise OverlapError(f"{a.name} at {oa} is not {a.align}-byte aligned")
    for i, j in live_together(reqs):
        a, b = reqs[i], reqs[j]
        oa, ob = offsets[a.name], offsets[b.name]
        if not (oa < ob + b.size and ob < oa + a.size):
            continue
        if (a.name, b.name) in shift and oa - ob <= shift[(a.name, b.name)]:
            continue
        if (b.name, a.name) in shift and ob - oa <= shift[(b.name, a.name)]:
            continue
        raise OverlapError(f"{a.name} [{oa},{oa + a.size}) overlaps {b.name} [{ob},{ob + b.size}) "
                           f"while both are live (steps {a.first}-{a.last} and {b.first}-{b.last})")
