"""conv2d's im2col=window (schedule/window.py): a block of one output row's pixels caches the
input columns they share once, read by the int16 DSP GEMM as overlapping columns. Over random
shapes, strides, paddings and quantization it computes the same bytes as the unscheduled loops
in the loop-IR interpreter; the buffer and the call are the window's (ldb = stride*KH*C < k);
it is the default where it applies and the columns would not take the 4x2 tile, never with
more scratch than the int8 columns; it is
refused with the reason where it does not apply; transpose_constant keeps every value; and on
the QEMU twin a random padded conv and a strided one answer byte for byte."""

from __future__ import annotations

import numpy as np
import pytest

from support.lower_cases import build_graph, cases

from microcompile.lower import lower_node
from microcompile.schedule import InvalidConfig, Schedule, apply_config, default_config
from microcompile.target import load_board
from microcompile.tir.nodes import Call, walk
from microcompile.tir.printer import tir_str
from tests.schedule.test_conv_knobs import _measure, _same

DSP = load_board("mps2-an386").target
PLAIN = load_board("mps2-an385").target


def _conv(seed, target=DSP, **over):
    case = dict(cases("conv2d", "int8", 1, seed=seed)[0], batch=1, dilation=1, rect=False)
    g = build_graph({**case, **over})
    return lower_node(g, g.nodes[0], target)


def _gemm(func):
    return next(c for c in walk(func.body) if isinstance(c, Call) and c.name.startswith("mc_gemm_p4_rq_dsp_s16"))


@pytest.mark.parametrize("seed", range(6))
def test_window_is_the_default_and_computes_the_same(seed):
    rng = np.random.default_rng(100 + seed)
    kernel = int(rng.integers(2, 5))
    stride = int(rng.integers(1, 3)) if kernel > 2 else 1
    cin = int(rng.choice([2, 4, 8, 16])) if stride * kernel % 2 else int(rng.integers(1, 9))
    func = _conv(seed, hw=int(rng.integers(5, 11)), cin=cin, cout=int(rng.integers(4, 13)), kernel=kernel,
                 stride=stride, padding=str(rng.choice(["SAME", "VALID"])))
    default, trace = apply_config(func, DSP, default_config(func, DSP, True))
    knobs = [(d.primitive, *d.args) for d in trace.decisions]
    # the default: the window, unless the columns take the 4x2 tile (fewer cycles there)
    assert ("knob", "im2col", "window") in knobs or ("knob", "gemm_tile", "4x2") in knobs, knobs
    got, _ = apply_config(func, DSP, {**default_config(func, DSP, True), "im2col": "window"})
    win = next(b for b in got.buffers if b.name == "xv_win")
    call = _gemm(got)
    params = call.args[-1]
    ldb, k = params.as_dict()["ldb"], params.as_dict()["k"]
    assert ldb == stride * kernel * cin < k == kernel * kernel * cin, tir_str(got)
    assert win.shape[1:] == ((kernel, cin) if cin > 1 else (kernel,))
    _same(func, got, seed)
    columns, _ = apply_config(func, DSP, {**default_config(func, DSP, True), "im2col": "columns"})
    assert "xv_cache" in tir_str(columns)
    # never more scratch than the int8 columns the compiler's peak rule compares it with
    narrow, _ = apply_config(func, DSP, {**default_config(func, DSP, False), "im2col": "columns"})
    assert got.scratch_bytes <= max(narrow.scratch_bytes, win.size * 2)
    _same(func, columns, seed)


def test_window_of_a_row_block_reads_each_input_column_once():
    """ResNet-8's 16-channel 3x3 conv on a 6x7 plane: blocks of the whole row of 7 pixels (1,008
    bytes of int8 columns under the 1 KiB cap; the window takes 864) copy 9 input columns of 3x16."""
    func = _conv(1, hw=6, cin=16, cout=16, kernel=3, stride=1, padding="SAME")
    got, trace = apply_config(func, DSP, default_config(func, DSP, True))
    win = next(b for b in got.buffers if b.name == "xv_win")
    assert win.shape == (9, 3, 16) and win.dtype == "int16"
    text = tir_str(got)
    assert "ldb=48" in text and "n=7, k=144" in text, text
    # the interior rows' copy has no row test (pad_split: the oh loop cut at rows 1 and 5)
    assert ("partition", "oh", 1, 5) in [(d.primitive, *d.args) for d in trace.decisions]
    _same(func, got)


