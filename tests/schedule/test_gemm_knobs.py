"""The GEMM micro-kernel knobs of the conv2d space (gemm_loop_order, gemm_tile): each non-default value
changes the generated kernel call (never silently the default), computes the same in the
loop-IR interpreter, is rejected with the reason where it does not apply, and is bit-exact on
QEMU mps2-an386 through the user's path (a records file given to deploy)."""

from __future__ import annotations

import numpy as np
import pytest

from microcompile.frontend.tflite import writer as tflite_writer
from microcompile.lower import lower_node
from microcompile.schedule import InvalidConfig, apply_config, default_config, default_schedule
from microcompile.target import load_board
from microcompile.tir.nodes import Call, walk
from microcompile.tir.printer import tir_str
from microcompile.frontend import load_model
from microcompile.ir import ops
from microcompile.transform import pipeline
from support import multi_op_models as M

DSP = load_board("mps2-an386").target
PLAIN = load_board("mps2-an385").target


def _model():
    """Convolutions whose rows fill one, two and four record chunks (8 panels of 4 rows), with
    and without a partial last panel, k a multiple of 8 or not, random weights, scales, zero
    points and activations (quantize_graph)."""
    m = M._Model("gemm_knobs_float32", seed=23)
    x = m.input("x", (1, 3, 5, 8))
    a = m.conv(x, 40, 1, "pw40", act="RELU")          # k 8, m 40: a chunk of 8 panels and 2 more
    b = m.conv(a, 62, 1, "pw62", act="RELU6")         # k 40, m 62: 15 panels and 2 rows
    c = m.conv(x, 128, 3, "c3x3")                     # k 72, m 128: 32 panels (over the 64 rows "columns" keeps)
    d = m.conv(a, 16, 1, "pw16")                      # m 16: one chunk, the orders coincide
    e = m.conv(x, 36, 3, "c3x3odd", stride=2)         # k 72, m 36: 9 panels, 3 columns... of a 2x3 plane
    f = m.conv(a, 132, 1, "pw132")                    # m 132: 33 panels, 5 chunks
    g = m.conv(x, 40, 2, "k2x2")                      # k 32
    h = m.conv(a, 44, 3, "c3x3k360")                  # k 360
    i = m.conv(x, 36, 1, "pw36k8")                    # k 8
    j = m.conv(b, 40, 1, "pw40k62")                   # k 62: not a multiple of 8 (a tail of pairs)
    rgb = m.input("rgb", (1, 4, 6, 3))
    k = m.conv(rgb, 12, 3, "c3x3k27")                 # k 27: odd, int16 columns spaced to 28
    n = m.conv(rgb, 10, 3, "c3x3k27m10")              # and a partial last panel
    return M.quantize_graph(m.graph([c, d, e, f, g, h, i, j, k, n]), "gemm_knobs_int8")


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("gemm_knobs") / "gemm_knobs_int8.tflite"
    path.write_bytes(tflite_writer.write_tflite(_model()))
    return path


@pytest.fixture(scope="module")
def convs(model_file):
    g = pipeline.run(load_model(model_file))
    return {n.outputs[0]: (n, lower_node(g, n, DSP), lower_node(g, n, PLAIN)) for n in g.nodes
            if not ops.get(n.op).is_view and n.op == "conv2d"}


def _calls(func) -> set[str]:
    return {c.name for c in walk(func.body) if isinstance(c, Call)}


def _same_results(func, scheduled, seed=0):
    """Both in the loop-IR interpreter on the same random arena contents: equal bytes."""
    from microcompile.tir.interp import run_primfunc

    rng = np.random.default_rng(seed)
    arrays = {b.name: rng.integers(-128, 128, b.shape).astype(np.int8) for b in func.buffers if b.scope == "arena"}
    want = run_primfunc(func, {k: v.copy() for k, v in arrays.items()})
    got = run_primfunc(scheduled, {k: v.copy() for k, v in arrays.items()})
    for name in arrays:
        np.testing.assert_array_equal(got[name], want[name], err_msg=name)


def test_the_default_point_is_the_default_schedule(convs):
    for name, (_, func, _) in convs.items():
        config = default_config(func, DSP, True)
        assert (config["gemm_loop_order"], config["gemm_tile"]) == ("panels", "auto")
        got_f, got_t = apply_config(func, DSP, config)
        want_f, want_t = default_schedule(func, DSP, wide=True)
        assert got_t == want_t and tir_str(got_f) == tir_str(want_f), name
        assert not any(d.args[:1] == ("gemm_loop_order",) for d in got_t.decisions), name
        # auto is recorded as what it chose, and only when that is 4x2
        assert all(d.args[1] == "4x2" for d in got_t.decisions if d.args[:1] == ("gemm_tile",)), name


