"""Multi-bank placement: one arena per RAM bank, for a plan whose arena does not fit one bank.

`split_banks` takes a finished one-arena plan and the banks' room, and places every root buffer
in a bank, then plans each bank's buffers as its own arena (the planners of plan.py, checked with
check_no_overlap per bank: two banks never share an address). The rule:

1. The pinned buffers (the model's inputs and outputs, which the application reaches through
   the primary arena that it passes to mc_init) go to the primary bank.
2. Fast banks (tightly coupled memory) take the buffers the kernels touch most: scratch
   (im2col columns, accumulator tiles: read and written once per MAC block), then the other
   buffers smallest first, while each still fits.
3. The rest, largest first, go to the first bank they fit: the primary, then the other slow
   banks largest first, the fast banks last.
4. If that leaves a buffer out, the same without preferring fast banks (largest first, first
   fit over the banks largest first); if that fails too, None.

An in-place rule (an output written over its input) is kept when both buffers land in one
bank and dropped otherwise: it allows sharing, it never requires it, and two banks share no
address.
A bank fits when its planned arena (greedy by size, the quickest planner) is at most its room.
A pure function of its arguments, like the planners.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from .liveness import BufferReq
from .plan import MemoryPlan, best_offsets
from .planner import arena_end, greedy_by_size


@dataclass(frozen=True)
class BankRoom:
    """Bytes of arena one RAM bank can take; `fast`: tightly coupled (no wait states, no cache)."""

    name: str
    room: int
    fast: bool = False


def _fits(reqs: list[BufferReq], rules, room: int) -> bool:
    return arena_end(reqs, greedy_by_size(reqs, rules)) <= room if reqs else True


def _assign(plan: MemoryPlan, banks: list[BankRoom], pinned: set[str], prefer_fast: bool) -> dict[str, str] | None:
    """{root buffer: bank name} by the rule of the module docstring, or None."""
    req = {b.name: b for b in plan.buffers}
    where: dict[str, list[str]] = {b.name: [] for b in banks}

    def put(bank: BankRoom, name: str) -> bool:
        names = where[bank.name] + [name]
        rules = [o for o in plan.overlaps if o.out in names and o.src in names]
        if not _fits([req[n] for n in names], rules, bank.room):
            return False
        where[bank.name] = names
        return True

    primary = banks[0]
    for b in plan.buffers:
        if b.name in pinned and not put(primary, b.name):
            return None
    left = [b for b in plan.buffers if b.name not in pinned]
    fast = [b for b in banks[1:] if b.fast] if prefer_fast else []
    if fast:
        hot = sorted(left, key=lambda b: (not b.name.startswith("scratch:"), b.size, b.name))
        placed = {b.name for b in hot if any(put(bank, b.name) for bank in fast)}
        left = [b for b in left if b.name not in placed]
    slow = [b for b in banks[1:] if b not in fast]
    order = ([primary] + sorted(slow, key=lambda b: -b.room) + fast) if prefer_fast else \
        sorted(banks, key=lambda b: -b.room)
    for b in sorted(left, key=lambda b: (-b.size, b.name)):
        if not any(put(bank, b.name) for bank in order):
            return None
    return {n: bank for bank, names in where.items() for n in names}


def split_banks(plan: MemoryPlan, banks: list[BankRoom], pinned: set[str] = frozenset()) -> MemoryPlan | None:
    """`plan` with its buffers over `banks` (the first is the primary bank, whose arena is the
    plan's `arena_bytes`), or None when they do not fit the banks together. `pinned` root
    buffers stay in the primary bank."""
    assigned = _assign(plan, banks, set(pinned), True) or _assign(plan, banks, set(pinned), False)
    if assigned is None:
        return None
    offsets: dict[str, int] = {}
    arena, tried, planner, bank_of, bank_bytes = 0, {}, plan.planner, {}, {}
    for bank in banks:
        reqs = [b for b in plan.buffers if assigned[b.name] == bank.name]
        if not reqs and bank is not banks[0]:
            continue
        rules = tuple(o for o in plan.overlaps if assigned.get(o.out) == bank.name and assigned.get(o.src) == bank.name)
        end, placed, name, bank_tried = best_offsets(reqs, rules) if reqs else (0, {}, plan.planner, {})
        offsets.update(placed)
        if bank is banks[0]:
            arena, tried, planner = end, bank_tried, name
        else:
            bank_bytes[bank.name] = end
            bank_of.update({n: bank.name for n in placed})
    # In-place rules between two banks are dropped (see the module docstring).
    kept = tuple(o for o in plan.overlaps if assigned.get(o.out) == assigned.get(o.src))
    return replace(plan, offsets=offsets, arena_bytes=arena, planner=planner, tried=tried, overlaps=kept,
                   banks=bank_of, bank_bytes=bank_bytes)
