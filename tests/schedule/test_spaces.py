"""Knob spaces: declared domains per family, the default schedule as one point of each space
(same PrimFunc text and trace as default_schedule), rejection of invalid choices with a
reason before code generation, and valid non-default points staying bit-exact (loop-IR
interpreter)."""

from __future__ import annotations

import numpy as np
import pytest

from microcompile.schedule import (FAMILIES, InvalidConfig, KnobSpace, apply_config, default_config,
                                   default_schedule, knob_space)
from microcompile.target import load_board
from microcompile.tir.nodes import For, walk
from microcompile.tir.printer import tir_str
from tests.conftest import model_path
from support import multi_op_models as M
from support.lower_cases import lowered_model, same_results

DSP = load_board("mps2-an386").target
PLAIN = load_board("mps2-an385").target



@pytest.fixture(scope="module")
def funcs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("spaces")
    out = []
    for name in ("dscnn_int8", "residual_int8", "multi_io_int8", "dscnn_float32"):
        path = M.write(name, tmp)
        for target in (DSP, PLAIN):
            out += [(name, target, n, f) for n, f in lowered_model(path, target)]
    return out


def test_every_family_is_matched_and_the_default_is_one_point(funcs):
    seen = set()
    for name, target, node, func in funcs:
        space = knob_space(func, target)
        seen.add(space.family)
        for wide in (True, False):
            config = default_config(func, target, wide)
            space.check(config)                           # in the declared domains
            try:
                got_f, got_t = apply_config(func, target, config)
            except InvalidConfig:
                # only where the default itself is not the point (wide=True on a core without DSP)
                assert target is PLAIN and config.get("wide_weights") == 1, (name, node.name, config)
                continue
            want_f, want_t = default_schedule(func, target, wide=wide)
            assert got_t == want_t, (name, node.name, wide)
            assert tir_str(got_f) == tir_str(want_f), (name, node.name, wide)
    assert seen == set(FAMILIES), seen


def test_domains_are_declared_and_checked():
    space = KnobSpace("x", tuple(FAMILIES["conv2d"].knobs(None, None)))
    assert space.size == np.prod([len(k.domain) for k in space.knobs]) > 1000
    config = FAMILIES["conv2d"].default(None, None, True)
    space.check(config)
    with pytest.raises(InvalidConfig, match="cols=3 is outside its domain"):
        space.check({**config, "cols": 3})
    with pytest.raises(InvalidConfig, match="unknown knob.*tile_x.*missing knob.*epilogue"):
        space.check({**{k: v for k, v in config.items() if k != "epilogue"}, "tile_x": 2})
    assert all(sum(1 for k in space.names if c[k] != config[k]) == 1 for c in space.neighbours(config))
    # every point once: enumerated on the depthwise space (conv2d's 1.7 million take a minute)
    small = KnobSpace("x", tuple(FAMILIES["depthwise_conv2d"].knobs(None, None)))
    pts = list(small.points())
    assert len(pts) == small.size > 100 and len({tuple(p.values()) for p in pts}) == small.size


def _node(funcs, model, op, target=DSP):
    return next(f for name, t, n, f in funcs if name == model and n.op == op and t is target)


def test_invalid_choices_are_rejected_with_the_reason(funcs):
    conv = _node(funcs, "dscnn_int8", "conv2d")           # 5x5 output plane: 25 pixels
    base = default_config(conv, DSP, True)
    with pytest.raises(InvalidConfig, match="32 columns is larger than the 25 output pixels"):
        apply_config(conv, DSP, {**base, "cols": 32})
    with pytest.raises(InvalidConfig, match="4 columns does not divide the 25 output pixels"):
        apply_config(conv, DSP, {**base, "cols": 4})
    with pytest.raises(InvalidConfig, match="over col_bytes_max 256"):
        apply_config(conv, DSP, {**base, "cols": 25, "col_bytes_max": 256})
    with pytest.raises(InvalidConfig, match="no effect on the c kernels"):
        apply_config(_node(funcs, "dscnn_int8", "conv2d", PLAIN), PLAIN, {**base, "col_bytes_max": 2048,
                                                                          "wide_weights": 1})
    with pytest.raises(InvalidConfig, match="scratch of .* bytes exceeds the budget of 8 bytes"):
        apply_config(conv, DSP, base, scratch_budget=8)
    dw = _node(funcs, "dscnn_int8", "depthwise_conv2d")
    with pytest.raises(InvalidConfig, match="needs wide_weights=1"):
        apply_config(dw, DSP, {**default_config(dw, DSP, True), "wide_weights": 0})
    fc = _node(funcs, "dscnn_int8", "fully_connected")    # 12 units
    with pytest.raises(InvalidConfig, match="16 rows is larger than the 12 units"):
        apply_config(fc, DSP, {**default_config(fc, DSP, True), "acc_rows": 16})
    pool = _node(funcs, "dscnn_int8", "average_pool2d")
    with pytest.raises(InvalidConfig, match="knob sketch='tile16' is outside its domain"):   # 28 channels
        apply_config(pool, DSP, {**default_config(pool, DSP, True), "sketch": "tile16"})
    soft = _node(funcs, "dscnn_int8", "softmax")     # int8: the exp-table family, not sketches
    assert default_config(soft, DSP, True)["tables"] == 1 and default_config(soft, DSP, False)["tables"] == 0
    with pytest.raises(InvalidConfig, match="unknown knob.*sketch"):
        apply_config(soft, DSP, {**default_config(soft, DSP, True), "sketch": "tile2"})


@pytest.mark.parametrize("model,op,over", [
    ("dscnn_int8", "conv2d", {"cols": 5, "epilogue": "tile"}),
    ("dscnn_int8", "conv2d", {"cols": 1, "wide_weights": 0, "unroll_max_extent": 8}),
    ("dscnn_int8", "depthwise_conv2d", {"depthwise_kernel": "loops"}),
    ("dscnn_int8", "fully_connected", {"acc_rows": 4, "wide_weights": 0}),
    ("dscnn_int8", "average_pool2d", {"sketch": "tile4"}),
    ("dscnn_int8", "average_pool2d", {"sketch": "tile2@scratch", "unroll_max_extent": 0}),
    ("dscnn_float32", "conv2d", {"cols": 1}),         # the FPU GEMM (f32_fpu) with its 4x1 tile only
    ("dscnn_float32", "conv2d", {"col_bytes_max": 256}),
])
def test_valid_points_compute_the_same(funcs, model, op, over):
    func = _node(funcs, model, op)
    config = {**default_config(func, DSP, True), **over}
    scheduled, trace = apply_config(func, DSP, config)
    assert trace.decisions and scheduled is not func
    same_results(func, scheduled)


def test_pooling_windows_up_to_eight_wide_are_unrolled_by_default(funcs):
    """The tuner's finding folded into the default (kws's 25x5 average pool: 39,760 -> 22,120
    instructions on mps2-an386): a 5-wide pooling window is unrolled, a 5-wide loop of another
    op is not."""
    pool = _node(funcs, "dscnn_int8", "average_pool2d")
    f, trace = default_schedule(pool, DSP, wide=True)
    loops = {n.var.name: n.extent for n in walk(f.body) if isinstance(n, For)}
    unrolled = {d.args[0] for d in trace.decisions if d.primitive == "unroll"}
    assert any(loops[name] == 5 for name in unrolled if name in loops), (loops, unrolled)
    assert default_config(pool, DSP, True)["unroll_max_extent"] == 8
    conv = _node(funcs, "dscnn_int8", "conv2d")
    assert default_config(conv, DSP, True)["unroll_max_extent"] == 4
