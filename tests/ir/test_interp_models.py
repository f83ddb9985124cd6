"""The interpreter on the six MLPerf Tiny models against LiteRT BUILTIN_REF, layer by layer.

int8 models: every node output byte-equal. float32 models: every node output close
(errors compound over layers, hence a looser tolerance than the single-op tests).
Needs ../shared/models.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from conftest import ALL_MODELS, INT8_MODELS, model_path
from litert_ref import load_model, run_reference
from op_cases import random_inputs
from microcompile.reference import interp
from microcompile.ir import verify

from microcompile.frontend.tflite import reader


def _random_inputs(graph, seed=0):
    return random_inputs(graph, seed, float_std=1.0)


# kws_ref_model_float32 keeps int8 weights under float32 activations ("hybrid" convs, where
# TFLite quantizes the input per batch at run time); the interpreter models that kernel.
@pytest.mark.slow
@pytest.mark.parametrize("name", ALL_MODELS)
def test_model_layer_by_layer(name):
    path = model_path(name)
    graph = verify(reader.load_tflite(path))
    inputs = _random_inputs(graph)
    ref = run_reference(load_model(path), inputs, keep_all=True)
    start = time.perf_counter()
    got = interp.run(graph, inputs, keep_all=True)
    elapsed = time.perf_counter() - start
    assert elapsed < 2.0, f"interpreter took {elapsed:.2f} s on {name}"
    compared = 0
    for node in graph.nodes:
        out = node.outputs[0]
        if out not in ref:
            continue
        r, g = ref[out], got[out]
        assert g.shape == tuple(graph.tensors[out].shape) and g.size == r.size, out
        r = r.reshape(g.shape)
        if name in INT8_MODELS:
            diff = np.abs(g.astype(np.int32) - r.astype(np.int32))
            assert diff.max(initial=0) == 0, f"{node.name} ({node.op}): {(diff > 0).sum()} of {diff.size} differ"
        else:
            np.testing.assert_allclose(g, r, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(r).max())),
                                       err_msg=f"{node.name} ({node.op})")
        compared += 1
    assert compared >= len(graph.nodes) // 2, "too few tensors matched by name to compare"
    for out in graph.outputs:
        assert out in ref
