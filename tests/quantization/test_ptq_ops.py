"""PTQ of single-op float32 graphs from the declarative op plans (tests/ir/op_cases.py).

For each float32 case of every quantizable op: calibrate on random inputs, quantize,
then check that (1) the int8 graph, written by our TFLite writer, runs in LiteRT
BUILTIN_REF byte-for-byte like our interpreter (so it is a valid TFLite int8 model for
the same bit-exact kernels) and (2) its output is close to the float graph's (SQNR).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest


from litert_ref import run_reference  # noqa: E402
from support.op_cases import PLANS, build_graph, case_id, cases  # noqa: E402
from microcompile.frontend.tflite.writer import write_tflite  # noqa: E402
from microcompile.reference import interp  # noqa: E402
from microcompile.quantization import QuantizeOptions, quantize  # noqa: E402
from microcompile.quantization.ptq import quantizable  # noqa: E402
from microcompile.quantization.report import sqnr  # noqa: E402

CASES_PER_OP = 3
CALIBRATION = 32
# Outputs of these ops are step functions of few distinct values (fixed 1/256 grids,
# saturating clamps) or near zero, so their SQNR says little; they are held to bit-exactness only.
SQNR_FLOOR_DB = {"relu_n1_to_1": 10.0, "logistic": 25.0, "tanh": 25.0, "softmax": 20.0, "log_softmax": 15.0,
                 "squared_difference": 15.0, "hard_swish": 20.0}
DEFAULT_FLOOR_DB = 20.0

OPS = sorted(op for op in PLANS if quantizable(op))
CASES = [c for op in OPS for c in cases(op, "float32", CASES_PER_OP, seed=7)]


def _samples(graph, n, seed):
    rng = np.random.default_rng(seed)
    return [{name: rng.normal(0, 1, graph.tensors[name].shape).astype(np.float32) for name in graph.inputs}
            for _ in range(n)]


@pytest.mark.parametrize("io", ["float32", "int8"])
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_quantized_op_is_valid_int8_tflite_and_accurate(case, io):
    fgraph = build_graph(case)
    q = quantize(fgraph, _samples(fgraph, CALIBRATION, 0), QuantizeOptions(io=io), report=False, progress=False)
    for name in q.graph.inputs + q.graph.outputs:
        assert q.graph.tensors[name].dtype == ("int8" if io == "int8" else "float32")
    compute = [n for n in q.graph.nodes if n.op not in ("quantize", "dequantize")]
    assert compute and all(q.graph.tensors[o].dtype == "int8" for n in compute for o in n.outputs)
    model = write_tflite(q.graph)
    expected_all, got_all = [], []
    for sample in _samples(fgraph, 4, 0):   # the first calibration samples: in range by construction
        inputs = {}
        for src, name in zip(fgraph.inputs, q.graph.inputs):
            t = q.graph.tensors[name]
            inputs[name] = sample[src] if io == "float32" else np.clip(
                np.round(sample[src] / t.quant.s) + t.quant.zp, -128, 127).astype(np.int8)
        ours = interp.run(q.graph, inputs)
        ref = run_reference(model, inputs)
        for name in q.graph.outputs:
            assert np.array_equal(ours[name], ref[name]), f"{name}: differs from LiteRT BUILTIN_REF"
        expected = interp.run(fgraph, sample)
        expected_all += [expected[f].ravel() for f in fgraph.outputs]
        got_all += [ours[o].ravel() for o in q.graph.outputs]
    expected_all = np.concatenate(expected_all)
    if io == "float32" and np.abs(expected_all).max() > 1e-3:   # an all-zero output has no SQNR
        assert sqnr(expected_all, np.concatenate(got_all)) >= SQNR_FLOOR_DB.get(case["op"], DEFAULT_FLOOR_DB)


def test_an_input_used_twice_by_a_requantizing_op_is_requantized_once():
    """Regression: concatenation(x, y, x) requantizes x to the output's parameters for both
    uses; PTQ made two requantize nodes with one name (a VerifyError, a traceback in the CLI)."""
    from microcompile.ir import Graph, Node, Tensor, verify

    t = {"x": Tensor("x", (1, 2, 3), "float32"), "y": Tensor("y", (1, 2, 3), "float32"),
         "xs": Tensor("xs", (1, 2, 3), "float32"), "cat": Tensor("cat", (1, 2, 9), "float32")}
    scale = Tensor("k", (1, 1, 3), "float32", data=np.full((1, 1, 3), 4.0, np.float32))
    nodes = (Node("mul", "scale_x", ("x", "k"), ("xs",), {"activation": "NONE"}),
             Node("concatenation", "cat", ("xs", "y", "xs"), ("cat",), {"axis": 2}))
    g = verify(Graph("concat_twice", {**t, "k": scale}, nodes, ("x", "y"), ("cat",)))
    q = quantize(g, _samples(g, 8, 1), QuantizeOptions(io="int8"), report=False, progress=False).graph
    requant = [n for n in q.nodes if n.op == "quantize" and q.tensors[n.inputs[0]].dtype == "int8"]
    assert len(requant) == 1
    rng = np.random.default_rng(2)
    inputs = {n: rng.integers(-128, 128, q.tensors[n].shape).astype(np.int8) for n in q.inputs}
    out = q.outputs[0]
    assert np.array_equal(interp.run(q, inputs)[out], run_reference(write_tflite(q), inputs)[out])
