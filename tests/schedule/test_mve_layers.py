"""Helium's whole-layer kernels (runtime_c/kernels/mve/mc_gemm_conv_mve.c, mc_depthwise_layer_mve.c)
and its vector ADD/SUB (mc_elementwise_mve.c, ADD): the default schedules of the Cortex-M55 reach
them where they apply and the im2col GEMM (with its vector copy) or the per-pixel kernel where
they do not; every case equals the reference in the loop-IR interpreter (the kernels' Python
semantics), and, in one firmware on QEMU's mps3-an547, equals LiteRT bit for bit: partial
panels and groups, odd blocks, strides, padding, batches, per-tensor scales and rounding ties.
The kernels' in-place safety is checked on the twin where the planner puts the output over the
input (test_in_place_on_cortex_m55)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from support.lower_cases import build_graph, cases, matches, random_inputs, reference, run_lowered
from support.lower_cases import depthwise_case

from microcompile.ir import Graph, QuantParams, verify
from microcompile.lower import lower_node
from microcompile.schedule import ScheduleError, apply_config, default_config, default_schedule
from microcompile.target import load_board
from microcompile.tir import nodes as tir

M55 = load_board("mps3-an547").target
CONV_LAYER, CONV_GEMM = "mc_conv_rq_mve_s8", "mc_gemm_p4_rq_mve_s8"
DW_LAYER, DW_PIXEL = "mc_depthwise_layer_mve_s8", "mc_depthwise_mve_s8"
ADD = "mc_add_tables_mve_s8"


def _conv(**over):
    base = dict(cases("conv2d", "int8", 1, seed=5)[0], hw=6, cin=16, cout=8, kernel=3, stride=1, dilation=1,
                batch=1, padding="SAME", rect=False)
    return build_graph({**base, **over})


def _dw(split="3x3-s1-same", **over):
    return build_graph({**depthwise_case(split, "int8", seed=4), "multiplier": 1, **over})


def _binary(op, **over):
    return build_graph({**cases(op, "int8", 1, seed=7)[0], "shapes": ((1, 5, 7, 6), (1, 5, 7, 6)),
                        "const_rhs": False, **over})


def _with_out_quant(g, scale_of=None, zero_point=None):
    """`g` with its output's scale (a function of the input's and the weights' scales) or zero
    point replaced."""
    out = g.tensors["out"]
    scale = out.quant.scale
    if scale_of is not None:
        scale = (scale_of(g.tensors["x"].quant.scale[0] * g.tensors["w"].quant.scale[0]),)
    zp = out.quant.zero_point if zero_point is None else (zero_point,)
    return verify(g.replace(tensors={**g.tensors, "out": out.replace(quant=QuantParams(scale, zp))}))


# name -> (graph, the kernel the default schedule must call; None: none of the new ones)
CASES = {
    "conv 3x3 s1 c16 m8 (column pairs)": (lambda: _conv(), CONV_LAYER),
    "conv 3x3 s2 valid m5 (a partial panel)": (lambda: _conv(cout=5, stride=2, padding="VALID", hw=9), CONV_LAYER),
    "conv 1x1 c24 m12 batch 2": (lambda: _conv(kernel=1, cin=24, cout=12, batch=2), CONV_LAYER),
    "conv per tensor m9": (lambda: _conv(per_channel=False, cout=9), CONV_LAYER),
    "conv rectangular, dilated across (im2col GEMM)": (lambda: _conv(rect=True, cout=9), CONV_GEMM),
    "conv 3x3 c3 (rows of 9 bytes)": (lambda: _conv(cin=3, cout=7, hw=7), CONV_LAYER),
    "conv 3x3 c1 (rows of 3 bytes: im2col GEMM)": (lambda: _conv(cin=1, cout=6), CONV_GEMM),
    "conv 1x1 c4 (im2col GEMM, vector copies)": (lambda: _conv(cin=4, kernel=1, cout=8, hw=5), CONV_GEMM),
    "conv dilation 2 (im2col GEMM)": (lambda: _conv(dilation=2, cin=8), CONV_GEMM),
    "depthwise c16 s1 w9 (blocks and single pixels)": (lambda: _dw(cin=16, hw=9), DW_LAYER),
    "depthwise c32 s2 odd": (lambda: _dw("3x3-s2-same-odd", cin=32), DW_LAYER),
    "depthwise c7 (a partial group)": (lambda: _dw(cin=7), DW_LAYER),
    "depthwise c12 pot scales s2 valid": (lambda: _dw("3x3-s2-valid", cin=12, pot_scales=True), DW_LAYER),
    "depthwise 5x5 (the per-pixel kernel)": (lambda: _dw("5x5-s1-same", cin=8), DW_PIXEL),
    # rows of every channel over LAYER_MVE_BYTES_MAX: passes of fewer channels (vectors of 16,
    # gathered words of 4, a partial group), and the last 2 or 3 pixels of a row at once
    "depthwise c24 s1 w30 (passes of 16 and 8, two last pixels)": (lambda: _dw(cin=24, hw=30), DW_LAYER),
    "depthwise c40 s2 w21 (passes of 32 and 8, three last pixels)":
        (lambda: _dw("3x3-s2-same-odd", cin=40, hw=21), DW_LAYER),
    "depthwise c10 w56 (passes of 8 and 2: a partial group, unaligned words)": (lambda: _dw(cin=10, hw=56), DW_LAYER),
    "add": (lambda: _binary("add"), ADD),
    "add with relu6, pot scales": (lambda: _binary("add", activation="RELU6", pot_scales=True), ADD),
    "sub (the loops: its lowering keeps the general requantization)": (lambda: _binary("sub"), None),
    "add of 7 elements (a tail)": (lambda: _binary("add", shapes=((7,), (7,))), ADD),
    "add with output zero point 0": (lambda: _with_out_quant(_binary("add"), zero_point=0), ADD),
    # requantizations the kernels do not take: the im2col GEMM or loops, never a crash
    "conv one output channel": (lambda: _conv(cin=8, cout=1), None),
    "conv per tensor, scale 0.7 (not the cheap requantization)":
        (lambda: _with_out_quant(_conv(per_channel=False), scale_of=lambda eff: eff / 0.7), None),
}


def _calls(f) -> set[str]:
    return {n.name for n in tir.walk(f.body) if isinstance(n, tir.Call) and n.name.startswith("mc_")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_default_schedule_reaches_the_kernel_and_matches_the_interpreter(name):
    build, kernel = CASES[name]
    g = build()
    f, _ = default_schedule(lower_node(g, g.nodes[0], M55), M55)
    assert kernel in _calls(f) if kernel else not _calls(f) & {ADD, CONV_LAYER, DW_LAYER}, _calls(f)
    if kernel == CONV_GEMM and "c4" in name:
        assert "mc_copy_mve_s8" in _calls(f)
    ins = random_inputs(g, 3)
    assert matches(run_lowered(g, f, ins), reference(g, ins))


def test_a_broadcast_add_keeps_its_loops():
    g = _binary("add", shapes=((1, 5, 7, 6), (1, 1, 7, 6)))
    f, _ = default_schedule(lower_node(g, g.nodes[0], M55), M55)
    assert ADD not in _calls(f)
    ins = random_inputs(g, 1)
    assert matches(run_lowered(g, f, ins), reference(g, ins))


def test_the_tuner_can_ask_for_the_gemm_or_the_layer_kernel():
    g = _conv()
    func = lower_node(g, g.nodes[0], M55)
    config = default_config(func, M55, wide=False)
    assert config["conv_kernel"] == "auto"
    gemm, _ = apply_config(func, M55, {**config, "conv_kernel": "gemm"})
    assert CONV_LAYER not in _calls(gemm) and CONV_GEMM in _calls(gemm)
    layer, _ = apply_config(func, M55, {**config, "conv_kernel": "layer"})
    assert CONV_LAYER in _calls(layer)
    small = _conv(cin=1)
    with pytest.raises(ScheduleError, match="filter row is 3 bytes"):
        apply_config(lower_node(small, small.nodes[0], M55), M55, {**config, "conv_kernel": "layer"})
    m4 = load_board("mps2-an386").target
    with pytest.raises(ScheduleError, match="Helium's kernel"):
        apply_config(lower_node(g, g.nodes[0], m4), m4, {**default_config(func, m4, wide=False), "conv_kernel": "layer"})


@pytest.mark.qemu
def test_every_case_bit_exact_on_cortex_m55(tmp_path):
    """All the cases in one firmware: outputs equal LiteRT's and the interpreter's."""
    from support.qemu_cases import deploy_graph, merge_graphs, merged_inputs
    graphs = [CASES[name][0]() for name in sorted(CASES)]
    g = merge_graphs(graphs, "mve_layers")
    report = deploy_graph(g, merged_inputs([random_inputs(x, 5) for x in graphs]), "mps3-an547", tmp_path)
    assert report["verified"], report["outputs"]
    model_c = (tmp_path / "project" / "model" / "model.c").read_text()
    for kernel in (CONV_LAYER, CONV_GEMM, DW_LAYER, DW_PIXEL, ADD, "mc_copy_mve_s8"):
        assert f"{kernel}(" in model_c, kernel


def _offsets(model_c: str, kernel_fn: str) -> dict[str, int]:
    body = model_c[model_c.index(f"static void {kernel_fn}(uint8_t *arena)"):]
    body = body[:body.index("\n}\n")]
    return {m.group(1): int(m.group(2)) for m in re.finditer(r"\*(\w+) = \([\w ]+\*\)\(arena \+ (\d+)u\)", body)}


def _twice(g: Graph) -> Graph:
    """The layer of `g` applied again to its own output: the second one's input dies with it, so
    the planner may write its output over it."""
    node, out = g.nodes[0], g.outputs[0]
    tensors = {**g.tensors, "out2": g.tensors[out].replace(name="out2")}
    second = node.replace(name=f"{node.name}_2", inputs=(out, *node.inputs[1:]), outputs=("out2",))
    return verify(Graph(g.name, tensors, (node, second), g.inputs, ("out2",)))


def test_a_wide_layer_runs_in_passes_of_fewer_channels():
    """The rows of every channel would pass LAYER_MVE_BYTES_MAX: the default takes the most
    channels per pass that fit, and the tuner may ask for any block of the domain."""
    g = _dw(cin=24, hw=30)
    func = lower_node(g, g.nodes[0], M55)
    config = default_config(func, M55, wide=False)
    assert (config["depthwise_kernel"], config["depthwise_rows_block"]) == ("rows", 16)
    f, trace = default_schedule(func, M55)
    params = next(n for n in tir.walk(f.body) if isinstance(n, tir.Call) and n.name == DW_LAYER).args[-1]
    wp = params.as_dict()["padded_w"]
    assert params.as_dict()["block"] == 16 and f.scratch_bytes == 3 * wp * 16 and 3 * wp * 24 > 2048, params
    eight, _ = apply_config(func, M55, {**config, "depthwise_rows_block": 8})
    assert 3 * wp * 8 <= eight.scratch_bytes < f.scratch_bytes   # (scratch is planned in 16-byte units)
    ins = random_inputs(g, 2)
    assert matches(run_lowered(g, eight, ins), reference(g, ins))


@pytest.mark.qemu
@pytest.mark.parametrize("build", [lambda: _conv(cin=16, cout=16, hw=10), lambda: _dw(cin=16, hw=10, batch=1),
                                   lambda: _dw(cin=36, hw=20, batch=1), lambda: _binary("add")],
                         ids=["conv", "depthwise", "depthwise in passes", "add"])
def test_in_place_on_cortex_m55(build, tmp_path):
    """The planner writes the second layer's output over its input (the first's output): the
    kernel reads each window, or element, before it overwrites it."""
    from support.qemu_cases import deploy_graph
    g = _twice(build())
    report = deploy_graph(g, random_inputs(g, 6), "mps3-an547", tmp_path)
    assert report["verified"], report["outputs"]
    op = g.nodes[1].op
    offsets = _offsets((tmp_path / "project" / "model" / "model.c").read_text(), f"mc_k1_{op}")
    x_name = "a" if op == "add" else "x"
    size = int(np.prod(g.tensors[g.nodes[1].inputs[0]].shape))
    assert abs(offsets["y"] - offsets[x_name]) < size, offsets


@pytest.mark.parametrize("flags", [("-O0",), ("-O2", "-fno-omit-frame-pointer")], ids=["O0", "frame-pointer"])
def test_helium_kernels_build_without_optimisation_or_with_a_frame_pointer(flags, tmp_path):
    """The assembly tiles leave r7 alone: it is the frame pointer in these builds (a user's
    `make CFLAGS+=-O0`)."""
    import shutil
    import subprocess

    from microcompile.resources import resource_dir

    cc = shutil.which("arm-none-eabi-gcc")
    assert cc, "arm-none-eabi-gcc is not on PATH"
    runtime = resource_dir("runtime_c")
    for src in sorted((runtime / "kernels" / "mve").glob("*.c")):
        r = subprocess.run([cc, "-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", *flags, "-Wall", "-Wextra",
                            "-Werror", "-std=c99", "-I", str(runtime / "include"), "-c", str(src), "-o",
                            str(tmp_path / (src.stem + ".o"))], capture_output=True, text=True)
        assert r.returncode == 0, (src.name, r.stderr[-2000:])
