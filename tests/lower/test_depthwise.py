"""The depthwise border/interior split: each plan row is one op_cases depthwise case with
the knobs that pick a region layout pinned; the lowering must have no bounds checks at all
and compute exactly what the numpy interpreter computes (loop-IR interpreter)."""

from __future__ import annotations

import pytest

from support.lower_cases import (DEPTHWISE_SPLITS as SPLITS, build_graph, depthwise_case as _case, matches,
                                 random_inputs, reference, run_lowered)
from microcompile.tir import nodes as tir
from microcompile.lower import lower_node
from microcompile.lower.depthwise import tap_runs

DTYPES = ("int8", "float32")


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", SPLITS)
def test_split_has_no_bounds_checks_and_matches_interpreter(name, dtype):
    g = build_graph(_case(name, dtype))
    f = lower_node(g, g.nodes[0])
    assert not any(isinstance(n, (tir.Select, tir.IfThenElse)) for n in tir.walk(f.body))
    ins = random_inputs(g, 3)
    assert matches(run_lowered(g, f, ins), reference(g, ins))


@pytest.mark.parametrize("args, want", [
    # out, in, kernel, stride, dilation, pad -> (start, length, valid taps)
    ((6, 6, 3, 1, 1, 1), [(0, 1, (1, 2)), (1, 4, (0, 1, 2)), (5, 1, (0, 1))]),
    ((3, 6, 3, 2, 1, 0), [(0, 2, (0, 1, 2)), (2, 1, (0, 1))]),
    ((5, 9, 3, 2, 1, 1), [(0, 1, (1, 2)), (1, 3, (0, 1, 2)), (4, 1, (0, 1))]),
    ((3, 3, 5, 1, 1, 2), [(0, 1, (2, 3, 4)), (1, 1, (1, 2, 3)), (2, 1, (0, 1, 2))]),
])
def test_tap_runs(args, want):
    assert tap_runs(*args) == want


def test_interior_is_one_region_per_run_pair():
    """25x5 with a 3x3 SAME filter (the kws layers): 3 row runs x 3 column runs."""
    g = build_graph(dict(_case("3x3-s1-same", "int8"), hw=5, batch=1))
    f = lower_node(g, g.nodes[0])
    accs = {n.buffer.name for n in tir.walk(f.body) if isinstance(n, tir.Allocate)}
    assert len(accs) == 9


def test_per_tensor_multiplier_is_an_immediate():
    g = build_graph(_case("per-tensor", "int8"))
    f = lower_node(g, g.nodes[0])
    names = {b.name for b in f.buffers if b.scope == "const"}
    assert {"w", "bias"} <= names and not names & {"mult", "shift"}


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an385"])
@pytest.mark.parametrize("name", ["3x3-s1-same", "3x3-s2-same-odd", "5x5-s2-same", "odd-channels-mult3",
                                  "kernel-wider-than-input", "per-tensor", "odd-channels", "pot-scales",
                                  "rectangular-no-bias", "3x3-dil2-same"])
def test_split_on_cortex_m_matches_interpreter(name, board, tmp_path):
    from support.qemu_cases import deploy_graph
    g = build_graph(dict(_case(name, "int8", seed=4), activation="RELU"))
    assert deploy_graph(g, random_inputs(g, 8), board, tmp_path)["verified"]
