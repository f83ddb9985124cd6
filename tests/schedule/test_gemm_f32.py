"""The float32 GEMM schedule (schedule/gemm_f32.py) and its micro-kernel mc_gemm_p4_fpu_f32
(runtime_c/kernels/mc_gemm_f32.c): float conv2d and fully_connected become one call per block
on FPU cores and keep their loops elsewhere; random shapes with tails (output channels, pixels
and depth not multiples of the 4x4 tile, padding, stride, dilation, every activation) match the
numpy reference within ir/compare's tolerance in the loop-IR interpreter, in host C and on the
Cortex-M4 twin; the C kernel alone against a double-precision sum for every m, n, k up to 9 (and the im2col
copy kernel for every run up to 20);
the default schedule is the default point of the f32_fpu knob space; traces replay."""

from __future__ import annotations

import subprocess
from dataclasses import replace

import numpy as np
import pytest

from support.f32_cases import CONV, COPIED, conv_graph, fc_graphs
from support.lower_cases import matches, random_inputs, reference, run_lowered
from support.qemu_cases import deploy_graph, merge_graphs, merged_inputs

from microcompile.lower import lower_node
from microcompile.resources import resource_dir
from microcompile.schedule import InvalidConfig, Trace, apply_config, default_config, default_schedule, knob_space
from microcompile.target import load_board
from microcompile.tir.intrinsics import get
from microcompile.tir.intrinsics_gemm import pack_panels4
from microcompile.tir.intrinsics_gemm_f32 import (ACT_MAX, ACT_MIN, COPY_F32_KERNEL, COPY_F32_MVE_KERNEL,
                                                   GEMM_F32_KERNELS, GEMM_F32_MVE_KERNELS)
from microcompile.tir.nodes import Call, walk
from microcompile.tir.printer import tir_str

M4F = load_board("mps2-an386").target
M3 = load_board("mps2-an385").target
M55 = load_board("mps3-an547").target

def _calls(f) -> list[Call]:
    return [n for n in walk(f.body) if isinstance(n, Call) and n.name in GEMM_F32_KERNELS.values()]


def _check(g, target=M4F, seed=0):
    f = lower_node(g, g.nodes[0], target)
    sched, trace = default_schedule(f, target)
    inputs = random_inputs(g, seed)
    assert matches(run_lowered(g, sched, inputs), reference(g, inputs)), g.name
    return f, sched, trace


@pytest.mark.parametrize("k", range(len(CONV)))
def test_float_conv_is_one_call_per_block_and_matches(k):
    g = conv_graph(k, CONV[k])
    f, sched, trace = _check(g)
    assert _calls(sched), tir_str(sched)
    copies = [n for n in walk(sched.body) if isinstance(n, Call) and n.name == COPY_F32_KERNEL]
    assert bool(copies) == (k in COPIED), tir_str(sched)
    # the default schedule is the default point of its knob space, and its trace replays
    assert knob_space(f, M4F).family == "f32_fpu"
    again, trace2 = apply_config(f, M4F, default_config(f, M4F))
    assert tir_str(again) == tir_str(sched) and trace2.dumps() == trace.dumps()
    assert tir_str(Trace.loads(trace.dumps()).apply(f)) == tir_str(sched)


def test_float_fully_connected_reads_its_input_rows_in_place():
    for g in fc_graphs():
        f, sched, _ = _check(g)
        calls = _calls(sched)
        assert len(calls) == 1 and sched.scratch_bytes == 0, tir_str(sched)


def test_cores_without_an_fpu_keep_the_loops():
    for g in [conv_graph(0, CONV[0]), *fc_graphs()[:2]]:
        _, sched, _ = _check(g, M3)
        assert not _calls(sched)