@pytest.mark.parametrize("over,knobs,reason", [
    ({"cin": 8}, {"gemm_tile": "4x2"}, "fused 4x1 kernel"),
    ({}, {"epilogue": "tile"}, "fused 4x1 kernel"),
    ({}, {"wide_weights": 0}, "needs a DSP core and wide_weights=1"),
    ({"kernel": 1, "padding": "VALID"}, {}, "2-D kernel over output rows and columns"),
    ({"kernel": 2, "stride": 2}, {}, "2 apart share no input columns of a kernel 2 wide"),
    ({"dilation": 2}, {}, "dilated"),
    ({"cin": 3, "kernel": 3, "stride": 1}, {}, "odd, and the int16 kernel reads them by words"),
    ({}, {"cols": 2}, "does not divide the output row of 9"),
])
def test_window_is_refused_with_the_reason(over, knobs, reason):
    case = {"hw": 8, "cin": 4, "cout": 8, "kernel": 3, "stride": 1, "padding": "SAME", **over}
    func = _conv(3, **case)
    config = {**default_config(func, DSP, True), **knobs, "im2col": "window"}
    with pytest.raises(InvalidConfig, match=reason):
        apply_config(func, DSP, config)
    auto, _ = apply_config(func, DSP, {**config, "im2col": "auto"})       # auto takes the columns
    assert "xv_win" not in tir_str(auto)


def test_window_is_refused_on_a_core_without_dsp():
    func = _conv(3, PLAIN, hw=8, cin=4, cout=8, kernel=3, stride=1, padding="SAME")
    with pytest.raises(InvalidConfig, match="needs a DSP core"):
        apply_config(func, PLAIN, {**default_config(func, PLAIN, False), "im2col": "window"})
    auto, _ = apply_config(func, PLAIN, default_config(func, PLAIN, False))
    assert "xv_win" not in tir_str(auto)


def test_transpose_constant_keeps_every_value():
    func = _conv(4, hw=6, cin=3, cout=5, kernel=3, stride=1, padding="SAME")
    sch = Schedule(func)
    sch.reorder("kw", "kh")
    sch.apply("transpose_constant", "w", 0, 2, 1, 3)
    w0 = next(b for b in func.buffers if b.name == "w")
    w1 = next(b for b in sch.func.buffers if b.name == "w")
    np.testing.assert_array_equal(np.asarray(w1.data).reshape(w1.shape), np.asarray(w0.data).transpose(0, 2, 1, 3))
    _same(func, sch.func)
    from microcompile.schedule import ScheduleError
    with pytest.raises(ScheduleError, match="not a permutation"):
        Schedule(func).apply("transpose_constant", "w", 0, 1, 1, 3)


@pytest.mark.qemu
def test_window_on_qemu(tmp_path):
    """A random padded 3x3 conv and a strided 4x4 one through the default (window) and a tuned
    block of the whole row: the device's outputs equal the reference interpreter's bytes."""
    from microcompile.frontend.tflite.writer import write_tflite

    board = load_board("mps2-an386")
    rng = np.random.default_rng(77)
    for i, (kernel, stride, cin) in enumerate(((3, 1, int(rng.integers(3, 9)) * 2), (4, 2, 3))):
        case = dict(cases("conv2d", "int8", 1, seed=int(rng.integers(1 << 30)))[0], hw=10, cin=cin,
                    cout=int(rng.integers(4, 13)), kernel=kernel, stride=stride, dilation=1, batch=1,
                    padding="SAME", rect=False)
        model = tmp_path / f"conv{i}.tflite"
        model.write_bytes(write_tflite(build_graph(case)))
        for j, knobs in enumerate(({"im2col": "window"}, {"im2col": "window", "col_bytes_max": 8192})):
            _measure(model, board, tmp_path / f"{i}{j}", [(lambda w: True, knobs)])


def test_the_columns_keep_the_4x2_tile_where_they_take_it():
    """k = 72 in blocks of 6 pixels: the columns' 4x2 tile (half the weight loads: fewer cycles)
    stays the default; asked for, the window computes the same."""
    func = _conv(8, hw=8, cin=8, cout=8, kernel=3, stride=1, padding="SAME")
    got, trace = apply_config(func, DSP, default_config(func, DSP, True))
    knobs = [(d.primitive, *d.args) for d in trace.decisions]
    assert ("knob", "gemm_tile", "4x2") in knobs and ("knob", "im2col", "window") not in knobs, knobs
    win, _ = apply_config(func, DSP, {**default_config(func, DSP, True), "im2col": "window"})
    assert "xv_win" in tir_str(win)
    _same(func, got)
    _same(func, win)


def test_transpose_constant_refuses_an_index_that_carries():
    """w[i + 2] over i < 4 of an int8[2, 4] crosses from row 0 into row 1: no per-dimension
    rewrite keeps it, so the primitive refuses instead of reading out of bounds."""
    from microcompile.schedule import ScheduleError
    from microcompile.tir.nodes import Buffer, For, IntImm, Load, PrimFunc, Store, Var, add

    w = Buffer("w", "int8", (2, 4), "const", data=np.arange(8, dtype=np.int8).reshape(2, 4))
    out = Buffer("y", "int8", (4,), "arena", tensor="y")
    i = Var("i")
    func = PrimFunc("carry", (w, out), For(i, 4, Store(out, i, Load(w, add(i, IntImm(2))))), {})
    with pytest.raises(ScheduleError, match="carries"):
        Schedule(func).apply("transpose_constant", "w", 1, 0)
    inside = PrimFunc("inside", (w, out), For(i, 4, Store(out, i, Load(w, add(i, IntImm(4))))), {})
    sch = Schedule(inside)
    sch.apply("transpose_constant", "w", 1, 0)
    _same(inside, sch.func)
