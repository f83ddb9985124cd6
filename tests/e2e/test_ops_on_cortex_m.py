"""Ops that the single-op plans run only on the host gcc, on both emulated cores, against
LiteRT BUILTIN_REF: the elementwise and shape families (op_coverage_models.py) in float32
and int8, on mps2-an386 (Cortex-M4F, DSP and FPU) and mps2-an385 (Cortex-M3, no DSP,
soft-float), one firmware per model. Also the float32 residual network of
multi_op_models.py (conv, depthwise, fully connected, softmax, average pool) on the
soft-float Cortex-M3, and a QDQ ONNX MobileNet (ONNX rounding: single rounding to even,
rintf) on both cores against our interpreter and onnxruntime.

int8 outputs must equal LiteRT byte for byte, float32 within ir/compare.py's 1e-5.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent

from support import multi_op_models  # noqa: E402
from support import op_coverage_models as cover  # noqa: E402
from support.qemu_cases import assert_matches_litert  # noqa: E402

from support import flows  # noqa: E402
from microcompile.frontend.tflite.writer import write_tflite  # noqa: E402

BOARDS = ("mps2-an386", "mps2-an385")
pytestmark = pytest.mark.qemu


def _inputs(g, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {n: rng.integers(-128, 128, g.tensors[n].shape).astype(np.int8) if g.tensors[n].dtype == "int8"
            else rng.uniform(-2, 2, g.tensors[n].shape).astype(np.float32) for n in g.inputs}


def _deploy(g, board: str, tmp_path: Path):
    model = tmp_path / f"{g.name}.tflite"
    model.write_bytes(write_tflite(g))
    inputs = _inputs(g, 7)
    np.savez(tmp_path / "x.npz", **inputs)
    result = flows.deploy(model, board, tmp_path / "project", emulate=True, input_path=tmp_path / "x.npz",
                           progress=lambda s: None)
    assert_matches_litert(model, inputs, result.outputs, f"{g.name} on {board}")
    assert result.report["verified"], result.report["outputs"]
    return result


@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("dtype", ["float32", "int8"])
@pytest.mark.parametrize("family", sorted(cover.MODELS))
def test_op_family_on_cortex_m_matches_litert(family, dtype, board, tmp_path):
    g = cover.model(family, dtype)
    result = _deploy(g, board, tmp_path)
    compiled = {n.op for n in result.compiled.graph.nodes}
    want = set(cover.COVERED[family]) | (set(cover.FLOAT_ONLY[family]) if dtype == "float32" else set())
    assert want <= compiled, f"fused or folded away, so not run on the device: {sorted(want - compiled)}"
    dtypes = {result.compiled.graph.tensors[n.outputs[0]].dtype for n in result.compiled.graph.nodes
              if n.op in want}
    assert dtypes == {dtype}


def test_float_residual_network_on_soft_float_cortex_m3(tmp_path):
    _deploy(multi_op_models.MODELS["residual_float32"](), "mps2-an385", tmp_path)


@pytest.mark.parametrize("board", BOARDS)
def test_qdq_onnx_mobilenet_on_cortex_m(board, tmp_path):
    """ONNX rounding on the device: the QDQ MobileNetV2 equals our interpreter byte for byte
    and onnxruntime within a step (test_onnx_qdq.py holds the interpreter to onnxruntime)."""
    import logging

    import onnx
    import onnxruntime as ort
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    src = HERE.parent / "frontend" / "torch_mobilenets" / "mobilenet_v2_tiny.onnx"
    rng = np.random.default_rng(4)
    calibration = iter([{"input": rng.standard_normal((1, 3, 32, 32)).astype(np.float32)} for _ in range(8)])

    class Reader(CalibrationDataReader):
        def get_next(self):
            return next(calibration, None)
    logging.getLogger().setLevel(logging.ERROR)
    model = tmp_path / "mobilenet_v2_tiny_int8.onnx"
    quantize_static(str(src), str(model), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    result = flows.deploy(model, board, tmp_path / "project", emulate=True, input_path=tmp_path / "x.npy",
                           progress=lambda s: None)
    assert result.report["verified"], result.report["outputs"]
    assert {n.attrs.get("rounding") for n in result.compiled.graph.nodes if n.op == "conv2d"} == {"onnx"}
    options = ort.SessionOptions()
    options.log_severity_level = 3
    (want,) = ort.InferenceSession(str(model), options, providers=["CPUExecutionProvider"]).run(None, {"input": x})
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in onnx.load(str(model)).graph.initializer}
    step = float(inits["logits_scale"])
    (got,) = result.outputs.values()
    assert np.abs(got - want).max() <= step * 1.001
