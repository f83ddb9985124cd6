"""The knobs the tuner will search (schedule/knobs.py): every knob a default schedule records in
its trace is declared with a domain, the recorded value lies in it, an undeclared name or a value
outside the domain is refused, and the scratch-size knobs change the scratch the kernel gets."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


from support.lower_cases import build_graph, cases  # noqa: E402

from microcompile.lower import lower_node  # noqa: E402
from microcompile.schedule import KNOBS, Schedule, ScheduleError, Trace  # noqa: E402
from microcompile.schedule.gemm_schedule import GemmKnobs, schedule_conv2d_gemm, schedule_dense_gemm  # noqa: E402
from microcompile.target import load_board  # noqa: E402
from tests.conftest import model_path  # noqa: E402

DSP = load_board("mps2-an386").target


def _knobs(trace) -> dict:
    items = trace.to_json() if isinstance(trace, Trace) else trace
    return {d["args"][0]: d["args"][1] for d in items if d["primitive"] == "knob"}


def _conv(**over):
    case = dict(cases("conv2d", "int8", 1, seed=5)[0], hw=8, cin=16, cout=8, kernel=3, stride=1, dilation=1,
                batch=1, padding="SAME")
    g = build_graph({**case, **over})
    return lower_node(g, g.nodes[0], DSP)


def test_undeclared_knob_and_value_outside_the_domain_are_refused():
    f = _conv()
    with pytest.raises(ScheduleError, match="not declared"):
        Schedule(f).knob("tile_bytes", 64)
    with pytest.raises(ScheduleError, match="outside its domain"):
        Schedule(f).knob("col_bytes_max", 1000)
    Schedule(f).knob("col_bytes_max", 512)


def _scratch_bytes(f) -> int:
    return sum(b.size * {"int8": 1, "int16": 2, "int32": 4}[b.dtype] for b in f.buffers if b.scope == "scratch")


def test_col_bytes_max_bounds_the_im2col_scratch_and_is_recorded():
    f = _conv()                     # 64 pixels of 144 taps: int16 columns are 288 bytes each
    sizes = {}
    for cap in KNOBS["col_bytes_max"].domain:
        sch = schedule_conv2d_gemm(f, DSP, knobs=GemmKnobs(col_bytes_max=cap))
        assert _knobs(sch.trace)["col_bytes_max"] == cap
        assert _knobs(sch.trace)["max_cols"] == 32
        sizes[cap] = _scratch_bytes(sch.func)
        assert sizes[cap] <= max(cap, 288), (cap, sizes[cap])
    assert sizes[256] < sizes[1024] < sizes[8192], sizes


def test_acc_rows_bounds_the_fully_connected_tile():
    case = dict(cases("fully_connected", "int8", 1, seed=2)[0], in_shape=(1, 40), units=64)
    g = build_graph(case)
    f = lower_node(g, g.nodes[0], DSP)
    tiles = {}
    for rows in (8, 64):
        sch = schedule_dense_gemm(f, DSP, acc_rows=rows)
        assert _knobs(sch.trace)["acc_rows"] == rows
        tiles[rows] = sum(b.size for b in sch.func.buffers if b.scope == "scratch" and b.dtype == "int32")
    assert tiles == {8: 8, 64: 64}, tiles


@pytest.mark.parametrize("board", ["mps2-an386", "mps3-an547", "mps2-an385"])
def test_every_recorded_knob_is_declared_and_in_its_domain(board):
    from support import flows
    kernels = flows.plan_model(model_path("kws_ref_model"), board).manifest["kernels"]
    seen = set()
    for k in kernels:
        for name, value in _knobs(k["trace"]).items():
            assert name in KNOBS and value in KNOBS[name].domain, (k["name"], name, value)
            seen.add(name)
        if k["op"] == "conv2d":
            # the im2col GEMM records its block; Helium's whole-layer kernel has none
            knobs = _knobs(k["trace"])
            assert {"max_cols", "col_bytes_max", "wide_weights"} <= set(knobs) or \
                (board == "mps3-an547" and knobs == {"conv_kernel": "layer"}), k["trace"]
    assert {"col_bytes_max", "acc_rows", "depthwise_kernel"} <= seen, seen
