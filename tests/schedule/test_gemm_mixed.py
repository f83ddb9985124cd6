"""The mixed-operand GEMM panel kernel (int16 weights packed at compile time, int8 input read in
place; runtime_c/kernels/dsp/mc_gemm_mixed_dsp.c): its packing follows mc_gemm_mixed.h, its
Python semantics equal the plain GEMM, the default fully connected schedule on DSP cores takes
it with int16 weights (no scratch copy of the input) and keeps results on the loop-IR
interpreter, and on the Cortex-M4, M7 and M33 twins random layers (every m % 4 and k % 16, per-tensor and
per-channel weights, random input offsets, several input rows) equal LiteRT byte for byte."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest


from support.lower_cases import build_graph, cases, matches, random_inputs, run_lowered  # noqa: E402

from microcompile.lower import lower_node  # noqa: E402
from microcompile.schedule import Trace, apply_config, default_config, default_schedule  # noqa: E402
from microcompile.schedule.spaces import InvalidConfig  # noqa: E402
from microcompile.target import load_board  # noqa: E402
from microcompile.tir.intrinsics import get as get_intrinsic  # noqa: E402
from microcompile.tir.intrinsics_gemm import _gemm_impl  # noqa: E402
from microcompile.tir.intrinsics_gemm_mixed import MIXED_KERNEL, pack_panels4_mixed, unpack_panels4_mixed  # noqa: E402
from microcompile.tir.printer import tir_str  # noqa: E402

DSP = load_board("mps2-an386").target
PLAIN = load_board("mps2-an385").target


@pytest.mark.parametrize("m,k", [(1, 1), (4, 4), (5, 7), (8, 18), (13, 37)])
def test_mixed_packing_follows_the_documented_layout(m, k):
    a = np.arange(1, m * k + 1).reshape(m, k).astype(np.int16)
    p = pack_panels4_mixed(a)
    kp = -(-k // 4) * 4
    assert p.dtype == np.int16 and p.size == -(-m // 4) * 4 * kp and np.count_nonzero(p) == m * k   # zero padding
    for i in range(m):
        for q in range(k):        # the index formula of mc_gemm_mixed.h
            t, r = divmod(q, 4)
            assert p[(i // 4) * 4 * kp + t * 16 + (r % 2) * 8 + (i % 4) * 2 + r // 2] == a[i, q]
    assert np.array_equal(unpack_panels4_mixed(p, m, k), a)


@pytest.mark.parametrize("m,n,k", [(1, 1, 1), (3, 2, 5), (4, 1, 16), (13, 3, 37), (64, 1, 130)])
def test_mixed_semantics_equal_the_plain_gemm(m, n, k):
    rng = np.random.default_rng(m * 1000 + n * 100 + k)
    a = rng.integers(-128, 128, (m, k)).astype(np.int16)
    b = rng.integers(-128, 128, n * (k + 3)).astype(np.int8)
    c = rng.integers(-1000, 1000, n * (m + 2)).astype(np.int32)
    want, got = c.copy(), c.copy()
    _gemm_impl((want, 0), (a.reshape(-1), 0), (b, 0), dict(m=m, n=n, k=k, lda=k, ldb=k + 3, ldc=m + 2))
    get_intrinsic(MIXED_KERNEL).impl((got, 0), (pack_panels4_mixed(a), 0), (b, 0),
                                     dict(m=m, n=n, k=k, lda=k, ldb=k + 3, ldc=m + 2))
    assert np.array_equal(got, want)


def _fc(seed: int, rows: int, k: int, units: int, per_channel: bool, bias: bool = True):
    case = dict(cases("fully_connected", "int8", 1, seed=seed)[0], in_shape=(rows, k), units=units,
                per_channel=per_channel, bias=bias, keep_num_dims=False)
    return build_graph(case)


# (rows, k, units, per_channel): every m % 4, k % 4 and k % 16 (the 16-k loop, the 8- and 4-k
# groups, the scalar tail), one and several input rows.
SHAPES = [(1, 2, 2, False), (2, 3, 2, True), (1, 4, 3, False), (3, 5, 4, True), (1, 8, 5, False),
          (2, 12, 6, True), (1, 16, 7, False), (1, 17, 8, True), (2, 29, 9, False), (1, 37, 13, True),
          (3, 64, 10, False), (1, 130, 33, True), (1, 640, 20, False)]


@pytest.mark.parametrize("rows,k,units,per_channel", SHAPES)
def test_default_fc_on_dsp_reads_the_int8_input_in_place(rows, k, units, per_channel):
    g = _fc(rows * 100 + k, rows, k, units, per_channel)
    f = lower_node(g, g.nodes[0])
    f2, trace = default_schedule(f, DSP, wide=True)
    text = tir_str(f2)
    assert f"{MIXED_KERNEL}(" in text and "xv_cache" not in text, text
    assert next(b for b in f2.buffers if b.name == "w").dtype == "int16"
    assert tir_str(Trace.loads(trace.dumps()).apply(f)) == text                # the trace replays
    for seed in (1, 2):
        ins = random_inputs(g, seed)
        assert matches(run_lowered(g, f2, ins), run_lowered(g, f, ins))


def test_fc_input_knob_chooses_the_widened_copy_and_is_refused_without_int16_weights():
    g = _fc(7, 2, 37, 13, True)
    f = lower_node(g, g.nodes[0])
    config = default_config(f, DSP, True)
    assert config["fc_input"] == "int8"
    copy, _ = apply_config(f, DSP, {**config, "fc_input": "int16"})
    # (k = 37: the tile and the int16 panel kernel; k a multiple of 8 fuses, test_fc_rq_away.py)
    assert "mc_gemm_p4_dsp_s16(" in tir_str(copy) and "xv_cache" in tir_str(copy)
    ins = random_inputs(g, 3)
    assert matches(run_lowered(g, copy, ins), run_lowered(g, f, ins))
    with pytest.raises(InvalidConfig, match="needs wide_weights=1"):
        apply_config(f, DSP, {**config, "wide_weights": 0, "fc_input": "int16"})
    narrow, _ = default_schedule(f, DSP, wide=False)
    assert MIXED_KERNEL not in tir_str(narrow)
    plain, _ = default_schedule(f, PLAIN, wide=True)          # no DSP: int8 weights, portable kernel
    assert MIXED_KERNEL not in tir_str(plain) and "mc_gemm_nt_c_s8(" in tir_str(plain)


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500", "mps2-an505"])    # Cortex-M4, M7, M33
def test_mixed_kernel_on_dsp_cores_matches_litert(board, tmp_path):
    from support.qemu_cases import deploy_graph, merge_graphs
    graphs = [_fc(40 + i, rows, k, units, pc, bias=i % 3 != 1) for i, (rows, k, units, pc) in enumerate(SHAPES)]
    g = merge_graphs(graphs, "mixed_gemm")
    inputs = {}
    for i, sub in enumerate(graphs):
        inputs.update({f"g{i}.{name}": a for name, a in random_inputs(sub, 60 + i).items()})
    report = deploy_graph(g, inputs, board, tmp_path)       # asserts LiteRT equality
    assert report["verified"], report["outputs"]
    model_c = (tmp_path / "project" / "model" / "model.c").read_text()
    # where the arena has room for the widened input row, the compiler takes it (schedule/blocks.py):
    # the fused kernel where k % 8 == 0, else the int16 panel kernel; all are checked against LiteRT
    kernels = [model_c.count(f"{name}(") for name in (MIXED_KERNEL, "mc_gemm_p4_rq_away_dsp_s16", "mc_gemm_p4_dsp_s16")]
    assert sum(kernels) == len(graphs) and all(kernels), kernels
