"""Apply a planner to a graph: the static arena layout the code generator reads."""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph
from .liveness import ALIGNMENT, BufferReq, aliases, analyze, scratch_name
from .planner import PLANNERS, check_no_overlap


@dataclass(frozen=True)
class MemoryPlan:
    buffers: tuple[BufferReq, ...]
    offsets: dict[str, int]
    alias: dict[str, str]
    arena_bytes: int
    steps: int

    def offset(self, tensor_name: str) -> int:
        return self.offsets[self.alias.get(tensor_name, tensor_name)]

    def scratch_offset(self, node_name: str) -> int:
        return self.offsets[scratch_name(node_name)]

    def timeline(self) -> list[int]:
        """Live bytes at each step (0..steps), for the memory report."""
        return [sum(b.size for b in self.buffers if b.first <= s <= b.last) for s in range(self.steps + 1)]

    def to_json(self) -> dict:
        return {"arena_bytes": self.arena_bytes,
                "buffers": [{"name": b.name, "offset": self.offsets[b.name], "size": b.size,
                             "first": b.first, "last": b.last} for b in self.buffers],
                "timeline": self.timeline()}


def plan_memory(g: Graph, scratch: dict[str, int] | None = None, planner: str = "greedy_by_size") -> MemoryPlan:
    """Plan the arena for `g`; `scratch` maps node name -> scratch bytes its kernel needs."""
    reqs = analyze(g, scratch)
    offsets = PLANNERS[planner](reqs)
    check_no_overlap(reqs, offsets)
    end = max((offsets[r.name] + r.size for r in reqs), default=0)
    arena = (end + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT
    return MemoryPlan(tuple(reqs), offsets, aliases(g), arena, len(g.nodes))
