"""The digits part of quantization_accuracy.py: train the project's example classifier
(examples/digits/make_model.py: 64 -> FC 32 + ReLU -> FC 10 -> softmax, numpy Adam), write
it as float32 ONNX (onnx.helper) and as a float32 Graph/.tflite (our writer), then compare
test accuracy: float32, microcompile int8 PTQ, onnxruntime quantize_static int8 (QDQ,
per-channel weights, the same calibration samples)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples" / "digits"))

from make_model import build_graph, load_digits_split, train  # noqa: E402

from microcompile.reference import interp  # noqa: E402
from microcompile.quantization import QuantizeOptions, quantize  # noqa: E402
from microcompile.quantization.calibrate import Calibration  # noqa: E402

CALIBRATION_SAMPLES = 200


def onnx_model(params):
    """The same network as ONNX: MatMul + Add + Relu, MatMul + Add, Softmax."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    inits = [numpy_helper.from_array(params[k], k) for k in ("w1", "b1", "w2", "b2")]
    nodes = [helper.make_node("MatMul", ["pixels", "w1"], ["h0"]), helper.make_node("Add", ["h0", "b1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["hidden"]), helper.make_node("MatMul", ["hidden", "w2"], ["l0"]),
             helper.make_node("Add", ["l0", "b2"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["probs"], axis=1)]
    graph = helper.make_graph(nodes, "digits_mlp",
                              [helper.make_tensor_value_info("pixels", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [1, 10])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    return model


def ort_accuracy(path: Path, x, y) -> float:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    preds = [sess.run(None, {"pixels": x[i:i + 1]})[0].argmax() for i in range(len(x))]
    return float(np.mean(np.array(preds) == y))


def ort_quantize(float_path: Path, out_path: Path, calib: np.ndarray) -> None:
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.it = iter([{"pixels": calib[i:i + 1]} for i in range(len(calib))])

        def get_next(self):
            return next(self.it, None)

    quantize_static(str(float_path), str(out_path), Reader(), quant_format=QuantFormat.QDQ, per_channel=True,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)


def graph_accuracy(graph, x, y) -> float:
    name, out = graph.inputs[0], graph.outputs[0]
    preds = [interp.run(graph, {name: x[i:i + 1]})[out].argmax() for i in range(len(x))]
    return float(np.mean(np.array(preds) == y))


def digits_table(tmp: Path, methods) -> dict:
    import onnx

    (xtr, ytr), (xte, yte) = load_digits_split()
    params = train(xtr, ytr)
    graph = build_graph(params)
    calib = xtr[:CALIBRATION_SAMPLES]
    onnx.save(onnx_model(params), tmp / "digits.onnx")
    ort_quantize(tmp / "digits.onnx", tmp / "digits_int8_qdq.onnx", calib)
    samples = [{"pixels": calib[i:i + 1]} for i in range(len(calib))]
    calibration = Calibration(graph, samples, progress=False)
    row = {"float32": graph_accuracy(graph, xte, yte),
           "onnx float32 (ort)": ort_accuracy(tmp / "digits.onnx", xte, yte),
           "onnxruntime int8": ort_accuracy(tmp / "digits_int8_qdq.onnx", xte, yte)}
    for m in methods:
        q = quantize(graph, samples, QuantizeOptions(method=m), report=False, calibration=calibration)
        row[f"ours int8 {m}"] = graph_accuracy(q.graph, xte, yte)
    row["test samples"] = len(xte)
    return row


def print_digits(row: dict, methods) -> None:
    print(f"digits MLP, test accuracy on {row['test samples']} held-out samples, "
          f"{CALIBRATION_SAMPLES} calibration samples:")
    for k, v in row.items():
        if k != "test samples":
            print(f"  {k:<24} {100 * v:6.2f} %")