def test_cols_knob_tails_and_refusals():
    """Blocks of 1..n columns (the 4x1 tile alone, the 4x4 with tails) all match; a block that
    does not divide the plane is refused with the reason."""
    g = conv_graph(0, CONV[0])                       # 6x7 = 42 output pixels
    f = lower_node(g, g.nodes[0], M4F)
    inputs = random_inputs(g, 3)
    for cols in (1, 2, 10, 16):
        config = {**default_config(f, M4F), "cols": cols}
        if 42 % cols:
            with pytest.raises(InvalidConfig, match="does not divide"):
                apply_config(f, M4F, config)
            continue
        sched, _ = apply_config(f, M4F, config)
        assert _calls(sched)[0].args[-1].as_dict()["n"] == cols
        assert matches(run_lowered(g, sched, inputs), reference(g, inputs))


def test_kernel_semantics_against_float64_for_every_small_shape():
    """The Python semantics (what the interpreter runs) against a float64 sum, panels unpacked."""
    rng = np.random.default_rng(0)
    shapes = [(m, n, k) for m in (1, 3, 4, 5, 8) for n in (1, 2, 4, 5) for k in (1, 3, 4, 7)]
    for (m, n, k), (act, name) in zip(shapes, [*GEMM_F32_KERNELS.items()] * len(shapes)):
        a, b, bias = (rng.normal(size=s).astype(np.float32) for s in ((m, k), (n, k + 2), (m,)))
        y = np.zeros((n, m + 1), np.float32)
        get(name).impl((y.reshape(-1), 0), (pack_panels4(a, 1), 0), (b.reshape(-1), 0), (bias, 0), -0.5, 0.75,
                       {"m": m, "n": n, "k": k, "ldb": k + 2, "ldy": m + 1})
        want = b[:, :k].astype(np.float64) @ a.T.astype(np.float64) + bias
        want = np.clip(want, -0.5 if act & ACT_MIN else None, 0.75 if act & ACT_MAX else None)
        assert np.allclose(y[:, :m], want, atol=1e-5), (m, n, k, name)
        assert not y[:, m:].any()


_KERNEL_TEST = r"""
#include <math.h>
#include <stdio.h>
#include "mc_gemm_f32.h"

/* every m, n, k in 1..9 and each variant: against a double-precision sum, strides wider than
 * the rows, a guard word after each output row that must stay untouched */
typedef void (*kernel_t)(float *, const float *, const float *, const float *, float, float,
                         const mc_gemm_f32_params_t *);
static const kernel_t kernels[3] = {mc_gemm_p4_fpu_f32, mc_gemm_p4_min_fpu_f32, mc_gemm_p4_minmax_fpu_f32};

int main(void)
{
    static float a[12 * 9], packed[12 * 9], b[9 * 11], bias[9], y[9 * 11];
    unsigned s = 12345;
    int bad = 0;
    for (int i = 0; i < 12 * 9; i++) { s = s * 1103515245u + 12345u; a[i] = (float)((s >> 8) % 2001) / 1000.0f - 1.0f; }
    for (int i = 0; i < 9 * 11; i++) { s = s * 1103515245u + 12345u; b[i] = (float)((s >> 8) % 2001) / 500.0f - 2.0f; }
    for (int i = 0; i < 9; i++) bias[i] = 0.25f * (float)i - 1.0f;
    for (int act = 0; act < 3; act++)
        for (int m = 1; m <= 9; m++)
            for (int n = 1; n <= 9; n++)
                for (int k = 1; k <= 9; k++) {
                    const int ldb = k + 2, ldy = m + 1, mp = (m + 3) / 4 * 4;
                    for (int r = 0; r < mp; r++)       /* panels of 4 rows, groups of one k */
                        for (int p = 0; p < k; p++)
                            packed[((r / 4) * k + p) * 4 + r % 4] = r < m ? a[r * k + p] : 0.0f;
                    for (int i = 0; i < 9 * 11; i++) y[i] = 7.0f;
                    mc_gemm_f32_params_t prm = {m, n, k, ldb, ldy};
                    kernels[act](y, packed, b, bias, -0.5f, 0.75f, &prm);
                    for (int j = 0; j < n; j++) {
                        for (int i = 0; i < m; i++) {
                            double acc = bias[i];
                            for (int p = 0; p < k; p++) acc += (double)a[i * k + p] * b[j * ldb + p];
                            if (act >= 1 && acc < -0.5) acc = -0.5;
                            if (act == 2 && acc > 0.75) acc = 0.75;
                            if (fabs(y[j * ldy + i] - acc) > 1e-5) bad++;
                        }
                        if (y[j * ldy + m] != 7.0f) bad++;
                    }
                }
    for (int n = 0; n <= 20; n++) {                /* mc_copy_f32: every run length, guards */
        for (int i = 0; i < 9 * 11; i++) y[i] = 7.0f;
        mc_copy_f32(y + 1, b, n);
        for (int i = 0; i < 22; i++)
            if (y[i] != ((i >= 1 && i <= n) ? b[i - 1] : 7.0f)) bad++;
    }
    printf("%d\n", bad);
    return bad != 0;
}
"""


