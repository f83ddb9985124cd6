"""The compiler's policy between the graph and the C: lower and schedule every kernel, choose
which get int16, int8 or packed int4 weights against the flash, order the kernels for the smallest peak, plan the
arena, and grow im2col blocks into the slack."""

from __future__ import annotations

from dataclasses import replace

from .. import memory
from ..errors import shown
from ..ir import Graph, ops
from ..ir.budget import Tally
from ..lower import lower_node
from ..memory import MemoryPlan
from ..schedule import blocks, default_schedule, widening
from ..schedule.primitives import PRIMITIVES, ScheduleError
from ..schedule.trace import Decision, Trace
from ..schedule.workload import workload_key
from ..target import Board


def schedule_and_plan(graph: Graph, board: Board, flash_budget: int | None = None, tuned: dict | None = None):
    """Lower and schedule every node that needs code (int16 weights and tables where the flash
    allows and the arena does not grow, schedule/widening.py), pick the execution order with the
    smallest peak, and plan the arena: (kernels in order, plan, graph in that order,
    {widened node: extra flash bytes}, {tuned node: workload key}, {node whose weights are packed
    int4: flash bytes saved against int8}). A node whose workload key
    is in `tuned` replays that trace (its widening is the trace's, not a candidate here); a
    trace that does not replay is a ScheduleError."""
    slices = memory.concat_slices(graph)
    # Views (reshape) and in-place concatenations are no code: their bytes are planned in place.
    no_code = {n.name for n in graph.nodes if ops.get(n.op).is_view} | {c for c, _ in slices.values()}
    target = board.target
    narrow, wide, packed, candidates, tuned_nodes, lowered = {}, {}, {}, [], {}, {}
    # Each repacked weight is checked as it is made (schedule/); their sum, here, layer by layer.
    consts = Tally("scheduling (weights repacked, int16 copies)")
    for node in graph.nodes:
        if node.name in no_code:
            continue
        func = lowered[node.name] = lower_node(graph, node, target)
        key = workload_key(node, func, target) if tuned else None
        if key in (tuned or {}):
            narrow[node.name] = (tuned[key].apply(func), tuned[key])
            tuned_nodes[node.name] = key
            continue
        narrow[node.name] = default_schedule(func, target, wide=False)
        w = default_schedule(func, target, wide=True)
        consts.add(f"layer {shown(node.name)!r} ({node.op})", _const_bytes(narrow[node.name][0]) + _const_bytes(w[0]))
        widens = _const_bytes(w[0]) > _const_bytes(narrow[node.name][0])
        p = _packed(narrow[node.name], "unpack")
        if p is not None:
            packed[node.name] = (p, _packed(narrow[node.name], "in_place"), _packed(w, "unpack") if widens else None)
        if widens or p is not None:
            if widens:
                wide[node.name] = w
            gain = widening.estimate_gain(node.op, int(func.attrs.get("macs", 0)),
                                          graph.tensors[node.outputs[0]].size)
            n_bytes = _const_bytes(narrow[node.name][0])
            candidates.append(widening.Candidate(node.name, gain, n_bytes,
                                                 _const_bytes(w[0]) if node.name in wide else n_bytes))
    alias = memory.aliases(graph, {t: a for t, (_, a) in slices.items()})
    rules = memory.overlap_rules(graph, alias, skip=no_code)

    def planned(scheduled, planner=None):
        scratch = {name: f.scratch_bytes for name, (f, _) in scheduled.items() if f.scratch_bytes}
        g = graph.replace(nodes=memory.best_order(graph, scratch, rules, alias))
        return g, memory.plan_memory(g, scratch, overlaps=rules, slices={t: a for t, (_, a) in slices.items()},
                                     planner=planner)

    # Widening never raises the arena: a wide variant whose scratch (e.g. an int16 copy of a
    # fully connected layer's input) would lift its step above the int8 plan's peak stays int8.
    # (Only the int8 plan's live bytes per step matter here, which any planner gives.)
    g0, p0 = planned(narrow, "greedy_by_size")
    live = dict(zip((n.name for n in g0.nodes), p0.timeline()))
    peak = p0.lower_bound
    # A patch stage is exempt: it is at the peak by design, its parts share one scratch region
    # (a few bytes more for the wide parts), and its narrow form runs the depthwise parts as
    # plain loops; compiler/patches.py compares the arenas of the plans with and without it.
    stages = {n.name for n in graph.nodes if n.op == "patch_stage"}
    candidates = [c if c.name not in wide or c.name in stages
                  or live[c.name] - narrow[c.name][0].scratch_bytes + wide[c.name][0].scratch_bytes <= peak
                  else replace(c, wide_bytes=c.narrow_bytes) for c in candidates]
    # Packed int4 weights (chosen only where the flash needs them), fastest first among the forms
    # that keep the step under the int8 plan's peak: unpacked into scratch as int16 for the wide
    # kernels (where the flash is the same: a wide depthwise kernel adds border tables), unpacked
    # as int8, or read in place by the DSP panel kernels (no scratch; a fully connected layer,
    # whose weights are each read once, always reads them in place); else unpacked as int8,
    # raising the arena.
    fits = {name: live[name] - narrow[name][0].scratch_bytes for name in packed}
    wide_ok = {c.name for c in candidates if c.extra > 0}
    chosen = {}
    for name, (pn, pi, pw) in packed.items():
        node_op = pn[0].attrs.get("op")
        if pi is not None and (node_op == "fully_connected" or fits[name] + pn[0].scratch_bytes > peak):
            chosen[name] = (pi, "in_place")
        elif (pw is not None and name in wide_ok and _const_bytes(pw[0]) <= _const_bytes(pn[0])
              and fits[name] + pw[0].scratch_bytes <= peak):
            chosen[name] = (pw, "int16")
        else:
            chosen[name] = (pn, "int8")
    packed = {name: sched for name, (sched, _) in chosen.items()}
    candidates = [replace(c, packed_bytes=_const_bytes(packed[c.name][0]), packed_wide=chosen[c.name][1] == "int16",
                          unpack_cost=_packed_cost(chosen[c.name][1], narrow[c.name][0]))
                  if c.name in packed else c for c in candidates]
    candidates = [c for c in candidates if c.extra > 0 or c.packed_bytes is not None]
    fixed = sum(_const_bytes(f) for name, (f, _) in narrow.items() if name not in {c.name for c in candidates})
    budget = _weights_budget(graph, board, flash_budget, len(narrow))
    forms = widening.choose_storage(candidates, fixed, budget)
    widened = {c.name: c.extra for c in candidates if forms[c.name] == "int16"}
    stored_int4 = {c.name: c.narrow_bytes - c.packed_bytes for c in candidates if forms[c.name] == "int4"}
    scheduled = {name: wide[name] if name in widened else packed[name] if name in stored_int4 else sched
                 for name, sched in narrow.items()}
    graph, plan = planned(scheduled)
    room = None if budget is None else budget - sum(_const_bytes(f) for f, _ in scheduled.values())
    graph, plan = _grow_blocks(graph, plan, scheduled,
                               {n: f for n, f in lowered.items() if n not in tuned_nodes and n not in stored_int4},
                               widened, target, planned, room)
    kernels = [(n, *scheduled[n.name]) for n in graph.nodes if n.name in scheduled]
    return kernels, plan, graph, widened, tuned_nodes, stored_int4


