"""tabulate: an int8 ADD's per-input rescale becomes a 256-entry table with the same values,
and the default schedule does it only when flash may be spent (wide is not False)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


from support.lower_cases import build_graph, cases, matches, random_inputs, reference, run_lowered  # noqa: E402
from microcompile.lower import lower_node  # noqa: E402
from microcompile.schedule import ScheduleError, Trace, default_schedule  # noqa: E402
from microcompile.schedule.tabulate import tabulate  # noqa: E402
from microcompile.tir import nodes as tir  # noqa: E402
from microcompile.tir.printer import tir_str  # noqa: E402

ADDS = [c for c in cases("add", "int8", 6, seed=3)]


@pytest.mark.parametrize("case", ADDS, ids=lambda c: f"add-{c['index']}")
def test_tables_compute_what_the_arithmetic_did(case):
    g = build_graph(case)
    f = lower_node(g, g.nodes[0])
    ins = random_inputs(g, case["seed"])
    tabled, trace = default_schedule(f, None)
    consts = {b.name: b for b in tabled.buffers if b.scope == "const"}
    assert {"rescale_a", "rescale_b"} <= set(consts) and consts["rescale_a"].shape == (256,)
    assert not any(isinstance(n, tir.Call) and n.name == "mc_mul_by_qm_smaller_than_one_exp"
                   for n in tir.walk(tabled.body))
    assert matches(run_lowered(g, tabled, ins), reference(g, ins))
    assert tir_str(Trace.loads(trace.dumps()).apply(f)) == tir_str(tabled)   # replays to the same loops
    plain, _ = default_schedule(f, None, wide=False)                        # no flash to spare
    assert "rescale_a" not in {b.name for b in plain.buffers}
    assert matches(run_lowered(g, plain, ins), reference(g, ins))


def test_tabulate_needs_an_int8_operand():
    g = build_graph(ADDS[0])
    f = lower_node(g, g.nodes[0])
    with pytest.raises(ScheduleError, match="no int8 buffer"):
        tabulate(f, "nothing", "t")
    t = tabulate(f, "a", "ta")
    with pytest.raises(ScheduleError, match="exists already"):
        tabulate(t, "a", "ta")
