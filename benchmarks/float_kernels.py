"""Instructions per MAC of the float32 convolutions (and fully connected layers) of the float
MLPerf Tiny models, on a board's QEMU twin: the FPU GEMM micro-kernel (schedule/gemm_f32.py).

    python benchmarks/float_kernels.py [--boards mps2-an386] [--models kws resnet ad01] [--all-layers]
                                       [--weights-region NAME]

Models (../shared/models):
  resnet  pretrainedResnet.tflite, float32 weights and activations as published.
  kws     kws_ref_model_float32.tflite is dynamic-range quantized (int8 conv weights with
          float activations: the hybrid path, not a float kernel). Its float32 twin is built
          here from the same graph: every int8 weight with quantization parameters replaced by
          its float32 value, scale * (q - zero_point), per channel where quantized so; nothing
          else changes (written with the project's .tflite writer into a temporary directory).
  ad01    ad01_fp32.tflite, ten float32 fully connected layers.

Each model runs `microcompile profile --board B --emulate` (BENCHMARK.md's deterministic
input divided by 128, one warm-up, per-kernel QEMU instruction counts); the rows of conv2d and
fully_connected layers are printed with MACs, instructions and instructions per MAC, then the
totals per op. Figures are exact and repeatable.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]
MODELS = ROOT.parent / "shared" / "models"

from microcompile.frontend.tflite import load_tflite, write_tflite  # noqa: E402

OPS = ("conv2d", "fully_connected", "depthwise_conv2d")


def float_weights(data: bytes) -> bytes:
    """The .tflite with each int8 constant that has quantization parameters stored as its
    float32 value (a hybrid model's float twin)."""
    g = load_tflite(data)
    tensors = dict(g.tensors)
    for name, t in g.tensors.items():
        if not (t.is_const and t.dtype == "int8" and t.quant is not None):
            continue
        scale, zp = np.asarray(t.quant.scale, np.float64), np.asarray(t.quant.zero_point, np.float64)
        if t.quant.axis is not None:
            shape = [1] * len(t.shape)
            shape[t.quant.axis] = -1
            scale, zp = scale.reshape(shape), zp.reshape(shape)
        value = (scale * (t.data.astype(np.float64) - zp)).astype(np.float32)
        tensors[name] = replace(t, dtype="float32", quant=None, data=value)
    return write_tflite(g.replace(tensors=tensors))


def model_file(name: str, tmp: Path) -> Path:
    if name == "kws":
        path = tmp / "kws_float32_weights.tflite"
        path.write_bytes(float_weights((MODELS / "kws_ref_model_float32.tflite").read_bytes()))
        return path
    return MODELS / {"resnet": "pretrainedResnet.tflite", "ad01": "ad01_fp32.tflite"}[name]


def profile(model: Path, board: str, tmp: Path, weights_region: str | None = None) -> dict:
    out = tmp / f"{model.stem}-{board}.json"
    cmd = [sys.executable, "-m", "microcompile", "profile", "--board", board, "--emulate",
           "-o", str(tmp / f"{model.stem}-{board}"), "--json", str(out), str(model)]
    if weights_region:           # ad01_fp32's 1 MiB of weights: mps3-an547's QSPI flash
        cmd += ["--weights-region", weights_region]
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--boards", nargs="+", default=["mps2-an386"])
    ap.add_argument("--models", nargs="+", default=["kws", "resnet", "ad01"], choices=["kws", "resnet", "ad01"])
    ap.add_argument("--all-layers", action="store_true", help="print every layer, not only conv/fc")
    ap.add_argument("--weights-region", help="place the weights in this memory region (profile --weights-region)")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        for board in args.boards:
            for name in args.models:
                report = profile(model_file(name, tmp), board, tmp, args.weights_region)
                print(f"\n{name} on {board}: {report['total']:,} {report['unit']} in the profiled inference "
                      "(per-kernel hooks included)")
                print(f"  {'layer':<24} {'op':<18} {'MACs':>10} {'count':>12} {'per MAC':>8}")
                totals: dict[str, list[int]] = {}
                for layer in report["layers"]:
                    op = layer["op"].split("+")[0]
                    if op in OPS:
                        t = totals.setdefault(op, [0, 0])
                        t[0] += layer["macs"]
                        t[1] += layer["count"]
                    if args.all_layers or op in OPS:
                        per = f"{layer['count'] / layer['macs']:.2f}" if layer["macs"] else "-"
                        print(f"  {layer['name']:<24} {layer['op']:<18} {layer['macs']:>10,} {layer['count']:>12,} "
                              f"{per:>8}")
                for op, (macs, count) in totals.items():
                    print(f"  {'all ' + op:<43} {macs:>10,} {count:>12,} {count / macs:>8.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
