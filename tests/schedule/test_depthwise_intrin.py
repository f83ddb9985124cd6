"""The depthwise micro-kernel schedule (schedule/depthwise_intrin.py): for every region
layout of tests/lower/test_depthwise.py's plan, packing the filter, turning immediates into
arrays and tensorizing each region keep the result equal to the numpy interpreter, the
trace replays to the same PrimFunc, and the kernel variant follows the core."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from support.lower_cases import build_graph, matches, random_inputs, reference, run_lowered  # noqa: E402
from support.lower_cases import DEPTHWISE_SPLITS as SPLITS, depthwise_case as _case  # noqa: E402

from microcompile.tir import nodes as tir  # noqa: E402
from microcompile.tir.printer import tir_str  # noqa: E402
from microcompile.lower import lower_node  # noqa: E402
from microcompile.schedule import ScheduleError, Trace, tensorize  # noqa: E402
from microcompile.schedule.depthwise_intrin import (pack_depthwise_s16, requant_arrays,  # noqa: E402
                                                    schedule_depthwise)

# Cases the micro-kernel cannot take (depth multiplier > 1) keep the loops.
NOT_TENSORIZED = {"odd-channels-mult3"}
ACTIVATIONS = ("RELU", "NONE")


class _Dsp:
    dsp, arch = True, "armv7e-m"


def _lowered(name: str, activation: str, seed: int = 0):
    case = _case(name, "int8", seed=seed)
    if name not in NOT_TENSORIZED:      # the random base case may draw a depth multiplier > 1
        case = dict(case, multiplier=1, cin=max(case["cin"] * case["multiplier"], 5))
    g = build_graph(dict(case, activation=activation))
    return g, lower_node(g, g.nodes[0])


def _calls(f):
    return [n.name for n in tir.walk(f.body) if isinstance(n, tir.Call) and n.name.startswith("mc_depthwise")]


@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("name", SPLITS)
def test_tensorized_matches_interpreter(name, activation):
    g, f = _lowered(name, activation, seed=2)
    sch = schedule_depthwise(f, None, kernel="kernel")
    if name in NOT_TENSORIZED:
        assert sch is None
        return
    assert sch is not None and _calls(sch.func) and not any(isinstance(n, tir.For) and n.var.name.startswith("ic_")
                                                            for n in tir.walk(sch.func.body))
    ins = random_inputs(g, 5)
    assert matches(run_lowered(g, sch.func, ins), reference(g, ins))
    replayed = Trace.loads(sch.trace.dumps()).apply(f)
    assert tir_str(replayed) == tir_str(sch.func)


@pytest.mark.parametrize("name", ["3x3-s1-same", "odd-channels", "per-tensor", "rectangular-no-bias"])
def test_packing_alone_keeps_values(name):
    """The packed (div/mod indexed) filter and the multiplier arrays before tensorize."""
    g, f = _lowered(name, "RELU", seed=3)
    f2 = pack_depthwise_s16(f, "w")
    if not any(b.name == "mult" for b in f2.buffers):     # a per-tensor multiplier
        f2 = requant_arrays(f2)
        assert {"mult", "rshift"} <= {b.name for b in f2.buffers}
    w = next(b for b in f2.buffers if b.name == "w")
    assert w.dtype == "int16" and w.size % 4 == 0
    ins = random_inputs(g, 6)
    assert matches(run_lowered(g, f2, ins), reference(g, ins))


def test_variant_follows_the_core():
    _, f = _lowered("3x3-s1-same", "RELU")
    dsp = schedule_depthwise(f, _Dsp(), kernel="kernel").func
    plain = set(_calls(schedule_depthwise(f, None, kernel="kernel").func))
    # 6x6 SAME: corners 2x2, edges 2x3/3x2, interior 3x3, each its own fixed-window variant,
    # reading its region's requantization records (and no bias, mult or shift array is left).
    assert set(_calls(dsp)) == {"mc_depthwise_3x3_dsp_rq_s8", "mc_depthwise_2x3_dsp_rq_s8",
                                "mc_depthwise_3x2_dsp_rq_s8", "mc_depthwise_2x2_dsp_rq_s8"}
    consts = {b.name for b in dsp.buffers if b.scope == "const"}
    assert consts == {"w", "rq", *(f"rq_{t}" for t in ("0_0", "0_1", "0_2", "1_0", "1_2", "2_0", "2_1", "2_2"))}
    no_records = set(_calls(schedule_depthwise(f, _Dsp(), kernel="kernel", records=False).func))
    assert no_records == {"mc_depthwise_3x3_dsp_s8", "mc_depthwise_2x3_dsp_s8", "mc_depthwise_3x2_dsp_s8",
                          "mc_depthwise_2x2_dsp_s8"}
    assert plain == {"mc_depthwise_c_s8"}


def test_loops_knob_and_depth_multiplier_keep_loops():
    _, f = _lowered("3x3-s1-same", "RELU")
    loops = schedule_depthwise(f, None, kernel="loops")
    assert {d.primitive for d in loops.trace.decisions} == {"knob", "unroll"} and not _calls(loops.func)
    assert loops.trace.decisions[0].args == ("depthwise_kernel", "loops")
    _, f3 = _lowered("odd-channels-mult3", "RELU")
    ic = next(n.var.name for n in tir.walk(f3.body) if isinstance(n, tir.For) and n.var.name.startswith("ic_"))
    with pytest.raises(ScheduleError):
        tensorize(pack_depthwise_s16(f3, "w"), ic, "mc_depthwise_c_s8")


def test_unpacked_filter_does_not_match():
    """The kernel reads the packed layout: an int8 filter must not be tensorized."""
    _, f = _lowered("3x3-s1-same", "RELU")
    ic = next(n.var.name for n in tir.walk(f.body) if isinstance(n, tir.For) and n.var.name.startswith("ic_"))
    if not any(b.name == "mult" for b in f.buffers):
        f = requant_arrays(f)
    with pytest.raises(ScheduleError):
        tensorize(f, ic, "mc_depthwise_c_s8")


@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an385"])
def test_ssat_epilogue_of_armv7m_lowering_is_matched(board):
    """Lowered for a Cortex-M the store clamps with SSAT; the kernel still takes every region."""
    from microcompile.target.board import load_board
    target = load_board(board).target
    case = dict(_case("3x3-s1-same", "int8", seed=1), activation="RELU", multiplier=1, cin=8)
    g = build_graph(case)
    f = lower_node(g, g.nodes[0], target)
    assert any(n.name == "mc_ssat8" for n in tir.walk(f.body) if isinstance(n, tir.Call))
    sch = schedule_depthwise(f, target, kernel="kernel")
    assert sch is not None and all(c.endswith(("_dsp_rq_s8" if target.dsp else "_c_s8")) for c in _calls(sch.func))
    # The default on a DSP core: the whole-layer kernel (tests/schedule/test_depthwise_rows.py)
    rows = schedule_depthwise(f, target)
    assert _calls(rows.func) == (["mc_depthwise_3x3_rows_dsp_s8"] if target.dsp else _calls(sch.func))


def test_int8_weights_compute_region_biases_at_run_time():
    """With no flash to spare (wide=False) the depthwise keeps int8 weights and computes each
    border region's bias when it starts, instead of one more bias array per region in flash."""
    g, f = _lowered("3x3-s1-same", "RELU")
    narrow = schedule_depthwise(f, None, wide=False)
    names = [d.primitive for d in narrow.trace.decisions]
    assert "region_bias_at_runtime" in names and "pack_depthwise_s16" not in names
    consts = {b.name for b in narrow.func.buffers if b.scope == "const"}
    assert not any(n.startswith("bias_") for n in consts)
    assert any(b.name.startswith("bias_") and b.scope == "scratch" for b in narrow.func.buffers)
    ins = random_inputs(g, 3)
    assert matches(run_lowered(g, narrow.func, ins), reference(g, ins))
