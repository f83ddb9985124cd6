"""The execution order: the topological order with the smallest peak of live bytes."""

import random

import pytest

from microcompile.ir import Graph, Node, Tensor
from microcompile.memory import aliases, best_order, overlap_rules, plan_memory
from microcompile.memory.order import _Costs


def _t(name, n):
    return Tensor(name, (1, n), "float32")


def _residual(shortcut_last: bool) -> Graph:
    """a = relu(x), b = relu(a), s = softmax(x) (the shortcut), y = add(b, s). The relus work in
    place, but over x only once the shortcut has read it: running s first lowers the peak."""
    tensors = {n: _t(n, 256) for n in ("x", "a", "b", "s", "y")}
    nodes = [Node("relu", "a", ("x",), ("a",)), Node("relu", "b", ("a",), ("b",)),
             Node("softmax", "s", ("x",), ("s",), {"beta": 1.0}), Node("add", "y", ("b", "s"), ("y",))]
    if not shortcut_last:
        nodes = [nodes[2], nodes[0], nodes[1], nodes[3]]
    return Graph("res", tensors, tuple(nodes), ("x",), ("y",))


def _plan(g: Graph):
    return plan_memory(g, overlaps=overlap_rules(g, aliases(g)))


def test_shortcut_runs_first_when_that_lowers_the_peak():
    g = _residual(shortcut_last=True)
    rules = overlap_rules(g, aliases(g))
    order = best_order(g, overlaps=rules, alias=aliases(g))
    assert [n.name for n in order] == ["s", "a", "b", "y"]
    assert _plan(g).lower_bound == 3 * 1024
    assert _plan(g.replace(nodes=order)).lower_bound == _plan(g.replace(nodes=order)).arena_bytes == 2 * 1024


def _random_dag(rng, n):
    tensors = {"in": _t("in", 16 * rng.randrange(1, 9))}
    nodes = []
    for i in range(n):
        srcs = rng.sample(list(tensors), min(len(tensors), rng.randrange(1, 3)))
        out = f"t{i}"
        tensors[out] = _t(out, 16 * rng.randrange(1, 9))
        op = "add" if len(srcs) == 2 and tensors[srcs[0]].shape == tensors[srcs[1]].shape else "softmax"
        nodes.append(Node(op, f"n{i}", tuple(srcs[:2] if op == "add" else srcs[:1]), (out,),
                          {} if op == "add" else {"beta": 1.0}))
    used = {i for nd in nodes for i in nd.inputs}
    outs = tuple(t for t in tensors if t not in used and t != "in") or (f"t{n - 1}",)
    return Graph("dag", tensors, tuple(nodes), ("in",), outs)


@pytest.mark.parametrize("seed", range(15))
def test_best_order_is_topological_and_never_worse(seed):
    rng = random.Random(seed)
    g = _random_dag(rng, rng.randrange(2, 12))
    order = best_order(g)
    seen = set(g.inputs)
    for n in order:
        assert all(i in seen for i in n.inputs)
        seen |= set(n.outputs)
    assert sorted(n.name for n in order) == sorted(n.name for n in g.nodes)
    costs = _Costs(g, {}, (), aliases(g))
    index = {n.name: i for i, n in enumerate(g.nodes)}
    assert costs.cost([index[n.name] for n in order]) <= costs.cost(list(range(len(g.nodes))))
    # the DP's peak is the planner's lower bound for that order
    assert costs.cost([index[n.name] for n in order])[0] == plan_memory(g.replace(nodes=order)).lower_bound


@pytest.mark.parametrize("seed", range(15))
def test_incremental_step_equals_the_definition(seed):
    """The beam's step keeps the live bytes as it goes (cost: the node's degree); on random
    DAGs in their own order and in best_order's, it equals the count over every buffer."""
    rng = random.Random(seed)
    g = _random_dag(rng, rng.randrange(2, 14))
    costs = _Costs(g, {n.name: rng.randrange(0, 64) for n in g.nodes}, (), aliases(g))
    index = {n.name: i for i, n in enumerate(g.nodes)}
    for order in (list(range(len(g.nodes))), [index[n.name] for n in best_order(g)]):
        done, live = 0, costs.initial()
        for i in order:
            assert live == sum(costs.size[r] for r in costs.size if costs.live(r, done))
            c, live = costs.step(i, done, live)
            assert c == costs.step_by_definition(i, done)
            done |= 1 << i
