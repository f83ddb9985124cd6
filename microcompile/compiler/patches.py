"""Which patch stage a model gets (ir/ops_patch.py, transform/patch_stage.py): `--patch`.

  off                no stage
  Bx1@[FIRST:]LAST   the user's: ops FIRST..LAST (FIRST: the start of LAST's chain), their
                     output in B bands of full rows (a grid of B x 1)
  auto (default)     the stage with the smallest arena whose estimated extra instructions stay
                     within PATCH_BUDGET of the model's, or none when no stage makes the arena
                     smaller

Auto considers every chain of at least STAGE_MIN_BYTES of feature maps, ending after each op
that shrinks the map (a stride, fewer channels), in bands of each of BAND_ROWS rows. A cheap bound (the live
bytes of each step without the kernels' scratch, windows counted) ranks them; the best few are
planned in full (their kernels lowered and scheduled), and the stage is kept only when its
planned arena is smaller than the plan without one.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from .. import memory
from ..errors import UserError, shown
from ..ir import Graph, ops
from ..ir.ops_patch import PatchStage, vertical
from ..transform.patch_stage import StageSpec, chains, make_stage, rows_per_band, stage_nodes

BAND_ROWS = (1, 2, 4, 8)
PATCH_BUDGET = 0.10           # at most 10 % more instructions (estimated)
STAGE_MIN_BYTES = 16 * 1024   # smaller maps: a stage's windows and calls cost more than they save
FULL_PLANS = 2                # candidates planned in full

# The estimate of what a stage adds (instructions), from mps2-an386 runs of the MobileNet
# fixtures (benchmarks/memory.py measures it): a kernel call per band and op; the input rows
# that an earlier band already read (the window kernels set each of them up again); the
# window rows each band moves to the top; and a depthwise part's per-pixel kernels where the
# whole-layer kernel's ring does not fit the stage's scratch (the stage is at the arena's peak).
CALL_COST = 250
REREAD_COST_PER_BYTE = 1.0
MOVE_COST_PER_BYTE = 0.3
DEPTHWISE_COST_PER_MAC = 0.75
# Instructions per MAC of the kernels without a stage, for the budget (kws, ResNet-8 and the
# MobileNets run at 1.2-1.6 on the M4 twin).
INSTRUCTIONS_PER_MAC = 1.3


# The patch choice in tuning records: its workload family, and the knob its trace records.
PATCH_FAMILY = "patch"


@dataclass(frozen=True)
class PatchChoice:
    """What `--patch` gave: the stage (None: none), the arena without and with it (bytes, as
    planned; None when not planned), and the estimated extra instructions."""

    spec: StageSpec | None
    arena_without: int | None = None
    arena_with: int | None = None
    extra_instructions: int = 0
    mode: str = "auto"


def parse_patch(text: str) -> str | StageSpec:
    """--patch: "auto", "off" or Bx1@[FIRST:]LAST (UserError naming the form otherwise; FIRST
    is left empty for the start of LAST's chain)."""
    if text in ("auto", "off"):
        return text
    m = re.fullmatch(r"(\d+)x(\d+)@(?:([^:]+):)?([^:]+)", text)
    example = "e.g. --patch 24x1@conv_2d_1:depthwise_conv_2d_6 (24 bands from conv_2d_1 to depthwise_conv_2d_6)"
    if not m or int(m.group(1)) < 1:
        raise UserError(f"--patch {shown(text)} is not auto, off or BANDSx1@[FIRST:]LAST",
                        hint=f"{example}; `inspect --memory` names the layers")
    if int(m.group(2)) != 1:
        raise UserError(f"--patch {shown(text)}: patches are bands of full rows (a grid of Bx1); a stage keeps the "
                        "rows two bands share instead of computing them twice, which columns would",
                        hint=example)
    return StageSpec(m.group(3) or "", m.group(4), int(m.group(1)))


def user_stage(g: Graph, spec: StageSpec) -> Graph:
    """`g` with the user's stage; UserError naming the chains when it is not one."""
    spec = complete(g, spec)
    names = "; ".join(f"{shown(c[0].name)}..{shown(c[-1].name)}" for c in chains(g)) or "none in this model"
    nodes = stage_nodes(g, spec)
    if nodes is None:
        raise UserError(f"--patch: layers {shown(spec.first or '?')}..{shown(spec.last)} are not one chain of "
                        "convolutions, depthwise convolutions, pools and elementwise ops",
                        hint=f"this model's chains (FIRST..LAST): {names}")
    rows = g.tensors[nodes[-1].outputs[0]].shape[1]
    if spec.bands > rows:
        raise UserError(f"--patch: {spec.bands} bands, but layer {shown(spec.last)} has {rows} output rows",
                        hint=f"--patch Bx1@{shown(spec.first)}:{shown(spec.last)} with B from 1 to {rows}")
    return make_stage(g, spec)


def complete(g: Graph, spec: StageSpec) -> StageSpec:
    """`spec` with FIRST filled in (the start of LAST's chain) and its bands as the stage has
    them (7 bands of a 24-row output are 6 bands of 4 rows)."""
    for c in chains(g):
        names = [n.name for n in c]
        if spec.last in names:
            first = spec.first or names[0]
            h = g.tensors[c[names.index(spec.last)].outputs[0]].shape[1]
            bands = -(-h // rows_per_band(h, spec.bands)) if 1 <= spec.bands <= h else spec.bands
            return StageSpec(first, spec.last, bands)
    return spec


def candidates(g: Graph) -> list[StageSpec]:
    """Stages auto considers: from the start of each chain with a map of STAGE_MIN_BYTES or
    more, to after each op that shrinks its input, in bands of each of BAND_ROWS."""
    out = []
    for chain in chains(g):
        if max(g.tensors[n.outputs[0]].nbytes for n in chain) < STAGE_MIN_BYTES:
            continue
        for n in chain[1:]:
            if g.tensors[n.outputs[0]].nbytes >= g.tensors[n.inputs[0]].nbytes:
                continue
            h = g.tensors[n.outputs[0]].shape[1]
            for bands in dict.fromkeys(-(-h // rows) for rows in BAND_ROWS if rows <= h // 2):
                out.append(StageSpec(chain[0].name, n.name, bands))
    return out


def estimated_extra(body: PatchStage) -> int:
    """Instructions the stage adds over its ops run whole (see CALL_COST)."""
    total = 0
    for i, b in enumerate(body.bands):
        for j, (o0, o1) in enumerate(b.out):
            if o1 <= o0:
                continue
            kh, s, d, _ = vertical(body.graph, body.nodes[j])
            fresh = (o1 - o0) * s
            reread = max(0, (b.need[j][1] - b.need[j][0]) - fresh) if i else 0
            total += CALL_COST + REREAD_COST_PER_BYTE * reread * body.row_bytes(j)
            if body.nodes[j].op == "depthwise_conv2d":
                y = body.graph.tensors[body.tensor(j + 1)]
                total += DEPTHWISE_COST_PER_MAC * (o1 - o0) * (y.size // y.shape[1]) * kh * kh
        for t, move in enumerate(body.moves(i), 1):
            if move is not None:
                total += MOVE_COST_PER_BYTE * move[1] * body.row_bytes(t)
    return int(total)


def _bound(g: Graph, scratch: dict[str, int]) -> int:
    alias = memory.aliases(g, {t: a for t, (_, a) in memory.concat_slices(g).items()})
    return memory.lower_bound(memory.liveness.analyze(g, scratch, alias), memory.overlap_rules(g, alias))


def _stage(g: Graph):
    """The patch_stage node of a graph make_stage made."""
    return next(n for n in g.nodes if n.op == "patch_stage")


def ranked(g: Graph) -> list[tuple[int, StageSpec, Graph, int]]:
    """(bound, spec, staged graph, estimated extra instructions) of each candidate within the
    budget whose bound is below the graph's own, smallest bound first (then fewer bands)."""
    base = _bound(g, {})
    budget = PATCH_BUDGET * INSTRUCTIONS_PER_MAC * sum(int(ops.get(n.op).macs(g, n)) for n in g.nodes)
    out = []
    for spec in candidates(g):
        staged = make_stage(g, spec)
        stage = _stage(staged)
        extra = estimated_extra(stage.attrs["body"])
        if extra > budget:
            continue
        bound = _bound(staged, {stage.name: stage.attrs["body"].window_bytes()})
        if bound < base:
            out.append((bound, spec, staged, extra))
    out.sort(key=lambda c: (c[0], c[1].bands))
    return out


def patch_key(g: Graph) -> str:
    """The tuning records' workload key of the patch choice of graph `g` (after the passes): a
    digest of its layers, their tensors and shapes, so a record applies to this graph only."""
    h = hashlib.sha256()
    for n in g.nodes:
        h.update(repr((n.op, n.name, tuple(n.inputs), tuple(n.outputs))).encode())
    for name in sorted(g.tensors):
        t = g.tensors[name]
        h.update(repr((name, tuple(t.shape), t.dtype)).encode())
    return f"{PATCH_FAMILY}:{h.hexdigest()[:16]}"


def patch_trace(choice: str | StageSpec):
    """The record's trace of a patch choice, "off" or a StageSpec: one knob decision that holds
    the stage's layer names as they are (a name may hold ':' or '@', which the --patch
    spelling cannot carry)."""
    from ..schedule import Decision, Trace
    args = (PATCH_FAMILY, "off") if choice == "off" else (PATCH_FAMILY, choice.first, choice.last, choice.bands)
    return Trace((Decision("knob", args),))


def trace_choice(trace) -> str | StageSpec | None:
    """The patch choice ("off" or a StageSpec) patch_trace wrote into `trace`, or None."""
    args = next((d.args[1:] for d in trace.decisions if d.primitive == "knob" and d.args[0] == PATCH_FAMILY), None)
    if args is None:
        return None
    return "off" if tuple(args) == ("off",) else StageSpec(args[0], args[1], int(args[2]))


def tuned_choice(graph: Graph, tuned) -> str | StageSpec | None:
    """The patch choice a tuning record made for `graph` ("off" or a StageSpec), or None."""
    trace = dict(tuned or {}).get(patch_key(graph))
    return None if trace is None else trace_choice(trace)


def plan_with_patches(graph: Graph, board, options):
    """schedule_and_plan (compiler/plan.py) of `graph` with the stage `options.patch` asks for:
    (its result, PatchChoice)."""
    from .plan import schedule_and_plan

    def plan(g):
        return schedule_and_plan(g, board, options.flash_budget, dict(options.tuned) or None)

    mode = options.patch
    if mode == "auto":
        # a tuning record of this graph's choice (autotune/patch_search.py) replaces the estimate
        tuned = tuned_choice(graph, options.tuned)
        if tuned == "off":
            return plan(graph), PatchChoice(None, mode="off (tuned)")
        if tuned is not None:
            staged = user_stage(graph, tuned)
            spec = complete(graph, tuned)
            return plan(staged), PatchChoice(spec, None, None, estimated_extra(_stage(staged).attrs["body"]),
                                             mode=f"{spec} (tuned)")
    if mode == "off":
        return plan(graph), PatchChoice(None, mode="off")
    if isinstance(mode, StageSpec):
        staged = user_stage(graph, mode)
        spec = complete(graph, mode)
        return plan(staged), PatchChoice(spec, None, None, estimated_extra(_stage(staged).attrs["body"]),
                                         mode=str(spec))
    base = plan(graph)
    chosen, choice = base, PatchChoice(None, base[1].arena_bytes, None)
    for _, spec, staged, extra in ranked(graph)[:FULL_PLANS]:
        r = plan(staged)
        if r[1].arena_bytes < chosen[1].arena_bytes:
            chosen, choice = r, PatchChoice(spec, base[1].arena_bytes, r[1].arena_bytes, extra)
    return chosen, choice