WEIGHTS = "w"    # the weights' buffer in conv2d, depthwise_conv2d and fully_connected kernels (lower/)


def _weights(f):
    return next((b for b in f.buffers if b.name == WEIGHTS and b.scope == "const"), None)


def _packed(sched: tuple, mode: str) -> tuple | None:
    """`sched` with its weights stored as packed int4 (store_int4 in `mode`), or None when it
    has none, they are not int4 values, or (in place) no kernel reads them so."""
    f, t = sched
    if _weights(f) is None:
        return None
    try:
        return PRIMITIVES["store_int4"](f, WEIGHTS, mode), Trace(t.decisions + (Decision("store_int4", (WEIGHTS, mode)),))
    except ScheduleError:
        return None


def _packed_cost(form: str, narrow_func) -> float:
    """Estimated instructions a packed form adds per inference over int8 weights."""
    if form == "in_place":
        return widening.IN_PLACE_COST_PER_MAC * int(narrow_func.attrs.get("macs", 0))
    return widening.UNPACK_COST_PER_WEIGHT * _weight_count(narrow_func)


def _weight_count(f) -> int:
    w = _weights(f)
    return w.size if w is not None else 0


def _grow_blocks(graph: Graph, plan: MemoryPlan, scheduled: dict, lowered: dict, widened: dict, target, planned,
                 room: int | None = None):
    """Give conv2d kernels off the arena's peak larger im2col blocks (schedule/blocks.py), never
    growing the arena: each kernel takes the largest block within its slack (the plan's peak of
    live bytes, its lower bound, less the bytes live at its step); all together are re-planned, and if that arena is larger (the order
    or the placement changed), one kernel at a time, each kept only if the arena stays. A change
    that adds constants (a fully connected layer's fused kernel: its records) is kept only while
    they fit `room`, the flash the weights budget has left (None: no limit). Updates
    `scheduled` in place; returns the graph in its order and the plan."""
    timeline = plan.timeline()
    live = dict(zip((n.name for n in graph.nodes), timeline))
    bound = max(timeline, default=0)           # plan.lower_bound, computed once
    bigger = {}
    for name, func in lowered.items():
        f, t = scheduled[name]
        grown = blocks.larger_block(func, target, name in widened, f, t, bound - live[name])
        if grown is None:
            continue
        added = _const_bytes(grown[0]) - _const_bytes(f)
        if room is not None and added > room:
            continue
        room = None if room is None else room - max(added, 0)
        bigger[name] = grown
    if not bigger:
        return graph, plan
    g, p = planned({**scheduled, **bigger})
    if p.arena_bytes <= plan.arena_bytes:
        scheduled.update(bigger)
        return g, p
    for name, grown in bigger.items():
        g, p = planned({**scheduled, name: grown})
        if p.arena_bytes <= plan.arena_bytes:
            scheduled[name] = grown
            graph, plan = g, p
    return graph, plan


def _const_bytes(f) -> int:
    return sum(b.nbytes for b in f.buffers if b.scope == "const")


def _weights_budget(graph: Graph, board: Board, flash_budget: int | None, kernels: int) -> int | None:
    """Flash the weights may take: --flash-budget (or the board's flash) less the code
    estimate; None on the host, which has no flash to fit."""
    total = flash_budget if flash_budget is not None else (board.mcu.flash.size if board.mcu.flash else None)
    if total is None:
        return None
    inputs = sum(graph.tensors[t].nbytes for t in graph.inputs)
    return total - widening.code_estimate(kernels, inputs)
