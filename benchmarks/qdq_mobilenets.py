"""QDQ ONNX models against onnxruntime, layer by layer: the two PyTorch MobileNets of
tests/frontend/torch_mobilenets, quantized by onnxruntime's quantize_static.

    PYTHONPATH=. python3 benchmarks/qdq_mobilenets.py [--inputs N]

For each model and quantization config: how many final outputs differ from onnxruntime
(and by how many steps at most), the output SQNR against the float model of onnxruntime's
int8 run and of ours, and over every int8 layer, fed onnxruntime's own int8 inputs
(tests/frontend/qdq_layers.py): how many elements differ, and how many of those are not
rounding near-ties (a systematic difference).
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]   # this checkout, and the tests' shared helpers (tests/support)

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static  # noqa: E402

from support import qdq_layers  # noqa: E402
from microcompile.frontend.onnx import load_onnx  # noqa: E402
from microcompile.reference import interp  # noqa: E402
from microcompile.transform import pipeline  # noqa: E402

MODELS = ROOT / "tests" / "frontend" / "torch_mobilenets"
CONFIGS = {
    "u8 per-tensor (default)": {},
    "s8 per-channel": dict(per_channel=True, activation_type=QuantType.QInt8),
}


class Calibration(CalibrationDataReader):
    def __init__(self, name: str, shape, count: int = 32):
        rng = np.random.default_rng(1)
        self.it = iter([{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(count)])

    def get_next(self):
        return next(self.it, None)


def input_spec(model) -> tuple[str, list[int]]:
    inp = model.graph.input[0]
    return inp.name, [d.dim_value for d in inp.type.tensor_type.shape.dim]


def quantize(float_path: Path, config: str, out_dir: Path) -> Path:
    logging.getLogger().setLevel(logging.ERROR)
    name, shape = input_spec(onnx.load(str(float_path)))
    out = out_dir / f"{float_path.stem}_{config.split()[0]}_{config.split()[1]}.onnx"
    quantize_static(str(float_path), str(out), Calibration(name, shape), quant_format=QuantFormat.QDQ,
                    weight_type=QuantType.QInt8, **CONFIGS[config])
    return out


def sqnr(ref: np.ndarray, x: np.ndarray) -> float:
    ref, x = ref.astype(np.float64), x.astype(np.float64)
    return float(10 * np.log10(np.sum(ref ** 2) / np.sum((ref - x) ** 2)))


def output_step(model) -> float:
    inits = {t.name: onnx.numpy_helper.to_array(t) for t in model.graph.initializer}
    producer = {o: n for n in model.graph.node for o in n.output}
    return float(inits[producer[model.graph.output[0].name].input[1]])


def measure(float_path: Path, q_path: Path, count: int) -> dict:
    model = onnx.load(str(q_path))
    g = pipeline.run(load_onnx(model))
    name, shape = input_spec(model)
    options = ort.SessionOptions()
    options.log_severity_level = 3
    f_sess = ort.InferenceSession(str(float_path), options, providers=["CPUExecutionProvider"])
    q_sess = ort.InferenceSession(str(q_path), options, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(99)
    floats, theirs, ours = [], [], []
    layer_diff = untied = 0
    for _ in range(count):
        feeds = {name: rng.standard_normal(shape).astype(np.float32)}
        floats.append(f_sess.run(None, feeds)[0])
        theirs.append(q_sess.run(None, feeds)[0])
        ours.append(interp.run(g, {g.inputs[0]: feeds[name]})[g.outputs[0]])
        for row in qdq_layers.layer_rows(model, feeds, g):
            layer_diff += max(row.isolated_diff, 0)
            untied += len(row.untied)
    floats, theirs, ours = map(np.concatenate, (floats, theirs, ours))
    steps = np.abs(ours - theirs) / output_step(model)
    return {"differ": float(np.mean(steps > 0.5)), "max_steps": float(steps.max()), "sqnr_ort": sqnr(floats, theirs),
            "sqnr_ours": sqnr(floats, ours), "layer_diff": layer_diff, "untied": untied}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--inputs", type=int, default=20, help="random inputs per model (default 20)")
    args = ap.parse_args()
    print(f"{'model':<20} {'quantize_static config':<24} {'outputs != ort':>14} {'max steps':>9} "
          f"{'SQNR ort':>9} {'SQNR ours':>9} {'layer diffs':>11} {'not ties':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for float_path in sorted(MODELS.glob("*.onnx")):
            for config in CONFIGS:
                r = measure(float_path, quantize(float_path, config, Path(tmp)), args.inputs)
                print(f"{float_path.stem:<20} {config:<24} {r['differ']:>13.1%} {r['max_steps']:>9.0f} "
                      f"{r['sqnr_ort']:>9.2f} {r['sqnr_ours']:>9.2f} {r['layer_diff']:>11} {r['untied']:>8}")


if __name__ == "__main__":
    main()
