"""PTQ accuracy against peers (issue 4): prints two tables.

(a) digits: a small CNN trained on scikit-learn's digits, exported to ONNX (onnx.helper)
    and to TFLite (our writer). Test accuracy of float32, microcompile int8 PTQ (run by
    our reference interpreter, which is bit-exact with LiteRT), and onnxruntime's
    quantize_static (QDQ, per-channel, same calibration samples) run by onnxruntime.
(b) MLPerf Tiny float models: calibrate on 200 random inputs drawn uniformly from the
    input range the matching int8 reference model declares; on 200 other inputs, SQNR of
    the output against the float model, for our int8 model and for the reference int8.

    python benchmarks/quantization_accuracy.py [--models DIR] [--methods minmax,percentile,mse]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from microcompile.frontend import load_model  # noqa: E402
from microcompile.reference import interp  # noqa: E402
from microcompile.quantization import DEFAULT_METHOD, METHODS, QuantizeOptions, quantize  # noqa: E402
from microcompile.quantization.calibrate import Calibration  # noqa: E402
from microcompile.quantization.ptq import dequantize_array, dequantize_weights, quantize_array  # noqa: E402
from microcompile.quantization.report import sqnr  # noqa: E402
from microcompile.transform import pipeline  # noqa: E402

MLPERF = [("kws_ref_model_float32", "kws_ref_model"), ("pretrainedResnet", "pretrainedResnet_quant"),
          ("ad01_fp32", "ad01_int8")]


def run_all(graph, inputs: list[np.ndarray]) -> np.ndarray:
    name, out = graph.inputs[0], graph.outputs[0]
    return np.concatenate([interp.run(graph, {name: x})[out].reshape(1, -1) for x in inputs])


def run_int8_reference(graph, inputs: list[np.ndarray]) -> np.ndarray:
    """An int8-I/O model fed float inputs: quantize with its input parameters, dequantize the output."""
    qin, qout = graph.tensors[graph.inputs[0]].quant, graph.tensors[graph.outputs[0]].quant
    return dequantize_array(run_all(graph, [quantize_array(x, qin) for x in inputs]), qout)


def mlperf_inputs(models: Path, n: int = 200, seed: int = 0):
    """Per MLPerf float model in `models`: (name, float graph, the int8 reference graph, n
    calibration inputs, n test inputs), the inputs uniform over the int8 model's input range."""
    for float_name, int8_name in MLPERF:
        fpath, qpath = models / f"{float_name}.tflite", models / f"{int8_name}.tflite"
        if not (fpath.exists() and qpath.exists()):
            print(f"skipping {float_name}: not in {models}", file=sys.stderr)
            continue
        fgraph = dequantize_weights(pipeline.run(load_model(fpath)))
        ref = pipeline.run(load_model(qpath))
        t = ref.tensors[ref.inputs[0]]
        lo, hi = (-128 - t.quant.zp) * t.quant.s, (127 - t.quant.zp) * t.quant.s
        rng = np.random.default_rng(seed)
        shape = fgraph.tensors[fgraph.inputs[0]].shape
        draw = lambda: [rng.uniform(lo, hi, shape).astype(np.float32) for _ in range(n)]  # noqa: E731
        calib, test = draw(), draw()
        yield float_name, fgraph, ref, calib, test


def mlperf_table(models: Path, methods, n: int = 200, seed: int = 0) -> list[dict]:
    rows = []
    for float_name, fgraph, ref, calib, test in mlperf_inputs(models, n, seed):
        name = fgraph.inputs[0]
        samples = [{name: x} for x in calib]
        expected = run_all(fgraph, test)
        row = {"model": float_name, "reference_db": sqnr(expected, run_int8_reference(ref, test))}
        calibration = Calibration(fgraph, samples)
        for m in methods:
            q = quantize(fgraph, samples, QuantizeOptions(method=m), report=False, calibration=calibration)
            row[m] = sqnr(expected, run_all(q.graph, test))
        rows.append(row)
    return rows


def print_mlperf(rows, methods) -> None:
    head = f"{'model':<24} {'reference int8':>15} " + " ".join(f"{'ours ' + m:>15}" for m in methods)
    print(head + "   (output SQNR vs float32, dB)")
    for r in rows:
        ok = r[DEFAULT_METHOD] >= r["reference_db"] - 1.0 if DEFAULT_METHOD in r else None
        print(f"{r['model']:<24} {r['reference_db']:>15.2f} " + " ".join(f"{r[m]:>15.2f}" for m in methods)
              + ("" if ok is None else f"   default ({DEFAULT_METHOD}) >= ref - 1 dB: {'yes' if ok else 'NO'}"))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "models")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--skip-digits", action="store_true")
    ap.add_argument("--skip-mlperf", action="store_true")
    args = ap.parse_args(argv)
    methods = [m for m in args.methods.split(",") if m]
    if not args.skip_digits:
        from digits_models import digits_table, print_digits

        with tempfile.TemporaryDirectory() as tmp:
            print_digits(digits_table(Path(tmp), methods), methods)
        print()
    if not args.skip_mlperf:
        print_mlperf(mlperf_table(args.models, methods), methods)
    return 0


if __name__ == "__main__":
    sys.exit(main())
