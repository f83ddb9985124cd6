"""The planners place buffers so that no two live buffers share bytes."""

import random

import numpy as np
import pytest

from microcompile.ir import Graph, Node, QuantParams, Tensor
from microcompile.memory import BufferReq, OverlapError, check_no_overlap, greedy_by_size, plan_memory
from microcompile.memory.planner import linear


def _random_reqs(rng, n):
    reqs = []
    for i in range(n):
        first = rng.randrange(0, 10)
        reqs.append(BufferReq(f"b{i}", rng.randrange(1, 5000), first, first + rng.randrange(0, 4)))
    return reqs


@pytest.mark.parametrize("seed", range(30))
def test_greedy_never_overlaps_and_beats_linear(seed):
    rng = random.Random(seed)
    reqs = _random_reqs(rng, rng.randrange(1, 25))
    offsets = greedy_by_size(reqs)
    check_no_overlap(reqs, offsets)
    peak = max(offsets[r.name] + r.size for r in reqs)
    lin = linear(reqs)
    assert peak <= max(lin[r.name] + r.size for r in reqs)
    # Lower bound: the live bytes at the busiest step.
    live = max(sum(r.size for r in reqs if r.first <= s <= r.last) for s in range(15))
    assert peak >= live


def test_disjoint_lifetimes_share_memory():
    reqs = [BufferReq("a", 1000, 0, 1), BufferReq("b", 1000, 2, 3), BufferReq("c", 100, 1, 2)]
    offsets = greedy_by_size(reqs)
    assert offsets["a"] == offsets["b"] == 0
    assert offsets["c"] == 1008  # after a, 16-byte aligned


def test_checker_catches_overlap():
    reqs = [BufferReq("a", 64, 0, 2), BufferReq("b", 64, 1, 3)]
    with pytest.raises(OverlapError, match="overlaps"):
        check_no_overlap(reqs, {"a": 0, "b": 32})
    with pytest.raises(OverlapError, match="aligned"):
        check_no_overlap(reqs, {"a": 0, "b": 72})


def _chain_graph():
    """x -> softmax -> reshape (view) -> softmax -> y, float32."""
    t = lambda name, shape: Tensor(name, shape, "float32")
    tensors = {n: t(n, s) for n, s in [("x", (1, 8)), ("a", (1, 8)), ("b", (2, 4)), ("y", (2, 4))]}
    nodes = (Node("softmax", "s0", ("x",), ("a",), {"beta": 1.0}),
             Node("reshape", "r0", ("a",), ("b",), {"shape": (2, 4)}),
             Node("softmax", "s1", ("b",), ("y",), {"beta": 1.0}))
    return Graph("chain", tensors, nodes, ("x",), ("y",))


def test_plan_graph_views_alias_and_scratch():
    g = _chain_graph()
    plan = plan_memory(g, scratch={"s1": 40})
    assert plan.offset("b") == plan.offset("a")          # reshape is a view
    assert plan.offset("y") != plan.offset("b")          # output never overlaps its input
    assert plan.offset("x") != plan.offset("a")
    # Step 2 holds a (=b), y and the scratch: 32 + 32 + 40 bytes, each 16-aligned -> 112.
    assert plan.arena_bytes == 112
    assert plan.arena_bytes % 16 == 0
    assert plan.timeline()[2] == 32 + 32 + 40
    check_no_overlap(list(plan.buffers), plan.offsets)


# ---------------------------------------------------------------- in-place overlaps, lower bound, search

from itertools import product  # noqa: E402

from microcompile.memory import Overlap, branch_and_bound, greedy_by_conflict, lower_bound  # noqa: E402
from microcompile.memory.planner import arena_end  # noqa: E402

PLANNER_FNS = (greedy_by_size, greedy_by_conflict, branch_and_bound)


def _random_chain_problem(rng, n):
    """Random buffers (sizes multiples of 16) and in-place overlaps between a buffer and one
    that dies at the step where it is born."""
    reqs = []
    for i in range(n):
        first = rng.randrange(0, 8)
        reqs.append(BufferReq(f"b{i}", 16 * rng.randrange(1, 40), first, first + rng.randrange(0, 4)))
    overlaps = [Overlap(o.name, s.name, -16 * rng.randrange(0, 6))
                for o in reqs for s in reqs if s.last == o.first and s is not o and rng.random() < 0.5]
    return reqs, overlaps