def test_the_c_kernel_on_the_host_for_every_small_shape(tmp_path):
    src = tmp_path / "t.c"
    src.write_text(_KERNEL_TEST)
    runtime = resource_dir("runtime_c")
    subprocess.run(["gcc", "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", "-I", str(runtime / "include"), str(src),
                    str(runtime / "kernels" / "mc_gemm_f32.c"), "-lm", "-o", str(tmp_path / "t")], check=True)
    assert subprocess.run([str(tmp_path / "t")], capture_output=True, text=True).stdout.strip() == "0"


def _merged():
    graphs = [conv_graph(k, over) for k, over in enumerate(CONV)] + fc_graphs()[:3]
    inputs = merged_inputs([random_inputs(sub, 50 + k) for k, sub in enumerate(graphs)])
    return merge_graphs(graphs, "f32_gemm"), inputs


def test_float_gemm_in_host_c(tmp_path):
    """The host core has an FPU (fmaf in C): the same kernels through the host build."""
    from support import flows

    g, inputs = _merged()
    from microcompile.frontend.tflite.writer import write_tflite
    model = tmp_path / "model.tflite"
    model.write_bytes(write_tflite(g))
    np.savez(tmp_path / "inputs.npz", **inputs)
    result = flows.deploy(model, "host", tmp_path / "project", input_path=tmp_path / "inputs.npz",
                          progress=lambda s: None)
    assert result.report["verified"], result.report["outputs"]


def test_helium_cores_take_the_vector_kernels():
    """On the Cortex-M55 every case above is one call per block of the Helium twin
    (mc_gemm_p4_<clamp>mve_f32) with its copy runs by vectors, and matches in the interpreter;
    the FPU kernels are not called there."""
    for k, over in enumerate(CONV):
        g = conv_graph(k, over)
        _, sched, _ = _check(g, M55)
        names = {n.name for n in walk(sched.body) if isinstance(n, Call)}
        assert names & set(GEMM_F32_MVE_KERNELS.values()) and not names & set(GEMM_F32_KERNELS.values()), names
        assert (COPY_F32_MVE_KERNEL in names) == (k in COPIED) and COPY_F32_KERNEL not in names, names
    for g in fc_graphs():
        _, sched, _ = _check(g, M55)
        assert {n.name for n in walk(sched.body) if isinstance(n, Call)} & set(GEMM_F32_MVE_KERNELS.values())
    # a Cortex-M55 built +nomve.fp (mve_float = false in its core TOML): the FPU kernels
    no_float_vectors = replace(M55, mve_float=False)
    _, sched, _ = _check(conv_graph(1, CONV[1]), no_float_vectors)
    names = {n.name for n in walk(sched.body) if isinstance(n, Call)}
    assert names & set(GEMM_F32_KERNELS.values()) and not names & set(GEMM_F32_MVE_KERNELS.values())


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps3-an547"])
def test_float_gemm_on_the_twins(tmp_path, board):
    """One firmware: every case above on mps2-an386 (VFMA) and on mps3-an547 (Helium's vector
    VFMA: the 4x4 and 4x1 tiles, partial panels under a predicate, k tails), against the
    interpreter and LiteRT."""
    g, inputs = _merged()
    report = deploy_graph(g, inputs, board, tmp_path)
    assert report["verified"], report["outputs"]