@pytest.mark.parametrize("name", ["pw40", "pw62", "c3x3odd", "k2x2", "c3x3k360", "pw36k8"])
def test_columns_order_changes_the_call_and_computes_the_same(convs, name):
    _, func, _ = convs[name]
    config = {**default_config(func, DSP, True), "gemm_loop_order": "columns"}
    scheduled, trace = apply_config(func, DSP, config)
    default, _ = apply_config(func, DSP, {**default_config(func, DSP, True), "gemm_tile": "4x1"})
    assert "mc_gemm_p4_rq_dsp_s16" in _calls(default)
    assert _calls(scheduled) - _calls(default) == {"mc_gemm_p4_rq_dsp_s16_cols"}
    assert "mc_gemm_p4_rq_dsp_s16" not in _calls(scheduled)
    assert any(d.primitive == "knob" and d.args == ("gemm_loop_order", "columns") for d in trace.decisions)
    _same_results(func, scheduled)


@pytest.mark.parametrize("name,columns", [("pw40", 15), ("c3x3odd", 6), ("pw132", 15), ("pw36k8", 15)])
def test_4x2_tile_interleaves_the_columns_and_computes_the_same(convs, name, columns):
    _, func, _ = convs[name]
    config = {**default_config(func, DSP, True), "gemm_tile": "4x2"}
    scheduled, trace = apply_config(func, DSP, config)
    calls = _calls(scheduled)
    assert "mc_gemm_p4x2_rq_dsp_s16" in calls and "mc_gemm_p4_rq_dsp_s16" not in calls
    # every widened run of a pair goes to its interleaved place; an odd last column stays row-major
    assert "mc_widen_pairs_dsp_s8_s16" in calls
    assert ("mc_widen_dsp_s8_s16" in calls) == (columns % 2 == 1)
    assert [d.args for d in trace.decisions if d.primitive == "interleave_columns"] == [("mc_gemm_p4x2_rq_dsp_s16",)]
    assert any(d.primitive == "knob" and d.args == ("gemm_tile", "4x2") for d in trace.decisions)
    _same_results(func, scheduled)
    _same_results(func, scheduled, seed=1)


def test_the_interleaved_layout_is_the_documented_one():
    from microcompile.tir.intrinsics_gemm import pair_interleaved_index

    n, ldb = 5, 6
    got = {(j, p): int(pair_interleaved_index(j, p, n, ldb)) for j in range(n) for p in range(ldb)}
    assert sorted(got.values()) == list(range(n * ldb))                   # a permutation of the block
    assert [got[(0, p)] for p in range(4)] == [0, 1, 4, 5]               # column 0: k0k1, then k2k3 ...
    assert [got[(1, p)] for p in range(4)] == [2, 3, 6, 7]               # ... column 1's pairs in between
    assert [got[(3, p)] for p in range(2)] == [14, 15]                    # the second pair
    assert [got[(4, p)] for p in range(ldb)] == list(range(24, 30))       # the odd last column: row-major


def test_interleave_columns_refuses_a_function_without_the_kernel(convs):
    from microcompile.schedule.primitives import ScheduleError
    from microcompile.schedule.gemm_intrin import interleave_columns

    _, func, _ = convs["pw40"]
    default, _ = apply_config(func, DSP, {**default_config(func, DSP, True), "gemm_tile": "4x1"})
    with pytest.raises(ScheduleError, match="found 0 of mc_gemm_p4x2_rq_dsp_s16"):
        interleave_columns(default, "mc_gemm_p4x2_rq_dsp_s16")


@pytest.mark.parametrize("name,over,reason", [
    ("pw62", {}, "gemm_tile=4x2 needs whole panels of 4 rows \\(62 rows\\)"),
    ("pw40k62", {}, "gemm_tile=4x2 is a choice of the assembly loop, which needs k a multiple of 8 \\(k = 62\\)"),
    ("c3x3k360", {}, "needs two columns or more per block \\(the block has 1; knob cols\\)"),
    ("pw40", {"cols": 1}, "needs two columns or more per block"),
    ("pw40", {"wide_weights": 0}, "gemm_tile=4x2 is a choice of the int16 DSP kernel"),
    ("pw40", {"epilogue": "tile"}, "gemm_tile=4x2 is a choice of the requantizing kernel"),
    ("pw40", {"gemm_loop_order": "columns"}, "gemm_tile=4x2 runs chunks of panels outermost"),
])
def test_4x2_tile_is_refused_where_it_does_not_apply(convs, name, over, reason):
    _, func, _ = convs[name]
    config = {**default_config(func, DSP, True), "gemm_tile": "4x2", **over}
    with pytest.raises(InvalidConfig, match=f"conv2d: .*{reason}"):
        apply_config(func, DSP, config)


