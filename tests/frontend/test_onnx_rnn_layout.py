"""ONNX LSTM / GRU with layout = 1 (batch-major X, Y, initial and final states), which
onnxruntime does not run: the oracle is onnxruntime on the layout-0 twin of the same node
(same weights), with the input and outputs transposed between the two layouts."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest


ort = pytest.importorskip("onnxruntime")

from support.onnx_cases import build_model, w  # noqa: E402
from microcompile.frontend.onnx import load_onnx  # noqa: E402
from microcompile.ir.compare import compare  # noqa: E402
from microcompile.reference import interp  # noqa: E402
from microcompile.transform import pipeline  # noqa: E402


def _case(op: str, gates: int, seq: int, batch: int, inp: int, hidden: int, layout: int, h0) -> dict:
    x = (seq, batch, inp) if layout == 0 else (batch, seq, inp)
    ins = [x, w(1, gates * hidden, inp), w(1, gates * hidden, hidden), w(1, 2 * gates * hidden), None, h0]
    attrs = {"hidden_size": hidden, **({"layout": 1} if layout else {})}
    return {"op": op, "inputs": ins, "attrs": attrs, "opset": 14, "outputs": 2, "id": f"{op}-layout{layout}"}


@pytest.mark.parametrize("op, gates", [("LSTM", 4), ("GRU", 3)])
def test_layout_1_matches_onnxruntime_on_the_layout_0_twin(op, gates):
    seq, batch, inp, hidden = 5, 3, 4, 6
    h0 = w(batch, 1, hidden)   # layout 1: [batch, num_directions, hidden]
    twin = _case(op, gates, seq, batch, inp, hidden, 0, h0.transpose(1, 0, 2).copy())
    case = _case(op, gates, seq, batch, inp, hidden, 1, h0)
    case["inputs"][1:4] = twin["inputs"][1:4]   # the same weights
    x = np.random.default_rng(0).normal(0, 1, (batch, seq, inp)).astype(np.float32)
    sess = ort.InferenceSession(build_model(twin).SerializeToString(), providers=["CPUExecutionProvider"])
    y0, yh0 = sess.run(None, {"x0": x.transpose(1, 0, 2).copy()})
    g = pipeline.run(load_onnx(build_model(case)))
    got = interp.run(g, {g.inputs[0]: x})
    y, yh = (got[name] for name in g.outputs)
    assert y.shape == (batch, seq, 1, hidden) and yh.shape == (batch, 1, hidden)
    for ours, ref in ((y, y0.transpose(2, 0, 1, 3)), (yh, yh0.transpose(1, 0, 2))):
        result = compare(ours, ref)
        assert result.equal, result
