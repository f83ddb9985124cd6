"""The patch stage as a searched choice (issue 27): `tune` measures the model whole with no
stage and with each stage `--patch auto` would weigh, on the device, before it tunes the
kernels.

`--patch auto` alone ranks the candidate stages by the arena's lower bound and keeps one only
when the planned arena shrinks and its *estimated* extra instructions stay within
PATCH_BUDGET (compiler/patches.py). The estimate counts the rows a band recomputes; what a
stage really costs also depends on how its parts' kernels run on band shapes, which only a
measurement tells. So `tune` (with --patch auto, the default) builds and runs the model with
"off" and with the PATCH_TRIES best-ranked stages, writes one record per choice (workload
`patch:<digest of the graph>`, config {"patch": choice}, the arena in "arena"), and then
tunes the kernels of the graph it picked. The pick (records.pick_patch): the smallest arena among the
choices whose measured count is within PATCH_BUDGET of "off"'s, fewer instructions on a tie;
`deploy/run/profile --records` apply it where --patch is auto (records.select).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from ..compiler.compile import optimized, read_model
from ..compiler.patches import PATCH_FAMILY, patch_key, patch_trace, ranked, trace_choice
from ..errors import shown
from ..transform.patch_stage import StageSpec
from ..schedule import Trace
from .records import pick_patch, record

# Stages measured besides "off": auto plans the best two in full; the tuner measures a few more.
PATCH_TRIES = 4


@dataclass
class PatchWorkload:
    """The patch choice of one graph, in the shape records.record takes."""

    key: str
    family: str = PATCH_FAMILY
    op: str = "patch_stage"
    nodes: list[str] = field(default_factory=list)
    default: dict = field(default_factory=dict)


def choices(source, options) -> tuple[PatchWorkload, list[str | StageSpec]]:
    """The workload of `source`'s patch choice and the choices to measure: "off", then the
    best-ranked stages (none when the graph has no candidate)."""
    graph = optimized(read_model(source, options), options, dump=False)
    specs = [spec for _, spec, _, _ in ranked(graph)[:PATCH_TRIES]]
    return PatchWorkload(patch_key(graph), default={"patch": "auto"}), (["off", *specs] if specs else [])


def search(measurer, writer, env, model: str, previous: list[dict], progress) -> str | StageSpec | None:
    """Measure each choice not already measured in `previous` (a resumed file), write its
    record (config {"patch": its --patch spelling, for people}, the exact choice in its trace),
    and return the choice records.pick_patch takes ("off" or a StageSpec), or None when there is nothing
    to choose."""
    workload, todo = choices(measurer.default.source, measurer.default.options)
    if not todo:
        return None
    mine = [r for r in previous if r.get("workload") == workload.key and r.get("trace")]
    done = [_choice(r) for r in mine]
    for i, choice in enumerate(todo, 1):
        if choice in done:
            continue
        progress(f"[tune] patch stage {i}/{len(todo)}: {shown(choice, 200)}")
        outcome, arena = measurer.whole(replace(measurer.default.options, patch=choice))
        rec = record(env, workload, {"patch": str(choice)}, patch_trace(choice), outcome, model=model)
        rec["arena"] = arena
        writer.write(rec)
        mine.append(rec)
        if outcome.status == "ok":
            progress(f"[tune]   {outcome.count:,} {outcome.unit}, arena {arena:,} bytes")
        else:
            progress(f"[tune]   {outcome.status}: {shown(outcome.error, 300)}")
    best = pick_patch(mine)
    if best is None:
        progress("[tune] note: the model without a patch stage was not measured; --patch auto's choice stays")
        return None
    progress(f"[tune] patch stage: {shown(best['config']['patch'], 200)} (arena {best['arena']:,} bytes, "
             f"{best['count']:,} {best['unit']})")
    return _choice(best)


def _choice(rec: dict) -> str | StageSpec | None:
    """The choice a patch record measured, from its trace (the layer names exactly)."""
    return trace_choice(Trace.from_json(rec["trace"]))
