"""int4 weights (issue 28): accuracy, flash and instructions of `quantize --weights int4`.

(a) digits (the example model, examples/digits): test accuracy of float32, int8 PTQ and int4
    PTQ (weights int4, activations int8), with the weights' bytes.
(b) MLPerf Tiny float models (../shared/models): output SQNR against float32 on 200 random
    inputs (calibration on 200 others, as benchmarks/quantization_accuracy.py) for int8, int4,
    and int4 keeping the first layer's weights int8 (--keep-int8).
(c) The int4 kws and ad01 deployed on mps2-an386's twin (Cortex-M4) twice: with the board's
    flash (the compiler unpacks or widens the weights where they fit: fastest) and with
    --flash-budget 1 (every int4-valued layer stays packed in flash: unpacked into scratch per
    inference, or read in place by the DSP panel kernels); and the int8 models with
    --flash-budget 1 (int8 weights, no widening) for comparison: instructions, flash, weights
    and arena, the device's output checked against LiteRT BUILTIN_REF on the same .tflite.

    python benchmarks/int4_weights.py [--models DIR] [--skip-deploy]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))   # litert_ref: the LiteRT oracle

import microcompile as mc  # noqa: E402
from microcompile.ir import INT4_WEIGHT_OPS  # noqa: E402
from microcompile.quantization import QuantizeOptions, quantize  # noqa: E402
from microcompile.quantization.calibrate import Calibration  # noqa: E402
from microcompile.quantization.report import sqnr  # noqa: E402
from quantization_accuracy import mlperf_inputs, run_all  # noqa: E402

def weight_bytes(graph) -> int:
    return sum(graph.tensors[n.inputs[1]].nbytes for n in graph.nodes if n.op in INT4_WEIGHT_OPS)


def first_weighted(graph) -> str:
    return next(n.name for n in graph.nodes if n.op in INT4_WEIGHT_OPS)


def digits_rows() -> list[tuple[str, float, int]]:
    from digits_models import build_graph, graph_accuracy, load_digits_split, train

    (xtr, ytr), (xte, yte) = load_digits_split()
    graph = build_graph(train(xtr, ytr))
    samples = [{"pixels": xtr[i:i + 1]} for i in range(200)]
    cal = Calibration(graph, samples, progress=False)
    rows = [("float32", graph_accuracy(graph, xte, yte), weight_bytes(graph))]
    for w in ("int8", "int4"):
        q = quantize(graph, samples, QuantizeOptions(weights=w), report=False, calibration=cal)
        rows.append((f"int8 activations, {w} weights", graph_accuracy(q.graph, xte, yte), weight_bytes(q.graph)))
    return rows


def mlperf_rows(models: Path, n: int = 200, seed: int = 0) -> tuple[list[dict], dict]:
    rows, quantized = [], {}
    for float_name, fgraph, _, calib, test in mlperf_inputs(models, n, seed):
        samples = [{fgraph.inputs[0]: x} for x in calib]
        expected = run_all(fgraph, test)
        cal = Calibration(fgraph, samples, progress=False)
        row = {"model": float_name}
        for label, opts in (("int8", QuantizeOptions()), ("int4", QuantizeOptions(weights="int4")),
                            ("int4, first int8", QuantizeOptions(weights="int4", keep_int8=(first_weighted(fgraph),)))):
            q = quantize(fgraph, samples, opts, report=False, calibration=cal)
            row[label] = (sqnr(expected, run_all(q.graph, test)), weight_bytes(q.graph))
            quantized[(float_name, label)] = q.graph
        rows.append(row)
    return rows, quantized


def deploy_rows(quantized: dict, board: str) -> list[dict]:
    from litert_ref import run_reference

    rows = []
    for (name, label), graph in quantized.items():
        if label not in ("int8", "int4") or name == "pretrainedResnet":
            continue
        with tempfile.TemporaryDirectory() as tmp:
            model = Path(tmp) / f"{name}_w4.tflite"
            model.write_bytes(_tflite(graph))
            x = {graph.inputs[0]: (np.arange(graph.tensors[graph.inputs[0]].size) * 7 % 256 / 128 - 1)
                 .astype(np.float32).reshape(graph.tensors[graph.inputs[0]].shape)}
            np.savez(Path(tmp) / "x.npz", **x)
            want = run_reference(model.read_bytes(), x)
            for budget in ((None, 1) if label == "int4" else (1,)):
                cm = mc.compile(model, board, options=mc.CompileOptions(flash_budget=budget))
                res = cm.deploy(Path(tmp) / f"p{budget}", emulate=True, inputs=Path(tmp) / "x.npz")
                r = res.report
                exact = all(np.array_equal(res.outputs[k], v.reshape(res.outputs[k].shape)) for k, v in want.items())
                rows.append({"model": f"{name} {label}", "flash budget": "board's" if budget is None else "1 B",
                             "int4 kernels": cm.report["int4_kernels"], "instructions": r["instructions"],
                             "flash": r["flash_bytes"], "weights": r["weights_bytes"], "arena": r["arena_bytes"],
                             "equal to LiteRT": exact})
    return rows


def _tflite(graph) -> bytes:
    from microcompile.frontend.tflite.writer import write_tflite

    return write_tflite(graph)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "models")
    ap.add_argument("--board", default="mps2-an386")
    ap.add_argument("--skip-deploy", action="store_true")
    args = ap.parse_args(argv)
    print("digits MLP (the example model), test accuracy:")
    for label, acc, nbytes in digits_rows():
        print(f"  {label:<32} {100 * acc:6.2f} %   weights {nbytes:>7,} B")
    rows, quantized = mlperf_rows(args.models)
    print("\nMLPerf Tiny float models, output SQNR vs float32 (dB) and weight bytes:")
    for r in rows:
        cells = "  ".join(f"{k}: {v[0]:6.2f} dB {v[1]:>8,} B" for k, v in r.items() if k != "model")
        print(f"  {r['model']:<24} {cells}")
    if not args.skip_deploy:
        print(f"\nint4 models on {args.board} (QEMU twin):")
        for r in deploy_rows(quantized, args.board):
            print("  " + "  ".join(f"{k} {v:,}" if isinstance(v, int) and not isinstance(v, bool) else f"{k} {v}"
                                   for k, v in r.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
