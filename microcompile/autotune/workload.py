"""Workloads: the kernels of a model as the tuner sees them, deduplicated by their workload
key (schedule/workload.py says what two kernels sharing a key have in common)."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..schedule import knob_space
from ..schedule.workload import workload_key
from ..tir.nodes import PrimFunc


@dataclass
class Workload:
    key: str
    family: str
    op: str
    func: PrimFunc                 # the first kernel's lowered function (the others replay its trace)
    nodes: list[str] = field(default_factory=list)
    macs: int = 0                  # per kernel
    default: dict = field(default_factory=dict)     # the default schedule's point of the space
    space: object = None                            # schedule.KnobSpace


def extract_workloads(lowered, target, wide: dict | None = None) -> list[Workload]:
    """Deduplicated workloads of [(node, lowered PrimFunc)], in first-appearance order.
    `wide`: {node name: bool}, whether the default compile gave a kernel int16 weights (its
    default point); a workload takes its first kernel's."""
    from ..schedule import default_config

    out: dict[str, Workload] = {}
    for node, func in lowered:
        if "row_parts" in func.attrs:
            # a fused row group or a patch stage: its default schedule is its parts' own
            # (schedule_parts), which no knob space here reproduces; its parts are not tuned
            continue
        key = workload_key(node, func, target)
        if key not in out:
            w = (wide or {}).get(node.name, True)
            space = knob_space(func, target)
            out[key] = Workload(key, space.family, func.attrs.get("op", node.op), func,
                                macs=int(func.attrs.get("macs", 0)), default=default_config(func, target, w),
                                space=space)
        out[key].nodes.append(node.name)
    return list(out.values())
