"""The Helium (MVE) kernels of the Cortex-M55 (runtime_c/kernels/mve/): the default schedules reach
them through tensorize from the core's features alone, widen nothing, keep the results equal to
the numpy interpreter (loop-IR interpreter with the kernels' Python semantics), and, compiled with
arm_mve.h and run on QEMU's mps3-an547, equal the interpreter bit for bit, tails included."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest


from support.lower_cases import build_graph, cases, matches, random_inputs, reference, run_lowered  # noqa: E402
from support.lower_cases import depthwise_case as _case  # noqa: E402

from microcompile.ir import QuantParams, Tensor  # noqa: E402
from microcompile.lower import lower_node  # noqa: E402
from microcompile.schedule import default_schedule, kernel_set  # noqa: E402
from microcompile.tir import nodes as tir  # noqa: E402
from microcompile.target import load_board  # noqa: E402

M55 = load_board("mps3-an547").target


def _conv(**over):
    base = dict(cases("conv2d", "int8", 1, seed=5)[0], hw=6, cin=3, cout=5, kernel=3, stride=1, dilation=1,
                batch=1, padding="SAME")
    return build_graph({**base, **over})


def _fc(**over):
    return build_graph({**cases("fully_connected", "int8", 1, seed=2)[0], **over})


def _depthwise(**over):
    case = dict(_case("3x3-s1-same", "int8", seed=3), multiplier=1, activation="RELU6")
    return build_graph({**case, **over})


# Accumulators on exact rounding ties, positive and negative: with zero weights the accumulator
# is the bias, and with a multiplier of 2^-8 (mult 2^30, rshift 7) the result is
# RoundingDivideByPOT(floor((b + 1) / 2), 7), a tie whenever floor((b + 1) / 2) = 64 (mod 128).
TIE_BIASES = (-128, -127, -129, -384, -383, -640, 128, 127, 384, -1, -2, 0)


def _with_ties(g, w_axis: int):
    """`g` (one channel per tie bias) with zero weights, the tie biases and unit scales around them."""
    c = len(TIE_BIASES)
    t = g.tensors
    unit = QuantParams((1.0,), (0,))
    w_q = QuantParams((2.0 ** -8,) * c, (0,) * c, axis=w_axis)
    b_q = QuantParams((2.0 ** -8,) * c, (0,) * c, axis=0)
    return g.replace(tensors={
        **t, "x": Tensor("x", t["x"].shape, "int8", unit), "out": Tensor("out", t["out"].shape, "int8", unit),
        "w": Tensor("w", t["w"].shape, "int8", w_q, data=np.zeros(t["w"].shape, np.int8)),
        "b": Tensor("b", t["b"].shape, "int32", b_q, data=np.array(TIE_BIASES, np.int32))})


def _depthwise_ties():
    return _with_ties(_depthwise(cin=len(TIE_BIASES), hw=3, activation="NONE"), w_axis=3)


def _conv_ties():
    """The same ties through a convolution: the requantizing GEMM's vector output stage (VQRDMULH,
    VRSHL) must round them away from zero as TFLite does."""
    return _with_ties(_conv(cin=3, cout=len(TIE_BIASES), hw=3, activation="NONE"), w_axis=0)


# m rows (tail of the 4-row tile), n columns (odd: the one-column path), k depth (tail of 16)
CASES = {
    "conv m5 k27": lambda: _conv(),                                               # k = 16 + 11
    "conv 1x1 m7 k20 s2": lambda: _conv(cin=20, cout=7, kernel=1, stride=2, padding="VALID"),
    "conv m9 k72 (k tail of 8)": lambda: _conv(cin=8, cout=9, hw=5, stride=2),
    "conv rounding ties": _conv_ties,
    "fc m13 k37 n2": lambda: _fc(in_shape=(2, 37), units=13, bias=True, per_channel=True),
    "fc m4 k16 n1": lambda: _fc(in_shape=(1, 16), units=4),
    "depthwise c7 (a partial group)": lambda: _depthwise(cin=7),
    # power-of-two scales and no activation clamp: negative exact ties of the rounding shift
    "depthwise c12 pot scales": lambda: _depthwise(cin=12, pot_scales=True, activation="NONE"),
    "depthwise 5x5 c9 s2": lambda: _depthwise(cin=9, kernel=5, stride=2, hw=7),
    "depthwise rounding ties": _depthwise_ties,
}


def _calls(f):
    return {n.name for n in tir.walk(f.body) if isinstance(n, tir.Call) and n.name.startswith("mc_")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_mve_schedules_widen_nothing_and_match_the_interpreter(name):
    g = CASES[name]()
    assert kernel_set(M55) == "mve"
    f, trace = default_schedule(lower_node(g, g.nodes[0], M55), M55)
    calls = _calls(f)
    kernels = {c for c in calls if c.startswith(("mc_gemm", "mc_depthwise", "mc_conv"))}
    assert kernels and all(c.endswith("_mve_s8") for c in kernels), calls
    if not name.startswith("depthwise"):
        # int8 operands as they are: no int16 copy of the weights or of the im2col columns
        assert not any(b.dtype == "int16" for b in f.buffers), [(b.name, b.dtype) for b in f.buffers]
        assert "mc_widen_dsp_s8_s16" not in calls
    if name.startswith("conv"):
        # bias and requantization in the kernel's epilogue: no int32 accumulator tile in scratch
        # (the whole-layer kernel, or the im2col GEMM where a filter row is under 8 bytes:
        # tests/schedule/test_mve_layers.py)
        assert calls & {"mc_conv_rq_mve_s8", "mc_gemm_p4_rq_mve_s8"}, calls
        assert not any(b.dtype == "int32" and b.scope == "scratch" for b in f.buffers), f.buffers
    ins = random_inputs(g, 2)
    assert matches(run_lowered(g, f, ins), reference(g, ins))


@pytest.mark.parametrize("build", [_depthwise_ties, _conv_ties])
def test_the_tie_case_has_ties(build):
    """Rounding half up instead of away from zero would change outputs of the tie cases."""
    g = build()
    out = reference(g, random_inputs(g, 1))[0, 1, 1]
    s = np.floor((np.array(TIE_BIASES) + 1) / 2)
    away = (np.sign(s) * np.floor(np.abs(s) / 128 + 0.5)).astype(int)   # TFLite: half away from zero
    assert out.tolist() == away.tolist()
    half_up = np.floor(s / 128 + 0.5).astype(int)
    assert (out != half_up).sum() >= 4, (out, half_up)


@pytest.mark.qemu
@pytest.mark.parametrize("name", ["conv m5 k27", "conv m9 k72 (k tail of 8)", "conv rounding ties", "fc m13 k37 n2", "depthwise rounding ties",
                                  "depthwise c7 (a partial group)"])
def test_mve_kernels_bit_exact_on_cortex_m55(name, tmp_path):
    from support.qemu_cases import deploy_graph
    g = CASES[name]()
    report = deploy_graph(g, random_inputs(g, 4), "mps3-an547", tmp_path)
    assert report["verified"], report["outputs"]
    model_c = (tmp_path / "project" / "model" / "model.c").read_text()
    assert "_mve_s8(" in model_c and "_dsp_" not in model_c
