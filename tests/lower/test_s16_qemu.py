"""The 16x8 micro-kernels on Cortex-M under QEMU: the DSP variants (SMLALD, widened weights)
on mps2-an386 and the portable ones on the DSP-less mps2-an385 (and, with the recurrent kernels,
on the micro:bit's Cortex-M0), for random conv2d,
depthwise_conv2d, transpose_conv2d and fully_connected cases (odd channel counts, padding,
dilation, per-tensor weights) plus softmax / logistic / tanh, all in one firmware per board,
compared bit for bit with the interpreter (itself bit-exact with LiteRT)."""

from __future__ import annotations

import pytest

from support.lower_cases import build_graph, cases, random_inputs
from support.qemu_cases import deploy_graph, merge_graphs, merged_inputs

OPS = {"conv2d": 6, "depthwise_conv2d": 6, "transpose_conv2d": 4, "fully_connected": 6, "softmax": 2,
       "logistic": 2, "tanh": 2}


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an385"])
def test_int16_kernels_on_cortex_m_match_interpreter(board, tmp_path):
    graphs = [build_graph(dict(c, batch=1)) for op, n in OPS.items() for c in cases(op, "int16", n, seed=23)]
    g = merge_graphs(graphs, "s16_kernels")
    inputs = merged_inputs([random_inputs(sub, 40 + k) for k, sub in enumerate(graphs)])
    report = deploy_graph(g, inputs, board, tmp_path)
    assert report["verified"], report["outputs"]


SMALL = {"conv2d": 2, "depthwise_conv2d": 2, "transpose_conv2d": 2, "fully_connected": 2, "softmax": 1,
         "logistic": 1, "tanh": 1}
RECURRENT = [("lstm", "int8"), ("lstm", "float32"), ("svdf", "int8"), ("svdf", "float32")]


@pytest.mark.qemu
def test_int16_and_recurrent_kernels_on_cortex_m0(tmp_path):
    """Armv6-M (the micro:bit's Cortex-M0: no SSAT, no 64-bit multiply-accumulate, no divide,
    soft float) runs the portable 16x8 and recurrent kernels with the same integers."""
    graphs = [build_graph(dict(c, batch=1)) for op, n in SMALL.items() for c in cases(op, "int16", n, seed=29)]
    graphs += [build_graph(c) for op, dtype in RECURRENT for c in cases(op, dtype, 1, seed=31)]
    g = merge_graphs(graphs, "m0_kernels")
    inputs = merged_inputs([random_inputs(sub, 60 + k) for k, sub in enumerate(graphs)])
    report = deploy_graph(g, inputs, "microbit", tmp_path)
    assert report["board"] == "microbit" and report["state_bytes"] > 0
    assert report["verified"], report["outputs"]
