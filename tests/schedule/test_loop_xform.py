"""vectorize and compute_at keep semantics (loop-IR interpreter before/after), replay from
JSON traces, and refuse nests they cannot transform."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest


from support.lower_cases import build_graph, cases, matches, random_inputs, run_lowered  # noqa: E402

from microcompile.tir import nodes as tir  # noqa: E402
from microcompile.tir.printer import tir_str  # noqa: E402
from microcompile.lower import lower_node  # noqa: E402
from microcompile.schedule import Schedule, ScheduleError, Trace, compute_at, vectorize  # noqa: E402


def _conv(**over):
    case = dict(cases("conv2d", "int8", 1, seed=7)[0], hw=6, cin=4, cout=8, kernel=3, stride=1,
                dilation=1, batch=1, padding="SAME")
    g = build_graph({**case, **over})
    return g, lower_node(g, g.nodes[0])


_GEMM = [("fuse", "oh", "ow"), ("split", "oh_ow", 6), ("cache_write", "acc", "oh_ow_i")]
# Each plan must leave the results unchanged.
PLANS = {
    "vectorize im2col copy (int16 x4 rejected, x2)": _GEMM + [("cache_read", "xv", "oh_ow_o", "int16"),
                                                              ("vectorize", "ic_c", 2)],
    "vectorize int8 im2col x4": _GEMM + [("cache_read", "xv", "oh_ow_o"), ("vectorize", "ic_c", 4)],
    "compute_at init into reduction": _GEMM + [("compute_at", "oh_ow_i", "oh_ow_i_1")],
    "compute_at init, reduction, epilogue": _GEMM + [("compute_at", "oh_ow_i", "oh_ow_i_1"),
                                                     ("compute_at", "oh_ow_i_1", "oh_ow_i_2")],
    "compute_at per channel": [("cache_write", "acc", "oc"), ("compute_at", "oc", "oc_1"),
                               ("compute_at", "oc_1", "oc_2")],
}


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_loop_xforms_preserve_semantics(plan):
    g, f = _conv()
    sch = Schedule(f)
    for prim, *args in PLANS[plan]:
        sch.apply(prim, *args)
    assert tir_str(Trace.loads(sch.trace.dumps()).apply(f)) == tir_str(sch.func)
    ins = random_inputs(g, 1)
    assert matches(run_lowered(g, sch.func, ins), run_lowered(g, f, ins))


def _loops(f):
    return {n.var.name: n for n in tir.walk(f.body) if isinstance(n, tir.For)}


def test_vectorize_shape_and_refusals():
    _, f = _conv()
    s = Schedule(f)
    for prim, *args in _GEMM + [("cache_read", "xv", "oh_ow_o", "int16")]:
        s.apply(prim, *args)
    v = vectorize(s.func, "ic_c", 2)
    loops = _loops(v)
    assert loops["ic_c_o"].extent == 2 and loops["ic_c_i"].extent == 2 and loops["ic_c_i"].kind == "unrolled"
    with pytest.raises(ScheduleError, match="packed lanes"):
        vectorize(s.func, "ic_c", 4)                  # 4 int16 lanes do not fit a word
    with pytest.raises(ScheduleError, match="innermost"):
        vectorize(f, "kh", 2)
    with pytest.raises(ScheduleError, match="multiple"):
        vectorize(vectorize(s.func, "ic_c", 2), "ic_c_i", 4)   # extent 2 is not a multiple of 4



def test_compute_at_fuses_and_refuses():
    _, f = _conv()
    s = Schedule(f)
    for prim, *args in _GEMM:
        s.apply(prim, *args)
    fused = compute_at(s.func, "oh_ow_i", "oh_ow_i_1")
    assert "oh_ow_i" not in _loops(fused) and "oh_ow_i_1" in _loops(fused)
    with pytest.raises(ScheduleError, match="directly follow"):
        compute_at(s.func, "oh_ow_i", "oh_ow_i_2")   # the reduction lies between them
    with pytest.raises(ScheduleError, match="directly follow"):
        compute_at(f, "oh", "ow")
