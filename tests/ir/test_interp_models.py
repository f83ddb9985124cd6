"""The interpreter on the six MLPerf Tiny models against LiteRT BUILTIN_REF, layer by layer.

Every node output of every model is compared (matched by tensor name): int8 byte-equal,
float32 within the promise of ir/compare.py (1e-5 relative, floor 1e-6 of the tensor's
largest magnitude), the same tolerance as every other float comparison. Needs
../shared/models. Speed is not tested here (benchmarks measure it).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import ALL_MODELS, model_path
from litert_ref import load_model, run_reference
from support.op_cases import random_inputs
from microcompile.reference import interp
from microcompile.ir import verify
from microcompile.ir.compare import compare

from microcompile.frontend.tflite import reader


def _random_inputs(graph, seed=0):
    return random_inputs(graph, seed, float_std=1.0)


# kws_ref_model_float32 keeps int8 weights under float32 activations ("hybrid" convs, where
# TFLite quantizes the input per batch at run time); the interpreter models that kernel.
@pytest.mark.heavy
@pytest.mark.parametrize("name", ALL_MODELS)
def test_model_layer_by_layer(name):
    path = model_path(name)
    graph = verify(reader.load_tflite(path))
    inputs = _random_inputs(graph)
    ref = run_reference(load_model(path), inputs, keep_all=True)
    got = interp.run(graph, inputs, keep_all=True)
    for node in graph.nodes:
        for out in node.outputs:
            assert out in ref, f"{node.name}: LiteRT has no tensor named {out}"
            r, g = ref[out], got[out]
            assert g.shape == tuple(graph.tensors[out].shape) and g.size == r.size, out
            c = compare(g, r.reshape(g.shape))
            assert c.equal, f"{node.name} ({node.op}, {g.dtype}): {c}"
    for out in graph.outputs:
        assert out in ref
