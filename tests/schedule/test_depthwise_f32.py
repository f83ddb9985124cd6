"""Helium's float32 depthwise kernel (schedule/depthwise_f32.py, runtime_c/kernels/mve/
mc_depthwise_f32_mve.c): on the Cortex-M55 every region's channel loop of a float depthwise
layer of depth multiplier 1 is one call per output pixel, the default sketch; over channels
that are and are not multiples of the kernel's 16- and 4-channel blocks, windows, strides,
dilations, padding and every activation it matches the reference in the loop-IR interpreter,
with its output placed over its input as memory/inplace.py allows, and on the mps3-an547
twin; other cores and depth multipliers keep the loops."""

from __future__ import annotations

from dataclasses import replace

import pytest

from support.inplace_check import check_in_place
from support.lower_cases import build_graph, cases, matches, random_inputs, reference, run_lowered
from support.qemu_cases import deploy_graph, merge_graphs, merged_inputs

from microcompile.lower import lower_node
from microcompile.schedule import default_schedule, knob_space
from microcompile.schedule.sketch import default_sketch
from microcompile.target import load_board
from microcompile.tir.intrinsics_depthwise_f32 import DEPTHWISE_F32_MVE_KERNELS, channel_blocks
from microcompile.tir.nodes import Call, For, walk
from microcompile.tir.printer import tir_str

M55 = load_board("mps3-an547").target
M4F = load_board("mps2-an386").target
ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")

# channels around the 16- and 4-channel blocks; windows, strides, dilation and padding
SHAPES = [dict(hw=6, cin=16, kernel=3, stride=1, dilation=1, padding="SAME", rect=False),
          dict(hw=7, cin=37, kernel=3, stride=2, dilation=1, padding="SAME", rect=True),
          dict(hw=5, cin=3, kernel=3, stride=1, dilation=1, padding="VALID", rect=False),
          dict(hw=8, cin=20, kernel=5, stride=1, dilation=1, padding="SAME", rect=True),
          dict(hw=9, cin=8, kernel=3, stride=1, dilation=2, padding="SAME", rect=False),
          dict(hw=6, cin=33, kernel=2, stride=2, dilation=1, padding="VALID", rect=True),
          dict(hw=4, cin=64, kernel=3, stride=1, dilation=1, padding="SAME", rect=False)]


def _graph(k: int, over: dict):
    case = dict(cases("depthwise_conv2d", "float32", 1, seed=300 + k)[0], batch=1, multiplier=1,
                activation=ACTIVATIONS[k % 4], bias=True, **over)
    return build_graph(case)


GRAPHS = [_graph(k, over) for k, over in enumerate(SHAPES)]


def _calls(f) -> list[Call]:
    return [n for n in walk(f.body) if isinstance(n, Call) and n.name in DEPTHWISE_F32_MVE_KERNELS.values()]


def test_channel_blocks():
    assert channel_blocks(37) == [(0, 16), (16, 16), (32, 4), (36, 1)]
    assert channel_blocks(3) == [(0, 3)] and channel_blocks(16) == [(0, 16)]


@pytest.mark.parametrize("k", range(len(SHAPES)))
def test_every_pixel_is_one_call_on_helium_and_matches(k):
    g = GRAPHS[k]
    f = lower_node(g, g.nodes[0], M55)
    assert default_sketch(f, M55) == "tensorize"
    if k == 0:
        assert knob_space(f, M55).family == "sketch"
    sched, _ = default_schedule(f, M55)
    calls = _calls(sched)
    assert calls and not [n for n in walk(sched.body) if isinstance(n, For) and n.var.name.startswith("ic")], \
        tir_str(sched)
    inputs = random_inputs(g, k)
    assert matches(run_lowered(g, sched, inputs), reference(g, inputs))
    check_in_place(g, M55, k)


def test_other_cores_and_multipliers_keep_the_loops():
    g = GRAPHS[0]
    sched, _ = default_schedule(lower_node(g, g.nodes[0], M4F), M4F)
    assert not _calls(sched)
    no_float_vectors = replace(M55, mve_float=False)     # a Cortex-M55 built +nomve.fp
    f = lower_node(g, g.nodes[0], no_float_vectors)
    sched, _ = default_schedule(f, no_float_vectors)
    assert not _calls(sched) and default_sketch(f, no_float_vectors) == "tile4"
    case = dict(cases("depthwise_conv2d", "float32", 1, seed=9)[0], batch=1, multiplier=2, cin=4, hw=5)
    g2 = build_graph(case)
    f = lower_node(g2, g2.nodes[0], M55)
    sched, _ = default_schedule(f, M55)
    assert not _calls(sched) and default_sketch(f, M55) != "tensorize"
    inputs = random_inputs(g2, 1)
    assert matches(run_lowered(g2, sched, inputs), reference(g2, inputs))


@pytest.mark.qemu
def test_float_depthwise_on_the_cortex_m55_twin(tmp_path):
    """One firmware, every case above on mps3-an547, against the interpreter and LiteRT."""
    inputs = merged_inputs([random_inputs(g, 70 + k) for k, g in enumerate(GRAPHS)])
    report = deploy_graph(merge_graphs(GRAPHS, "f32_depthwise"), inputs, "mps3-an547", tmp_path)
    assert report["verified"], report["outputs"]
