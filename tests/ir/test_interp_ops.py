"""Differential tests: the numpy interpreter against LiteRT's reference kernels, op by op.

Cases come from the declarative plans in op_cases.py (seeded). Each case: build a
single-op Graph, verify it, write it with tflite_writer, run LiteRT BUILTIN_REF and the
interpreter; int8 and int16 must be byte-equal, float32 within rtol 1e-5. The int16 plans
(op_cases_s16.py) are 16x8 quantization: int16 activations, int8 weights, int64 biases.
"""

from __future__ import annotations

import numpy as np
import pytest

from litert_ref import run_reference
from support.op_cases import PLANS, PLANS16, build_graph, case_id, cases, random_inputs
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir.compare import compare
from microcompile.reference import interp

INT8_CASES_PER_OP = 24
FLOAT_CASES_PER_OP = 12
INT16_CASES_PER_OP = 24

ALL_CASES = [c for op in PLANS for c in cases(op, "int8", INT8_CASES_PER_OP)]
ALL_CASES += [c for op in PLANS for c in cases(op, "float32", FLOAT_CASES_PER_OP)]
ALL_CASES += cases("conv2d", "hybrid", FLOAT_CASES_PER_OP)   # TFLite's dynamic-range conv
ALL_CASES += [c for op in PLANS16 for c in cases(op, "int16", INT16_CASES_PER_OP)]


def assert_matches_reference(got: np.ndarray, ref: np.ndarray):
    """int8 byte-equal; float32 within ir/compare.py's tolerance (1e-5 relative, floor a
    millionth of the tensor's magnitude for results that cancel to ~0)."""
    assert got.dtype == ref.dtype and got.shape == ref.shape
    c = compare(got, ref)
    assert c.equal, str(c)


@pytest.mark.parametrize("case", ALL_CASES, ids=case_id)
def test_op_matches_litert(case):
    graph = build_graph(case)
    inputs = random_inputs(graph, case["seed"])
    ref = run_reference(write_tflite(graph), inputs)
    got = interp.run(graph, inputs)
    for name in graph.outputs:   # several for split / unpack
        assert_matches_reference(got[name], ref[name])


def test_keep_all_returns_every_tensor():
    graph = build_graph(cases("conv2d", "int8", 1)[0])
    inputs = random_inputs(graph, 0)
    env = interp.run(graph, inputs, keep_all=True)
    assert set(env) == set(graph.tensors)


@pytest.mark.parametrize("bad, message", [
    ({}, "missing input"),
    ({"x": np.zeros((1, 3, 4, 1), np.float32)}, "dtype"),
    ({"x": np.zeros((1, 2, 2, 1), np.int8)}, "shape"),
])
def test_input_validation(bad, message):
    case = dict(cases("relu", "int8", 1)[0], shape=(1, 3, 4, 1))
    graph = build_graph(case)
    with pytest.raises(ValueError, match=message):
        interp.run(graph, bad)
