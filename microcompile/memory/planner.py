"""Memory planners: pure functions from buffer requests to arena offsets.

`greedy_by_size` is the algorithm TFLM's GreedyMemoryPlanner uses: place the largest
buffers first, each at the lowest offset that does not collide with an already placed
buffer whose lifetime overlaps. `check_no_overlap` is the independent checker every
test runs on every plan.
"""

from __future__ import annotations

from .liveness import BufferReq


def _align(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def _lifetimes_overlap(a: BufferReq, b: BufferReq) -> bool:
    return a.first <= b.last and b.first <= a.last


def greedy_by_size(reqs: list[BufferReq]) -> dict[str, int]:
    order = sorted(reqs, key=lambda r: (-r.size, r.first, r.name))
    placed: list[tuple[BufferReq, int]] = []
    offsets: dict[str, int] = {}
    for r in order:
        busy = sorted((off, off + p.size) for p, off in placed if _lifetimes_overlap(p, r))
        candidate = 0
        for lo, hi in busy:
            if candidate + r.size <= lo:
                break
            candidate = max(candidate, _align(hi, r.align))
        offsets[r.name] = candidate
        placed.append((r, candidate))
    return offsets


def linear(reqs: list[BufferReq]) -> dict[str, int]:
    """No reuse at all: every buffer gets its own bytes. The baseline planners are judged against."""
    offsets, cursor = {}, 0
    for r in reqs:
        cursor = _align(cursor, r.align)
        offsets[r.name] = cursor
        cursor += r.size
    return offsets


PLANNERS = {"greedy_by_size": greedy_by_size, "linear": linear}


class OverlapError(AssertionError):
    """Two buffers alive at the same step share bytes: a planner bug."""


def check_no_overlap(reqs: list[BufferReq], offsets: dict[str, int]) -> None:
    for i, a in enumerate(reqs):
        oa = offsets[a.name]
        if oa % a.align:
            raise OverlapError(f"{a.name} at {oa} is not {a.align}-byte aligned")
        for b in reqs[i + 1:]:
            ob = offsets[b.name]
            if _lifetimes_overlap(a, b) and oa < ob + b.size and ob < oa + a.size:
                raise OverlapError(f"{a.name} [{oa},{oa + a.size}) overlaps {b.name} [{ob},{ob + b.size}) "
                                   f"while both are live (steps {a.first}-{a.last} and {b.first}-{b.last})")
