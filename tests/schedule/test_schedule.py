"""Schedule primitives keep semantics (loop-IR interpreter before/after), traces round-trip
through JSON and replay to identical C."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


from support.lower_cases import build_graph, cases, matches, random_inputs, run_lowered  # noqa: E402

from microcompile.codegen.c_emitter import CEmitter  # noqa: E402
from microcompile.tir import nodes as tir  # noqa: E402
from microcompile.tir.printer import tir_str  # noqa: E402
from microcompile.lower import lower_node  # noqa: E402
from microcompile.schedule import (Schedule, ScheduleError, Trace, default_schedule, reorder, split,  # noqa: E402
                                   unroll)


def _conv(dtype="int8", **over):
    case = dict(cases("conv2d", dtype, 1, seed=3)[0], hw=5, cin=3, cout=7, kernel=3, stride=1,
                dilation=1, batch=1)
    g = build_graph({**case, **over})
    return g, lower_node(g, g.nodes[0])


# (description, schedule steps) applied to a conv2d: each must leave results unchanged.
PLANS = {
    "split divisible": [("split", "kh", 3)],
    "split with tail": [("split", "oc", 4)],
    "reorder outer": [("reorder", "ow", "oh")],
    "reorder reduction": [("reorder", "ic", "kh")],
    "unroll": [("unroll", "kw")],
    "split+reorder+unroll": [("split", "oc", 2), ("reorder", "oc_i", "ow"), ("unroll", "kw")],
}


@pytest.mark.parametrize("dtype", ["int8", "float32"])
@pytest.mark.parametrize("plan", sorted(PLANS))
def test_primitives_preserve_semantics(plan, dtype):
    g, f = _conv(dtype, padding="SAME")
    sch = Schedule(f)
    for prim, *args in PLANS[plan]:
        getattr(sch, prim)(*args)
    ins = random_inputs(g, 1)
    before, after = run_lowered(g, f, ins), run_lowered(g, sch.func, ins)
    # int8 exactly; float32 may sum in another order when a reduction loop moves
    assert matches(after, before)
    assert tir_str(sch.func) != tir_str(f)


def test_split_shape():
    _, f = _conv()
    s = split(f, "oc", 4)
    loops = {n.var.name: n.extent for n in tir.walk(s.body) if isinstance(n, tir.For)}
    assert loops["oc_o"] == 2 and loops["oc_i"] == 4 and "oc" not in loops
    assert any(isinstance(n, tir.IfThenElse) for n in tir.walk(s.body))          # 7 % 4 != 0: guard
    assert not any(isinstance(n, tir.IfThenElse) for n in tir.walk(split(f, "kh", 3).body))


def test_replace_unique_rebuilds_only_the_path_and_equals_rewrite():
    """replace_loop's fast path: the one matching node replaced, its ancestors rebuilt, every
    other subtree the same object; the same tree as a full rewrite; None when two match."""
    _, f = _conv()
    named = lambda n: isinstance(n, tir.For) and n.var.name == "kw"            # noqa: E731
    unrolled = lambda n: tir.replace(n, extent=n.extent)                        # a new, equal node  # noqa: E731
    fast = tir.replace_unique(f.body, named, unrolled)
    assert fast == tir.rewrite(f.body, lambda n: unrolled(n) if named(n) else None) and fast is not f.body
    kept = {id(n) for n in tir.walk(f.body)}
    changed = [n for n in tir.walk(fast) if id(n) not in kept]
    assert changed and all(named(n) or any(named(m) for m in tir.walk(n)) for n in changed)
    assert tir.replace_unique(f.body, named, lambda n: None) is f.body
    assert tir.replace_unique(f.body, lambda n: isinstance(n, tir.For), unrolled) is None      # several loops
    outer = tir.replace_unique(f.body, lambda n: isinstance(n, tir.For), unrolled, nested=False)  # the outermost
    assert outer is not None and outer == f.body
    assert tir.replace_unique(f.body, lambda n: False, unrolled) is None


def test_reorder_needs_a_perfect_nest():
    _, f = _conv()
    with pytest.raises(ScheduleError, match="not perfectly nested"):
        reorder(f, "kh", "oc")        # an Allocate/Store sits between oc and kh
    with pytest.raises(ScheduleError, match="no loop named"):
        unroll(f, "nope")


def _c(f) -> str:
    return CEmitter({id(b): f"w_{b.name}" for b in f.buffers if b.scope == "const"}).function(
        f, "k", {b.name: 0 for b in f.buffers}, [])


def test_trace_round_trips_through_json_to_identical_c():
    _, f = _conv(padding="SAME")
    sch = Schedule(f).split("oc", 2).reorder("oc_i", "ow").unroll("kw")
    text = sch.trace.dumps()
    assert text == '[{"args": ["oc", 2], "primitive": "split"}, {"args": ["oc_i", "ow"], "primitive": "reorder"}, ' \
                   '{"args": ["kw"], "primitive": "unroll"}]'
    replayed = Trace.loads(text).apply(f)
    assert _c(replayed) == _c(sch.func)
    assert "#pragma GCC unroll 3" in _c(replayed)


def test_default_schedule_unrolls_short_innermost_loops():
    _, f = _conv("float32", cin=1)   # float conv: no GEMM schedule, only the unroll rule
    g2, trace = default_schedule(f, None)
    assert [d.to_json() for d in trace.decisions] == [{"primitive": "unroll", "args": ["kw"]}]
    assert Trace.from_json(trace.to_json()).apply(f).body == g2.body


def test_unknown_primitive_in_trace():
    with pytest.raises(ScheduleError, match="unknown schedule primitive"):
        Trace.from_json([{"primitive": "no_such_primitive", "args": []}])
