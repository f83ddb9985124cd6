"""Every single-op ONNX plan (onnx_cases.py) against onnxruntime (CPU): through the
reader + graph passes + our interpreter, and through the whole compiler as host C
(all cases linked into one program). float32 within 1e-5 relative (ir/compare.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent

import onnxruntime as ort  # noqa: E402

from support.c_harness import run_on_host  # noqa: E402
from support.onnx_cases import CASES, build_model, onnx_inputs  # noqa: E402
from microcompile.frontend.onnx import load_onnx  # noqa: E402
from microcompile.reference import interp  # noqa: E402
from microcompile.ir.compare import compare  # noqa: E402
from microcompile.transform import pipeline  # noqa: E402


def onnxruntime_run(model, inputs: dict[str, np.ndarray]) -> list[np.ndarray]:
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)


def compiled_graph(case):
    return pipeline.run(load_onnx(build_model(case)))


def _onnx_names(case) -> list[str]:
    return [f"x{k}" for k, v in enumerate(case["inputs"]) if isinstance(v, tuple)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c["id"])
def test_interp_matches_onnxruntime(case):
    model = build_model(case)
    ins = onnx_inputs(case, 0)
    refs = onnxruntime_run(model, ins)
    g = pipeline.run(load_onnx(model))
    got = interp.run(g, {ir: ins[x] for ir, x in zip(g.inputs, _onnx_names(case))})
    assert len(g.outputs) == len(refs)
    for name, ref in zip(g.outputs, refs):
        assert got[name].shape == ref.shape
        result = compare(got[name], ref)
        assert result.equal, f"{case['id']} {name}: {result}"


@pytest.fixture(scope="module")
def host_results(tmp_path_factory):
    graphs = [compiled_graph(c) for c in CASES]
    return run_on_host(graphs, tmp_path_factory.mktemp("onnx_host"))


def test_host_c_matches_onnxruntime(host_results):
    failures = []
    for case, (_, host) in zip(CASES, host_results):
        ins = {x: host.inputs[ir] for ir, x in zip(host.graph.inputs, _onnx_names(case))}
        refs = onnxruntime_run(build_model(case), ins)
        for name, ref in zip(host.graph.outputs, refs):
            result = compare(host.outputs[name], ref)
            if not result.equal:
                failures.append(f"{case['id']} {name}: {result}")
    assert not failures, "\n".join(failures)
    assert len(host_results) == len(CASES)
