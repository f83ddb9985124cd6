"""The fused layer_norm and attention kernels (lower/fused.py): every op of the body run one
row at a time equals the unfused ops, over random shapes (odd widths, one token, one head) and
quantization: int8 byte for byte, float within 1e-5 of the largest output; in the loop-IR
interpreter, in C on the host, and on the Cortex-M4 and M55 twins against LiteRT (one firmware
per board). The fused node needs less arena than its ops, and attention packs K and V once
per head."""

from __future__ import annotations

import numpy as np
import pytest

from support import row_group_models as m
from support.c_harness import run_on_host
from support.inplace_check import check_in_place
from support.qemu_cases import deploy_graph, merge_graphs, merged_inputs
from microcompile.compiler.compile import plan_model
from microcompile.compiler.options import CompileOptions
from microcompile.lower import lower_node
from microcompile.ir.compare import compare
from microcompile.reference import interp
from microcompile.schedule.default import default_schedule
from microcompile.target import load_board
from microcompile.schedule.trace import Trace
from microcompile.tir.interp import run_primfunc
from microcompile.tir.printer import tir_str
from microcompile.tir.nodes import Call, For, walk
from microcompile.transform.fuse_rows import FuseRows

RNG = np.random.default_rng(2812)


def _cases() -> list:
    out = []
    for k in range(4):
        lead = tuple(int(v) for v in RNG.integers(1, 4, int(RNG.integers(1, 3))))
        shape = (*lead, int(RNG.choice([5, 16, 24, 33])))
        out.append((m.layer_norm_onnx(shape, 100 + k), ("div", "sqrt")))
        out.append((m.layer_norm_tflite(shape, 200 + k), ()))    # int8 RSQRT, as TFLite's converter
        heads, tokens, width = int(RNG.integers(1, 4)), int(RNG.choice([1, 6, 13])), int(RNG.choice([3, 8, 17]))
        out.append((m.attention(heads, tokens, width, 300 + k, mask=k % 2 == 1), ()))
    return out


FLOAT = [g for g, _ in _cases()]
INT8 = [m.int8(g, keep, seed=k) for k, (g, keep) in enumerate(_cases())]


