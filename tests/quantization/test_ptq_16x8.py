"""PTQ to 16x8 (`--activations int16`): int16 activations with zero point 0, int8 weights,
int64 biases, for every op with a 16x8 kernel. The quantized graph, written by our TFLite
writer, runs in LiteRT BUILTIN_REF byte for byte like our interpreter, and its output is far
closer to the float graph than int8's."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest


from litert_ref import run_reference  # noqa: E402
from support.op_cases import PLANS, build_graph, case_id, cases  # noqa: E402
from microcompile.errors import UserError  # noqa: E402
from microcompile.frontend.tflite.writer import write_tflite  # noqa: E402
from microcompile.ir import ops  # noqa: E402
from microcompile.quantization import QuantizeOptions, quantize  # noqa: E402
from microcompile.quantization.ptq import UnquantizableOpError, quantizable  # noqa: E402
from microcompile.quantization.report import sqnr  # noqa: E402
from microcompile.reference import interp  # noqa: E402

# Step-function outputs (the 1/32768 grid of logistic/tanh/softmax interpolates a table;
# the int8 weights limit the rest): floors per op, else DEFAULT_FLOOR_DB.
SQNR_FLOOR_DB = {"logistic": 32.0, "tanh": 32.0, "softmax": 32.0}
DEFAULT_FLOOR_DB = 33.0   # int8 weights bound it (int8 PTQ's floor is 20 dB)
OPS = sorted(op for op in PLANS if quantizable(op, "int16") and ops.get(op).quant != "same")
CASES = [c for op in OPS for c in cases(op, "float32", 2, seed=17)]


def _samples(graph, n, seed):
    rng = np.random.default_rng(seed)
    return [{name: rng.normal(0, 1, graph.tensors[name].shape).astype(np.float32) for name in graph.inputs}
            for _ in range(n)]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_16x8_op_is_valid_tflite_and_accurate(case):
    fgraph = build_graph(case)
    q = quantize(fgraph, _samples(fgraph, 24, 0), QuantizeOptions(activations="int16"), report=False, progress=False)
    compute = [n for n in q.graph.nodes if n.op not in ("quantize", "dequantize")]
    acts = [q.graph.tensors[o] for n in compute for o in n.outputs]
    assert compute and all(t.dtype == "int16" and t.quant.zp == 0 for t in acts)
    assert all(q.graph.tensors[n.inputs[2]].dtype == "int64" for n in compute
               if ops.get(n.op).quant == "weighted" and len(n.inputs) > 2 and n.inputs[2])
    model = write_tflite(q.graph)
    expected, got = [], []
    for sample in _samples(fgraph, 3, 0):
        ours, ref = interp.run(q.graph, sample), run_reference(model, sample)
        for name in q.graph.outputs:
            assert np.array_equal(ours[name], ref[name]), f"{name}: differs from LiteRT BUILTIN_REF"
        expected += [interp.run(fgraph, sample)[f].ravel() for f in fgraph.outputs]
        got += [ours[o].ravel() for o in q.graph.outputs]
    expected = np.concatenate(expected)
    if np.abs(expected).max() > 1e-3:
        assert sqnr(expected, np.concatenate(got)) >= SQNR_FLOOR_DB.get(case["op"], DEFAULT_FLOOR_DB)


def test_an_op_without_a_16x8_kernel_names_itself_and_the_way_out():
    fgraph = build_graph(cases("max_pool2d", "float32", 1)[0])
    with pytest.raises(UnquantizableOpError, match="max_pool2d.*16x8") as e:
        quantize(fgraph, _samples(fgraph, 2, 0), QuantizeOptions(activations="int16"), report=False, progress=False)
    assert "--keep-float max_pool2d" in e.value.hint
    kept = quantize(fgraph, _samples(fgraph, 2, 0), QuantizeOptions(activations="int16", keep_float=("max_pool2d",)),
                    report=False, progress=False)
    assert [n.op for n in kept.graph.nodes] == ["max_pool2d"]


def test_integer_io_must_match_the_activations():
    fgraph = build_graph(cases("fully_connected", "float32", 1)[0])
    with pytest.raises(UserError, match="--io int8 does not match --activations int16"):
        quantize(fgraph, _samples(fgraph, 2, 0), QuantizeOptions(activations="int16", io="int8"), report=False,
                 progress=False)
    q = quantize(fgraph, _samples(fgraph, 2, 0), QuantizeOptions(activations="int16", io="int16"), report=False,
                 progress=False)
    assert all(q.graph.tensors[n].dtype == "int16" for n in q.graph.inputs + q.graph.outputs)
