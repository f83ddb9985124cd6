"""The conv2d placement knobs: pointwise (the 1x1 fast path reads the activations in place),
pad_split (the interior rows' im2col copy has no row test), cache_read_at and cache_write_at.
Each value gives other code than the default and the same bytes in the loop-IR interpreter
(random shapes and quantization), combinations it cannot carry out are rejected with the reason,
the scratch each needs is what it says (and is checked against a budget), the partition and
inline_let primitives keep results and replay from JSON; on the QEMU twin, kws's pointwise and
first convs and a random padded 3x3 conv answer byte for byte with the knobs set."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest


from support.lower_cases import build_graph, cases  # noqa: E402
from tests.conftest import model_path  # noqa: E402

from microcompile.lower import lower_node  # noqa: E402
from microcompile.schedule import InvalidConfig, Schedule, ScheduleError, Trace, apply_config, default_config  # noqa: E402
from microcompile.schedule.loop_xform import partition, value_range  # noqa: E402
from microcompile.target import load_board  # noqa: E402
from microcompile.tir.interp import run_primfunc  # noqa: E402
from microcompile.tir.nodes import BinOp, IntImm, Select, Var, walk  # noqa: E402
from microcompile.tir.printer import tir_str  # noqa: E402

DSP = load_board("mps2-an386").target
PLAIN = load_board("mps2-an385").target


def _conv(target, seed=5, **over):
    """One int8 conv2d, lowered; `over` changes the case (hw: rows, columns hw + 1)."""
    case = dict(cases("conv2d", "int8", 1, seed=seed)[0], hw=8, cin=8, cout=5, kernel=3, stride=1, dilation=1,
                batch=1, padding="SAME", rect=False)
    g = build_graph({**case, **over})
    return lower_node(g, g.nodes[0], target)


def _same(func, scheduled, seed=0):
    rng = np.random.default_rng(seed)
    arrays = {b.name: rng.integers(-128, 128, b.shape).astype(np.int8) for b in func.buffers if b.scope == "arena"}
    want = run_primfunc(func, {k: v.copy() for k, v in arrays.items()})
    got = run_primfunc(scheduled, {k: v.copy() for k, v in arrays.items()})
    for name in arrays:
        assert np.array_equal(got[name], want[name]), name


def _point(func, target, **knobs):
    """The default point with `knobs`; pad_split none and im2col columns unless given (their
    defaults, auto, are rows and window where they apply: the cases compare a value with the plain
    schedule; test_im2col_window.py has the window's)."""
    base = default_config(func, target, target is DSP)
    return {**base, "pad_split": "none", "im2col": "columns", **knobs}


POINTWISE = {"kernel": 1, "padding": "VALID"}
# (case changes, knob values, the knob values of the point it is compared with)
CASES = [
    (POINTWISE, {"pointwise": "direct", "wide_weights": 0, "epilogue": "tile"}, {"wide_weights": 0, "epilogue": "tile"}),
    (POINTWISE, {"pointwise": "direct", "wide_weights": 0, "cols": 8, "epilogue": "tile"},
     {"wide_weights": 0, "cols": 8, "epilogue": "tile"}),
    ({}, {"pad_split": "rows", "cols": 4}, {"cols": 4}),
    ({}, {"pad_split": "rows", "cols": 1}, {"cols": 1}),
    ({}, {"pad_split": "rows", "cols": 4, "epilogue": "tile", "cache_write_at": "pixel"},
     {"cols": 4, "epilogue": "tile", "cache_write_at": "pixel"}),
    ({"hw": 4, "cin": 1}, {"pad_split": "rows"}, {}),              # one block: the copy's pixel loop is cut
    ({}, {"pad_split": "rows", "cols": 4, "cache_read_at": "plane"}, {"cols": 4, "cache_read_at": "plane"}),
    ({}, {"cache_read_at": "pixel"}, {}),
    ({}, {"cache_read_at": "pixel", "epilogue": "tile"}, {"epilogue": "tile"}),
    ({}, {"cache_read_at": "plane", "cols": 4}, {"cols": 4}),
    ({}, {"epilogue": "tile", "cache_write_at": "pixel"}, {"epilogue": "tile"}),
    ({"kernel": 5, "stride": 2}, {"pad_split": "rows", "cols": 2}, {"cols": 2}),
]


@pytest.mark.parametrize("target", [DSP, PLAIN], ids=["dsp", "c"])
@pytest.mark.parametrize("over,knobs,base", CASES, ids=[str(k) for _, k, _ in CASES])
def test_each_value_changes_the_code_and_computes_the_same(over, knobs, base, target):
    func = _conv(target, **over)
    wide = {"wide_weights": 0} if target is PLAIN else {}
    got, trace = apply_config(func, target, _point(func, target, **{**knobs, **wide}))
    want, _ = apply_config(func, target, _point(func, target, **{**base, **wide}))
    assert tir_str(got) != tir_str(want)
    # every non-default knob is in the trace, which replays to the same function
    recorded = {d.args[0]: d.args[1] for d in trace.decisions if d.primitive == "knob"}
    for k in ("pointwise", "pad_split", "cache_read_at", "cache_write_at"):
        if k in knobs:
            assert recorded[k] == knobs[k]
    assert tir_str(Trace.loads(trace.dumps()).apply(func)) == tir_str(got)
    _same(func, got)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_padded_convs_stay_exact(seed):
    """Random shapes, kernels, strides, dilations and quantization: every valid knob point of the
    new knobs computes the same bytes (invalid ones say why)."""
    rng = np.random.default_rng(seed)
    over = {"hw": int(rng.integers(5, 11)), "cin": int(rng.integers(1, 9)), "cout": int(rng.integers(1, 9)),
            "kernel": int(rng.choice([3, 5])), "stride": int(rng.choice([1, 2])), "dilation": int(rng.choice([1, 2]))}
    func = _conv(DSP, seed=seed, **over)
    ran = 0
    for knobs in ({"pad_split": "rows", "cols": c} for c in (1, 2, 4, 5)):
        try:
            got, _ = apply_config(func, DSP, _point(func, DSP, **knobs))
        except InvalidConfig as e:
            assert "does not divide" in str(e) or "no block" in str(e) or "larger than" in str(e), e
            continue
        _same(func, got, seed)
        ran += 1
    try:
        got, _ = apply_config(func, DSP, _point(func, DSP, cache_read_at="pixel"))
        _same(func, got, seed)
    except InvalidConfig as e:
        assert over["cout"] == 1 and "one output channel" in str(e), e
    assert ran >= 1, over


def test_pointwise_direct_reads_the_activations_in_place():
    """On DSP cores the fused int8 kernel reads x with ldb = channels and no scratch at all."""
    func = _conv(DSP, cout=8, **POINTWISE)              # whole panels of 4 rows: the DSP kernel
    got, _ = apply_config(func, DSP, _point(func, DSP, pointwise="direct", wide_weights=0))
    assert got.scratch_bytes == 0 and not any(b.scope == "scratch" for b in got.buffers)
    text = tir_str(got)
    assert "mc_gemm_p4_rq_dsp_s8(" in text and "&x[" in text and "ldb=8" in text, text
    _same(func, got)
    # the c kernels write a pair of columns while reading both: in place (conv2d's "window" rule
    # lets the planner put the output over the input) that answered wrong on the Cortex-M3
    with pytest.raises(InvalidConfig, match="needs the dsp kernel that finishes one column.*use epilogue=tile"):
        apply_config(func, PLAIN, _point(func, PLAIN, pointwise="direct", wide_weights=0))
    plain, _ = apply_config(func, PLAIN, _point(func, PLAIN, pointwise="direct", wide_weights=0, epilogue="tile"))
    assert "mc_gemm_nt_c_s8(" in tir_str(plain) and "&x[" in tir_str(plain)
    assert {b.name for b in plain.buffers if b.scope == "scratch"} == {"acc_tile"}      # no im2col buffer


def test_pad_split_takes_the_row_test_out_of_the_interior():
    func = _conv(DSP)                                    # 8x9 output, 3x3 SAME: rows 1..6 interior
    got, trace = apply_config(func, DSP, _point(func, DSP, pad_split="rows", cols=1))
    cut = next(d for d in trace.decisions if d.primitive == "partition")
    assert cut.args == ("oh_ow_o", 9, 63)                # pixels of rows 1..6
    text = tir_str(got)
    middle = text[text.index("for oh_ow_o_p1 "):text.index("for oh_ow_o_p2 ")]
    assert "ih_c_p1 >= 0" not in middle and "ih_c_p1 < 8" not in middle and "iw_c_p1 >= 0" in middle, middle
    head = text[text.index("for oh_ow_o "):text.index("for oh_ow_o_p1 ")]
    assert "ih_c >= 0" in head


@pytest.mark.parametrize("over,knobs,reason", [
    (POINTWISE, {"pointwise": "direct"}, "no int16 column to read .set wide_weights=0"),
    ({}, {"pointwise": "direct", "wide_weights": 0}, "needs a 1x1, stride-1, unpadded conv: the conv is padded"),
    ({"kernel": 1, "padding": "VALID", "stride": 2}, {"pointwise": "direct", "wide_weights": 0},
     "the kernel is not 1x1 with stride 1"),
    (POINTWISE, {"pointwise": "direct", "wide_weights": 0, "cache_read_at": "pixel"}, "no im2col copy"),
    (POINTWISE, {"pad_split": "rows"}, "pad_split=rows: the conv is not padded"),
    ({}, {"pad_split": "rows", "cols": 8}, "over col_bytes_max"),
    ({"hw": 4, "kernel": 5, "stride": 2}, {"pad_split": "rows"}, "no output row has all its taps inside"),
    ({}, {"cache_write_at": "pixel"}, "cache_write_at=pixel places the int32 tile of epilogue=tile"),
    ({"hw": 4, "cin": 1}, {"cache_read_at": "plane"}, "one block covers the plane"),
    ({}, {"cache_read_at": "pixel", "cols": 1}, "blocks of one column .cols=1. is the block placement"),
])
def test_combinations_it_cannot_do_are_rejected_with_the_reason(over, knobs, reason):
    func = _conv(DSP, **over)
    with pytest.raises(InvalidConfig, match=reason):
        apply_config(func, DSP, _point(func, DSP, **knobs))


def test_pad_split_with_blocks_across_the_interior_is_rejected():
    func = _conv(PLAIN, hw=6)                            # default block: 21 of the 42 pixels
    with pytest.raises(InvalidConfig, match="no block of 21 output pixels lies wholly in the interior rows 1..4"):
        apply_config(func, PLAIN, _point(func, PLAIN, pad_split="rows", wide_weights=0))


def test_scratch_of_each_placement_and_the_budget():
    func = _conv(DSP)
    block, _ = apply_config(func, DSP, _point(func, DSP, cols=4))
    pixel, _ = apply_config(func, DSP, _point(func, DSP, cols=4, cache_read_at="pixel"))
    plane, _ = apply_config(func, DSP, _point(func, DSP, cols=4, cache_read_at="plane"))
    col = 9 * 8 * 2                                      # one int16 im2col column: 3x3 taps of 8 channels
    assert (pixel.scratch_bytes, block.scratch_bytes, plane.scratch_bytes) == (col, 4 * col, 72 * col)
    with pytest.raises(InvalidConfig, match=f"scratch of {72 * col} bytes exceeds the budget of 4096 bytes"):
        apply_config(func, DSP, _point(func, DSP, cols=4, cache_read_at="plane"), scratch_budget=4096)
    tile, _ = apply_config(func, DSP, _point(func, DSP, cols=4, epilogue="tile"))
    per_pixel, _ = apply_config(func, DSP, _point(func, DSP, cols=4, epilogue="tile", cache_write_at="pixel"))
    tiles = {b.name: b.nbytes for b in tile.buffers if b.name.startswith("acc")}
    assert tiles == {"acc_tile": 4 * 5 * 4}
    assert {b.name: b.nbytes for b in per_pixel.buffers if b.name.startswith("acc")} == {"acc_tile": 5 * 4}


def test_partition_primitive():
    func = _conv(DSP, hw=4, cin=3)
    sch = Schedule(func)
    sch.fuse("oh", "ow")
    sch.split("oh_ow", 5)
    sch.cache_read("xv", "oh_ow_o", "int16")
    before = sch.func
    after = partition(before, "oh_ow_o", 1, 3)
    _same(func, after)
    # the middle part (blocks 1, 2: pixels 5..14, rows 1..2 of 4) lost its row test, the others kept theirs
    names = [{v.name for v in walk(n.cond) if isinstance(v, Var)} for n in walk(after.body) if isinstance(n, Select)]
    assert names == [{"ih_c", "iw_c"}, {"iw_c_p1"}, {"ih_c_p2", "iw_c_p2"}], names
    with pytest.raises(ScheduleError, match="not increasing"):
        partition(before, "oh_ow_o", 3, 1)
    with pytest.raises(ScheduleError, match="not increasing"):
        partition(before, "oh_ow_o", 0)
    i = Var("i")
    assert value_range(BinOp("div", BinOp("add", BinOp("mul", i, IntImm(4)), IntImm(3)), IntImm(5)),
                       {"i": (1, 3)}) == (1, 3)
    assert value_range(BinOp("mod", i, IntImm(5)), {"i": (6, 8)}) == (1, 3)
    assert value_range(BinOp("mod", i, IntImm(5)), {"i": (3, 6)}) == (0, 4)
    assert value_range(BinOp("div", i, IntImm(2)), {"i": (-3, -1)}) == (-1, 0)      # C truncation


# ---------------------------------------------------------------- on the QEMU twin

def _measure(model, board, tmp_path, points):
    """Each (knob changes) point, one firmware per batch of distinct workloads: outputs and every
    tuned kernel's tensor must equal the reference interpreter's bytes (tuning.Measurer)."""
    from microcompile.autotune import run as tuning
    from support import flows

    compiled, workloads = tuning.lowered_workloads(model, board)
    meter = flows.measurer(model, board, tmp_path / "work", compiled, emulate=True, port=None, timeout=120.0)
    items = []
    for pick, knobs in points:
        w = next(w for w in workloads if w.family == "conv2d" and pick(w))
        config = {**w.default, **knobs}
        items.append((w, config, apply_config(w.func, board.target, config)[1]))
    outcomes = meter.batch(0, items)
    for (w, config, _), out in zip(items, outcomes):
        assert out.status == "ok" and out.count > 0, (w.key, config, out)
    return outcomes


@pytest.mark.qemu
def test_random_padded_conv_with_the_knobs_on_qemu(tmp_path):
    from microcompile.frontend.tflite.writer import write_tflite

    rng = np.random.default_rng(2026)
    case = dict(cases("conv2d", "int8", 1, seed=int(rng.integers(1 << 30)))[0], hw=9, cin=int(rng.integers(3, 9)),
                cout=int(rng.integers(4, 13)), kernel=3, stride=1, dilation=1, batch=1, padding="SAME", rect=False)
    model = tmp_path / "conv.tflite"
    model.write_bytes(write_tflite(build_graph(case)))                 # 9x10 output plane
    board = load_board("mps2-an386")
    for knobs in ({"pad_split": "rows", "cols": 10, "col_bytes_max": 4096, "cache_read_at": "plane"},
                  {"pad_split": "rows", "cols": 5, "col_bytes_max": 4096, "epilogue": "tile",
                   "cache_read_at": "pixel", "cache_write_at": "pixel"}):
        _measure(model, board, tmp_path, [(lambda w: True, knobs)])


@pytest.mark.qemu
@pytest.mark.parametrize("board_name", ["mps2-an386", "mps2-an385"])
def test_kws_convs_with_the_knobs_on_qemu(board_name, tmp_path):
    """kws's pointwise convs read their input in place (on the Cortex-M3 through the tile, as the
    fused c kernel may not: see test_pointwise_direct_reads_the_activations_in_place) and its
    first conv copies its interior rows without the row test, in one firmware."""
    model = model_path("kws_ref_model")
    direct = {"pointwise": "direct", "wide_weights": 0}
    if board_name == "mps2-an385":
        direct["epilogue"] = "tile"
    _measure(model, load_board(board_name), tmp_path,
             [(lambda w: w.key.startswith("conv2d:1x25x5x64->"), direct),
              (lambda w: w.key.startswith("conv2d:1x49x10x1->"), {"pad_split": "rows"})])


@pytest.mark.parametrize("target", [DSP, PLAIN], ids=["dsp", "c"])
def test_the_default_splits_the_padded_rows_where_it_can(target):
    """pad_split's default, auto (folded from the tuning runs): rows on a padded conv with a block
    inside the interior rows, none where rows is refused (unpadded, or no interior block)."""
    wide = {"wide_weights": 0} if target is PLAIN else {}
    padded = _conv(target)
    columns = {"im2col": "columns"}                      # (the window's own pad split: test_im2col_window.py)
    auto, trace = apply_config(padded, target, {**default_config(padded, target, target is DSP), **columns, **wide})
    rows, _ = apply_config(padded, target, _point(padded, target, pad_split="rows", **wide))
    none, _ = apply_config(padded, target, _point(padded, target, **wide))
    assert tir_str(auto) == tir_str(rows) != tir_str(none)
    assert ("knob", "pad_split", "rows") in [(d.primitive, *d.args) for d in trace.decisions]
    unpadded = _conv(target, **POINTWISE)
    with pytest.raises(InvalidConfig):
        apply_config(unpadded, target, _point(unpadded, target, pad_split="rows", **wide))
    auto, _ = apply_config(unpadded, target, {**default_config(unpadded, target, target is DSP), **columns, **wide})
    none, _ = apply_config(unpadded, target, _point(unpadded, target, **wide))
    assert tir_str(auto) == tir_str(none)