@pytest.mark.parametrize("name,over,reason", [
    ("pw16", {}, "the 16 rows fill one chunk of 8 panels"),
    ("pw132", {}, "runs at most 64 rows per assembly call \\(132 rows\\)"),
    ("c3x3", {}, "runs at most 64 rows per assembly call \\(128 rows\\)"),
    ("pw40k62", {}, "needs k a multiple of 8 \\(k = 62\\)"),
    ("pw62", {"wide_weights": 0}, "needs a DSP core and wide_weights=1"),
    ("pw62", {"epilogue": "tile"}, "needs epilogue fused or auto"),
])
def test_columns_order_is_refused_where_it_does_not_apply(convs, name, over, reason):
    _, func, _ = convs[name]
    config = {**default_config(func, DSP, True), "gemm_loop_order": "columns", **over}
    with pytest.raises(InvalidConfig, match=f"conv2d: gemm_loop_order=columns.*{reason}"):
        apply_config(func, DSP, config)


def test_columns_order_is_refused_on_a_core_without_dsp(convs):
    _, _, func = convs["pw62"]
    config = {**default_config(func, PLAIN, False), "gemm_loop_order": "columns"}
    with pytest.raises(InvalidConfig, match="needs a DSP core"):
        apply_config(func, PLAIN, config)


@pytest.mark.qemu
@pytest.mark.parametrize("knob,value,kernel,applies", [
    ("gemm_loop_order", "columns", "mc_gemm_p4_rq_dsp_s16_cols",
     {"pw40", "pw62", "c3x3odd", "k2x2", "c3x3k360", "pw36k8"}),
    # odd (15) and even (6) column counts, 1 to 5 record chunks, k from 8 to 72
    ("gemm_tile", "4x2", "mc_gemm_p4x2_rq_dsp_s16", {"pw40", "pw16", "pw132", "c3x3", "c3x3odd", "k2x2", "pw36k8"}),
])
def test_knob_values_are_bit_exact_on_cortex_m4(model_file, tmp_path, knob, value, kernel, applies):
    """Every conv where the value applies gets it through a records file, as a user would;
    deploy compares every output with the reference interpreter byte for byte."""
    from support import flows
    from microcompile.schedule import knob_space
    from microcompile.autotune.records import Outcome, RecordWriter, environment, record
    from microcompile.autotune.run import lowered_workloads

    board = load_board("mps2-an386")
    compiled, workloads = lowered_workloads(model_file, board)
    output_of = {n.name: n.outputs[0] for n, _, _ in compiled.kernels}
    records, tuned = tmp_path / "records.jsonl", set()
    with RecordWriter(records) as out:
        for w in workloads:
            if knob_space(w.func, board.target).family != "conv2d":
                continue
            config = {**w.default, "wide_weights": 1, knob: value}
            try:
                _, trace = apply_config(w.func, board.target, config)
            except InvalidConfig:
                continue
            out.write(record(environment(board), w, config, trace, Outcome("ok", 1, "instructions")))
            tuned.update(output_of[n] for n in w.nodes)
    assert tuned == applies, tuned
    result = flows.deploy(model_file, board, tmp_path / "p", emulate=True, records=records,
                           progress=lambda s: None)
    calls = {c.name for _, f, _ in result.compiled.kernels for c in walk(f.body) if isinstance(c, Call)}
    assert kernel in calls
    assert {output_of[n] for n in result.compiled.tuned} == tuned
    assert result.report["verified"], result.report["outputs"]


@pytest.mark.qemu
def test_k_not_a_multiple_of_8_runs_the_assembly_on_cortex_m4(model_file, tmp_path):
    """k = 62 and k = 27 (odd: the int16 im2col columns spaced to 28 by cache_read's even_rows)
    take the 4x1 assembly with its tail of pairs (p4_rq_s16_column_tail, which reads the odd
    column's spacing element against a zero weight) by default; the outputs equal the
    interpreter's byte for byte."""
    from support import flows

    board = load_board("mps2-an386")
    result = flows.deploy(model_file, board, tmp_path / "p", emulate=True, progress=lambda s: None)
    checked = set()
    for node, f, _ in result.compiled.kernels:
        if node.outputs[0] not in ("pw40k62", "c3x3k27", "c3x3k27m10"):
            continue
        call = next(c for c in walk(f.body) if isinstance(c, Call) and c.name == "mc_gemm_p4_rq_dsp_s16")
        params = call.args[-1].as_dict()
        assert params["k"] % 8 and params["ldb"] % 2 == 0, params
        checked.add(node.outputs[0])
    assert checked == {"pw40k62", "c3x3k27", "c3x3k27m10"}
    assert result.report["verified"], result.report["outputs"]