@pytest.mark.parametrize("seed", range(40))
def test_planners_fuzz_against_the_lower_bound(seed):
    rng = random.Random(seed)
    reqs, overlaps = _random_chain_problem(rng, rng.randrange(1, 18))
    bound = lower_bound(reqs, overlaps)
    ends = {}
    for fn in PLANNER_FNS:
        offsets = fn(reqs, overlaps)
        check_no_overlap(reqs, offsets, overlaps)
        ends[fn.__name__] = arena_end(reqs, offsets)
        assert ends[fn.__name__] >= bound
    assert ends["branch_and_bound"] <= min(ends["greedy_by_size"], ends["greedy_by_conflict"])


def _brute_force(reqs) -> int:
    """The smallest arena over every placement on the 16-byte grid (tiny problems only)."""
    top = sum(r.size for r in reqs)
    best = top
    for offs in product(range(0, top, 16), repeat=len(reqs)):
        offsets = {r.name: o for r, o in zip(reqs, offs)}
        end = arena_end(reqs, offsets)
        if end >= best:
            continue
        try:
            check_no_overlap(reqs, offsets)
        except OverlapError:
            continue
        best = end
    return best


@pytest.mark.parametrize("seed", range(12))
def test_branch_and_bound_is_optimal_on_small_problems(seed):
    rng = random.Random(100 + seed)
    reqs = []
    for i in range(4):
        first = rng.randrange(0, 4)
        reqs.append(BufferReq(f"b{i}", 16 * rng.randrange(1, 4), first, first + rng.randrange(0, 3)))
    assert arena_end(reqs, branch_and_bound(reqs)) == _brute_force(reqs)


def test_overlap_checker_honours_max_shift():
    reqs = [BufferReq("x", 64, 0, 1), BufferReq("y", 64, 1, 2)]
    rule = [Overlap("y", "x", -16)]
    check_no_overlap(reqs, {"x": 16, "y": 0}, rule)          # y 16 bytes below x: allowed
    with pytest.raises(OverlapError):
        check_no_overlap(reqs, {"x": 0, "y": 0}, rule)       # exactly over x: beyond max_shift
    with pytest.raises(OverlapError):
        check_no_overlap(reqs, {"x": 16, "y": 0})            # no rule, no sharing
    # the rule only holds where x dies as y is born
    later = [BufferReq("x", 64, 0, 2), BufferReq("y", 64, 1, 2)]
    with pytest.raises(OverlapError):
        check_no_overlap(later, {"x": 16, "y": 0}, rule)


def test_in_place_chain_reaches_the_bound():
    """A residual block: the shortcut x lives on while conv1 -> y1 and conv2 writes y2 over y1
    (one row of slack below it): the lower bound is x + y1 + slack, which the planners reach
    only by leaving the slack free under y1."""
    reqs = [BufferReq("x", 1024, 0, 3), BufferReq("y1", 1024, 1, 2), BufferReq("y2", 1024, 2, 3)]
    rule = [Overlap("y2", "y1", -64)]
    assert lower_bound(reqs, rule) == 2048 + 64
    for fn in PLANNER_FNS:
        offsets = fn(reqs, rule)
        check_no_overlap(reqs, offsets, rule)
        assert arena_end(reqs, offsets) == 2048 + 64


def test_memory_plot_legend_labels_are_distinct():
    """TF-style names that share a long tail get distinct legend labels (papercut: the inspect
    --memory --plot legend showed several identical names)."""
    from microcompile.report.memory import legend_labels

    names = ["model/block_1/conv2d/Conv2D;model/block_1/relu", "model/block_2/conv2d/Conv2D;model/block_2/relu",
             "x" * 40 + "/same/tail/of/a/long/name", "y" * 40 + "/same/tail/of/a/long/name", "short"]
    labels = legend_labels(names)
    assert len(set(labels.values())) == len(names)
    assert labels["short"] == "short" and all(len(v) <= 31 for v in labels.values())
