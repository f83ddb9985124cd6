"""The new schedule primitives (fuse, cache_write, cache_read, pack_constant, tensorize) keep
results identical (loop-IR interpreter before/after), the GEMM default schedules replay from
JSON, the portable GEMM kernels equal their Python semantics (host gcc), and every int8
MLPerf Tiny model stays bit-exact on a core without DSP (QEMU mps2-an385, Cortex-M3)."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest


from tests.conftest import INT8_MODELS, model_path  # noqa: E402
from support.lower_cases import build_graph, cases, matches, random_inputs, run_lowered  # noqa: E402

from microcompile.tir import nodes as tir  # noqa: E402
from microcompile.tir.printer import tir_str  # noqa: E402
from microcompile.lower import lower_node  # noqa: E402
from microcompile.schedule import Schedule, ScheduleError, Trace, default_schedule, tensorize  # noqa: E402
from microcompile.tir.intrinsics_gemm import GEMM_PARAMS, _gemm_impl, pack_panels4, unpack_panels4  # noqa: E402
from microcompile.target import load_board  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
DSP = load_board("mps2-an386").target


def _conv(dtype="int8", **over):
    case = dict(cases("conv2d", dtype, 1, seed=5)[0], hw=6, cin=3, cout=5, kernel=3, stride=1,
                dilation=1, batch=1, padding="SAME")
    g = build_graph({**case, **over})
    return g, lower_node(g, g.nodes[0])


def _fc(rows=1):
    case = dict(cases("fully_connected", "int8", 1, seed=2)[0])
    g = build_graph(case)
    return g, lower_node(g, g.nodes[0])


# (workload, schedule steps): every step list must leave results unchanged.
PLANS = {
    "fuse": ("conv", [("fuse", "oh", "ow")]),
    "cache_write": ("conv", [("cache_write", "acc", "oc")]),
    "fuse+split+cache_write": ("conv", [("fuse", "oh", "ow"), ("split", "oh_ow", 4), ("cache_write", "acc", "oh_ow_i")]),
    "cache_read (im2col)": ("conv", [("fuse", "oh", "ow"), ("split", "oh_ow", 6), ("cache_write", "acc", "oh_ow_i"),
                                     ("cache_read", "xv", "oh_ow_o", "int16")]),
    "cache_read at top": ("conv", [("cache_read", "xv", None, "int16")]),
    "unswitch (im2col padding test out of the channel loop)": (
        "conv4", [("cache_read", "xv", None, "int16"), ("unswitch", "ic_c")]),
    "tensorize widening copy (im2col run)": ("conv8", [("cache_read", "xv", None, "int16"), ("unswitch", "ic_c"),
                                                     ("tensorize", "ic_c", "mc_widen_dsp_s8_s16")]),
    "unswitch (row test out of the tap loop)": ("conv3x3", [("cache_read", "xv", None, "int16"), ("unswitch", "kw_c")]),
    "pack_constant": ("conv", [("pack_constant", "w", "int16")]),
    "tensorize s16 c": ("conv", [("fuse", "oh", "ow"), ("cache_write", "acc", "oh_ow"), ("cache_read", "xv", None, "int16"),
                                 ("pack_constant", "w", "int16"), ("tensorize", "oh_ow_1", "mc_gemm_nt_c_s16")]),
    "tensorize s16 dsp": ("conv", [("fuse", "oh", "ow"), ("cache_write", "acc", "oh_ow"),
                                   ("cache_read", "xv", None, "int16"), ("pack_constant", "w", "int16"),
                                   ("tensorize", "oh_ow_1", "mc_gemm_nt_dsp_s16")]),
    "tensorize s8 fc": ("fc", [("cache_write", "acc", "u"), ("tensorize", "u_1", "mc_gemm_nt_dsp_s8")]),
    "tensorize p4 s16 conv (packed weights)": ("conv", [("fuse", "oh", "ow"), ("cache_write", "acc", "oh_ow"),
                                                        ("cache_read", "xv", None, "int16"), ("pack_constant", "w", "int16"),
                                                        ("tensorize", "oh_ow_1", "mc_gemm_p4_dsp_s16")]),
    "tensorize p4 s8 fc (packed weights)": ("fc", [("cache_write", "acc", "u"), ("tensorize", "u_1", "mc_gemm_p4_dsp_s8")]),
    "default conv (dsp)": ("conv", "default"),
    "default conv 1x1 stride 2": ("conv1x1s2", "default"),
    "default fc (c)": ("fc", "default_c"),
    "default fc (dsp, int16 weights, int8 input in place)": ("fc", "default"),
}


def _workload(kind):
    return {"conv": _conv, "conv4": lambda: _conv(cin=4), "conv8": lambda: _conv(cin=8), "conv3x3": lambda: _conv(cin=1, rect=False), "conv1x1s2": lambda: _conv(kernel=1, stride=2, padding="VALID"), "fc": _fc}[kind]()


@pytest.mark.parametrize("plan", sorted(PLANS))
def test_gemm_primitives_preserve_semantics(plan):
    kind, steps = PLANS[plan]
    g, f = _workload(kind)
    if steps in ("default", "default_c"):
        f2, trace = default_schedule(f, DSP if steps == "default" else None)
        assert any(d.primitive == "tensorize" for d in trace.decisions)
        assert tir_str(Trace.loads(trace.dumps()).apply(f)) == tir_str(f2)    # JSON round trip replays
    else:
        sch = Schedule(f)
        for prim, *args in steps:
            sch.apply(prim, *args)
        f2 = sch.func
        assert tir_str(Trace.loads(sch.trace.dumps()).apply(f)) == tir_str(f2)
    ins = random_inputs(g, 1)
    assert matches(run_lowered(g, f2, ins), run_lowered(g, f, ins))
    assert tir_str(f2) != tir_str(f)


def test_tensorize_rejects_a_nest_it_does_not_compute():
    _, f = _conv()
    with pytest.raises(ScheduleError, match="does not match"):
        tensorize(f, "oc", "mc_gemm_nt_c_s16")       # acc is a local scalar, input is int8
    with pytest.raises(ScheduleError, match="unknown tensor intrinsic"):
        tensorize(f, "oc", "no_such_kernel")


@pytest.mark.parametrize("group", [2, 4])
@pytest.mark.parametrize("m,k", [(1, 1), (4, 8), (5, 7), (16, 27)])
def test_panel_packing_follows_the_documented_layout(group, m, k):
    a = np.arange(1, m * k + 1).reshape(m, k).astype(np.int16)
    p = pack_panels4(a, group)
    kp = -(-k // group) * group
    assert p.size == -(-m // 4) * 4 * kp and np.count_nonzero(p) == m * k      # padding is zero
    for i in range(m):
        for q in range(k):        # the index formula of mc_gemm.h
            assert p[(i // 4) * 4 * kp + (q // group) * 4 * group + (i % 4) * group + q % group] == a[i, q]
    assert np.array_equal(unpack_panels4(p, m, k, group), a)


def test_tensorize_refuses_to_repack_weights_read_elsewhere():
    _, f = _conv()          # w is read in the reduction, not as a whole-matrix operand
    with pytest.raises(ScheduleError, match="does not match"):
        tensorize(f, "oc", "mc_gemm_p4_dsp_s16")


def test_unswitch_needs_a_condition_that_does_not_change_in_the_loop():
    _, f = _conv()
    f = Schedule(f).cache_read("xv", None, "int16").func
    with pytest.raises(ScheduleError, match="not one store"):
        Schedule(f).unswitch("oh_c")                  # not innermost
    _, g = _conv(cin=1, rect=False, padding="VALID", stride=1, hw=6)
    g = Schedule(g).cache_read("xv", None, "int16").func
    with pytest.raises(ScheduleError, match="not one store"):
        Schedule(g).unswitch("kw_c")                  # no padding: no select


def test_cache_read_refuses_narrowing():
    _, f = _conv()
    with pytest.raises(ScheduleError, match="change values"):
        Schedule(f).cache_read("xv", None, "bool")


def test_float_conv_keeps_the_plain_nest():
    """No int8 GEMM for float: the plain nest without an FPU, the float kernel (gemm_f32.py) with one."""
    _, f = _conv("float32")
    _, trace = default_schedule(f, load_board("mps2-an385").target)
    assert not any(d.primitive == "tensorize" for d in trace.decisions)
    _, trace = default_schedule(f, DSP)
    assert [d.args[1][:10] for d in trace.decisions if d.primitive == "tensorize"] == ["mc_gemm_p4"]


@pytest.fixture(scope="module")
def gemm_lib(tmp_path_factory):
    out = tmp_path_factory.mktemp("gemm") / "libgemm.so"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror", "-std=c99",
                    "-I", str(ROOT / "runtime_c" / "include"), str(ROOT / "runtime_c" / "kernels" / "mc_gemm.c"), "-o", str(out)], check=True)
    return ctypes.CDLL(str(out))


@pytest.mark.parametrize("dtype", ["s8", "s16"])
@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (2, 2, 4), (5, 3, 7), (8, 25, 40), (7, 1, 27)])
def test_portable_gemm_kernels_equal_their_semantics(gemm_lib, dtype, m, n, k):
    rng = np.random.default_rng(m * 100 + n * 10 + k)
    npdt = np.int8 if dtype == "s8" else np.int16
    lda, ldb, ldc = k + 1, k + 2, m + 3                     # strides wider than the tile
    a = rng.integers(-128, 128, m * lda).astype(npdt)
    b = rng.integers(-128, 128, n * ldb).astype(npdt)
    c = rng.integers(-1000, 1000, n * ldc).astype(np.int32)
    want = c.copy()
    _gemm_impl((want, 0), (a, 0), (b, 0), dict(m=m, n=n, k=k, lda=lda, ldb=ldb, ldc=ldc))
    fn = getattr(gemm_lib, f"mc_gemm_nt_c_{dtype}")
    ptr = lambda arr: arr.ctypes.data_as(ctypes.c_void_p)     # noqa: E731

    class Params(ctypes.Structure):                           # mc_gemm_params_t
        _fields_ = [(name, ctypes.c_int32) for name in GEMM_PARAMS.fields]
    fn(ptr(c), ptr(a), ptr(b), ctypes.byref(Params(m, n, k, lda, ldb, ldc)))
    assert np.array_equal(c, want)


# The packed-panel DSP kernels on the Cortex-M4 twin: rows not a multiple of 4 (a partial last
# panel), odd k, k with and without a remainder after the unrolled 8-k loop, several columns.
QEMU_GEMM_CASES = {
    "conv m5 k27": ("conv", dict(cout=5), "s16"),
    "conv m7 k72": ("conv", dict(cin=8, cout=7, hw=5, stride=2), "s16"),
    "conv 1x1 m6 k12": ("conv", dict(cin=12, cout=6, kernel=1, padding="VALID"), "s16"),
    "conv m4 k90 (widened runs of 10)": ("conv", dict(cin=10, cout=4, rect=False), "s16"),
    # int16 weights: the int8 input read in place (the mixed kernel, tests/schedule/test_gemm_mixed.py)
    "fc m6 k10": ("fc", dict(in_shape=(3, 10), units=6), "s16_s8"),
    "fc m13 k37": ("fc", dict(in_shape=(2, 37), units=13, bias=True, per_channel=True), "s16_s8"),
    # int8 weights (a board with no flash or arena to spare): int8 operands, in panels where
    # that adds no padding, else row-major
    "fc m127 k130 int8 weights": ("fc", dict(in_shape=(1, 130), units=127, bias=True), "s8"),
    "fc m65 k261 int8 weights": ("fc", dict(in_shape=(2, 261), units=65), "s8"),
    "fc m64 k132 int8 weights": ("fc", dict(in_shape=(1, 132), units=64), "s8"),
}


@pytest.mark.qemu
@pytest.mark.parametrize("name", sorted(QEMU_GEMM_CASES))
def test_packed_dsp_gemm_kernels_on_cortex_m4(name, tmp_path):
    from support.qemu_cases import deploy_graph
    kind, over, dtype = QEMU_GEMM_CASES[name]
    base = cases("conv2d", "int8", 1, seed=5)[0] if kind == "conv" else cases("fully_connected", "int8", 1, seed=2)[0]
    if kind == "conv":
        base = dict(base, hw=6, cin=3, kernel=3, stride=1, dilation=1, batch=1, padding="SAME")
    g = build_graph({**base, **over})
    f2, _ = default_schedule(lower_node(g, g.nodes[0]), DSP, wide=dtype != "s8")
    # convolutions requantize in the kernel (no int32 tile); fully connected layers (single
    # rounding) keep their tile
    padded = kind == "fc" and dtype == "s8" and (over["units"] % 4 or over["in_shape"][-1] % 4)
    assert (f"mc_gemm_p4_rq_dsp_{dtype}(" if kind == "conv" else "mc_gemm_nt_dsp_s8(" if padded
            else f"mc_gemm_p4_dsp_{dtype}(") in tir_str(f2)
    assert ("mc_widen_dsp_s8_s16(" in tir_str(f2)) == (kind == "conv" and over.get("cin", 3) >= 8)
    report = deploy_graph(g, random_inputs(g, 3), "mps2-an386", tmp_path)
    assert report["verified"], report


@pytest.mark.qemu
@pytest.mark.heavy
@pytest.mark.parametrize("name", INT8_MODELS)
def test_int8_models_bit_exact_on_cortex_m3_without_dsp(name, tmp_path):
    from support import flows
    from support.qemu_cases import assert_matches_litert
    path = model_path(name)
    r = flows.deploy(path, "mps2-an385", tmp_path / name, emulate=True, progress=lambda s: None)
    assert_matches_litert(path, r.inputs, r.outputs, f"{name} on mps2-an385")
    assert r.report["verified"], r.report["outputs"]
    assert not (tmp_path / name / "runtime" / "kernels" / "dsp").exists()   # plain C only
    assert "mc_gemm_nt_c_" in (tmp_path / name / "model" / "model.c").read_text()