def _inputs(g, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {n: rng.integers(-128, 128, g.tensors[n].shape).astype(np.int8) if g.tensors[n].dtype == "int8"
            else rng.normal(0.3, 2.0, g.tensors[n].shape).astype(np.float32) for n in g.inputs}


def _check(got, want, where: str) -> None:
    c = compare(np.asarray(got).reshape(want.shape), want)
    assert c.equal, f"{where}: {c}"


def test_every_case_is_one_fused_node():
    for g in FLOAT + INT8:
        fused = FuseRows()(g)
        assert [n.op for n in fused.nodes] in (["layer_norm"], ["attention"]), g.name
        # a causal mask is read a query row at a time, as the kernel's input
        per_row = fused.nodes[0].attrs["body"].row_constants()
        tokens = g.tensors[g.inputs[0]].shape[-2]
        assert bool(per_row) == ("masked" in g.name and tokens > 1), (g.name, per_row)
        assert all(name.startswith("mask") for name in per_row)


def test_the_loop_ir_equals_the_unfused_reference():
    for k, g in enumerate(FLOAT + INT8):
        fused = FuseRows()(g)
        f, _ = default_schedule(lower_node(fused, fused.nodes[0]))
        x = _inputs(g, k)
        names = {b.tensor: b.name for b in f.buffers if b.scope == "arena"}
        out = run_primfunc(f, {names[t]: v for t, v in x.items()})[names[g.outputs[0]]]
        _check(out, interp.run(g, x)[g.outputs[0]], g.name)


def test_the_host_c_equals_the_unfused_reference(tmp_path):
    graphs = FLOAT + INT8
    for (out, case), g in zip(run_on_host([FuseRows()(g) for g in graphs], tmp_path), graphs):
        _check(out, interp.run(g, case.inputs)[g.outputs[0]], g.name)


def test_the_schedule_is_each_ops_own_and_replays_from_json():
    """Each part keeps its op's schedule (an int8 SUB's rescale tables, the softmax's exp
    table), and the trace, through JSON as tuning records store it, rebuilds the same kernel."""
    target = load_board("mps2-an386").target
    for g in (INT8[0], INT8[2]):
        fused = FuseRows()(g)
        lowered = lower_node(fused, fused.nodes[0], target)
        f, trace = default_schedule(lowered, target)
        calls = {n.name for n in walk(f.body) if isinstance(n, Call)}
        if fused.nodes[0].op == "attention":
            assert "mc_softmax_s8_table" in calls
        else:
            assert any(b.name.endswith("rescale_a") for b in f.buffers)
        assert tir_str(Trace.loads(trace.dumps()).apply(lowered)) == tir_str(f)


def test_attention_packs_k_and_v_once_per_head_and_keeps_one_row_of_scores():
    g = FuseRows()(m.int8(m.attention(3, 10, 8, 7)))
    f, _ = default_schedule(lower_node(g, g.nodes[0], load_board("mps2-an386").target))
    outer = [n for n in walk(f.body) if isinstance(n, For)]
    heads, rows = outer[0], next(n for n in outer if n.extent == 10)
    assert heads.extent == 3
    packs = [n for n in walk(heads.body) if isinstance(n, Call) and n.name == "mc_matmul_s8_pack_b"]
    assert len(packs) == 2 and not any(isinstance(n, Call) and n.name == "mc_matmul_s8_pack_b" for n in walk(rows))
    assert sum(isinstance(n, Call) and n.name == "mc_matmul_s8_packed" for n in walk(rows)) == 2
    # scratch: one row of scores (and of the scaled and soft-maxed scores) and the packed K, V
    rows_scratch = [b for b in f.buffers if b.scope == "scratch" and b.name.startswith("row_")]
    assert sorted(b.size for b in rows_scratch) == [10, 10, 10]


def _group_peak(graph, fuse: bool) -> int:
    """The most bytes live while the group's ops run (the relus and the transpose around it
    hold two whole tensors each, whatever the group does)."""
    c = plan_model(graph, load_board("mps2-an386"), CompileOptions(fuse_rows=fuse))
    return max(v for n, v in zip(c.graph.nodes, c.plan.timeline()) if n.op not in ("relu", "transpose"))


def test_the_fused_nodes_need_less_arena_than_their_ops():
    g = m.inside(m.layer_norm_onnx((1, 50, 64), 1))
    a = m.inside(m.attention(4, 50, 16, 2))
    fused, unfused = ([_group_peak(x, fuse) for x in (g, a)] for fuse in (True, False))
    # the layer norm: x (12.8 KB, y over it) and its rows, against x and two whole float
    # tensors of its own (the difference and its square)
    assert fused[0] < 0.6 * unfused[0], (fused, unfused)
    # attention: q, k, v whole (y over q), one row of scores, against a [4, 50, 50] float
    # score tensor
    assert fused[1] < 0.6 * unfused[1], (fused, unfused)


def test_the_output_written_over_its_input_is_exact():
    """The planner may put the output exactly on the input (x for a layer norm, Q for
    attention, never K or V): run with one buffer for both and compare."""
    target = load_board("mps2-an386").target
    for k, g in enumerate(FLOAT + INT8):
        fused = FuseRows()(g)
        body = fused.nodes[0].attrs["body"]
        over = [x for x in fused.nodes[0].inputs if body.written_over(x)]
        assert over == (["x"] if fused.nodes[0].op == "layer_norm" else ["q"]), (g.name, over)
        check_in_place(fused, target, k)


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps3-an547"])
def test_the_int8_kernels_on_cortex_m_equal_litert(tmp_path, board):
    graphs = INT8[:6]
    g = merge_graphs(graphs, "fused_rows")
    inputs = merged_inputs([_inputs(sub, k) for k, sub in enumerate(graphs)])
    report = deploy_graph(g, inputs, board, tmp_path)
    assert report["verified"]
    code = (tmp_path / "project" / "model" / "model.c").read_text()
    assert code.count(", op layer_norm") == 4 and code.count(", op attention") == 2
    assert "mc_matmul_s8_packed(" in code
