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
