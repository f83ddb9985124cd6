"""The PyTorch fixtures on the M4's QEMU twin: instructions, arena, flash, agreement.

    PYTHONPATH=. python3 benchmarks/pytorch_models.py [--board mps2-an386]

For each program of tests/fixtures/pytorch (make_pt2_models.py): compiled from the .pt2,
deployed on the board's QEMU twin with the fixture's input, checked against the reference
interpreter (and the float ones against torch's output, within 1e-5 of its largest
magnitude). Then the int8 MobileNet-v2 twice: PT2E (torchao's convert_pt2e, the fixture) and
microcompile's own PTQ of the float program (`mc.quantize`, calibrated on the PT2E fixture's
16 images), each with its SQNR against the float model on the 8 test images and, for PT2E,
the share of outputs within one quantization step of the PT2E model run in torch. Then the
two transformers (the keyword transformer, the tiny ViT) quantized by `mc.quantize` with
the layer norms' div and sqrt kept float (32 samples of the fixture input's mean and spread),
beside MLPerf Tiny's int8 keyword CNN and ResNet-8 from ../shared/models when present: TFLM +
CMSIS-NN's figures for the transformers cannot be measured here (the harness builds TFLM for
the MLPerf models only), so an int8 CNN of similar MACs is the yardstick.
Instructions are QEMU's (-icount shift=0, BENCHMARK.md), per inference.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

import microcompile as mc  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures" / "pytorch"


def sqnr(reference, x) -> float:
    reference, x = np.asarray(reference, np.float64), np.asarray(x, np.float64)
    return float(10 * np.log10((reference ** 2).sum() / ((reference - x) ** 2).sum()))


def transformer_int8(name: str):
    """A transformer fixture's input and its int8 model as the benchmarks quantize it:
    `mc.quantize` on 32 samples of the input's mean and spread, the layer norms' div and sqrt
    kept float."""
    x = np.load(FIXTURES / f"{name}.npz")["x"]
    rng = np.random.default_rng(0)
    calibration = rng.normal(float(x.mean()), float(x.std()), (32, *x.shape[1:])).astype(np.float32)
    return x, mc.quantize(FIXTURES / f"{name}.pt2", calibration, keep_float=("div", "sqrt"))


def deploy_row(name: str, model, board: str, x: np.ndarray, work: Path, want=None) -> str:
    cm = mc.compile(model, board, name=name)
    r = cm.deploy(work / name, inputs=x, emulate=True)
    got = r.outputs[cm.graph.outputs[0]]
    torch_ok = "" if want is None else \
        f"{'yes' if np.abs(got - want).max() <= 1e-5 * np.abs(want).max() else 'NO'}"
    rep = r.report
    return (f"| {name} | {rep['macs']:,} | {rep['instructions']:,} | {rep['instructions'] / rep['macs']:.2f} | "
            f"{rep['arena_bytes']:,} | {rep['flash_bytes']:,} | {'yes' if r.verified else 'NO'} | {torch_ok or '-'} |")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="mps2-an386")
    args = ap.parse_args()
    import torch
    print(f"torch {torch.__version__}, board {args.board}\n")
    print("| model | MACs | instructions | per MAC | arena B | flash B | equals reference | equals torch |")
    print("|---|---|---|---|---|---|---|---|")
    pt2e = np.load(FIXTURES / "mobilenet_v2_pt2e.npz")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name in ("mobilenet_v2", "squeezenet1_1", "kws_transformer", "tiny_vit"):
            d = np.load(FIXTURES / f"{name}.npz")
            print(deploy_row(name, FIXTURES / f"{name}.pt2", args.board, d["x"], work, d["y"]), flush=True)
        print(deploy_row("mobilenet_v2_pt2e", FIXTURES / "mobilenet_v2_pt2e.pt2", args.board, pt2e["x"], work),
              flush=True)
        ours = mc.quantize(torch.export.load(FIXTURES / "mobilenet_v2.pt2"), calibration=pt2e["calibration"])
        print(deploy_row("mobilenet_v2 + mc.quantize", ours, args.board, pt2e["x"], work), flush=True)
        for name in ("kws_transformer", "tiny_vit"):
            x, q = transformer_int8(name)
            print(deploy_row(f"{name} + mc.quantize", q, args.board, x, work), flush=True)
        for name in ("kws_ref_model", "pretrainedResnet_quant"):
            path = ROOT.parent / "shared" / "models" / f"{name}.tflite"
            if path.is_file():
                print(deploy_row(f"{name} (MLPerf Tiny, int8)", path, args.board, None, work), flush=True)

    test, y_float = pt2e["x_test"], pt2e["y_float"]
    cm_pt2e = mc.compile(FIXTURES / "mobilenet_v2_pt2e.pt2", "host")
    cm_ours = mc.compile(ours, "host")
    y_pt2e_ours = np.concatenate([cm_pt2e.reference([test[i:i + 1]])[0] for i in range(len(test))])
    y_ptq = np.concatenate([cm_ours.reference([test[i:i + 1]])[0] for i in range(len(test))])
    final = next(n for n in cm_pt2e.graph.nodes if n.outputs[0] == cm_pt2e.graph.outputs[0])
    step = cm_pt2e.graph.tensors[final.inputs[0]].quant.scale[0]
    steps = np.abs(y_pt2e_ours - pt2e["y_test"]) / step
    print(f"\nSQNR against the float model over {len(test)} test images:")
    print(f"  PT2E run in torch                 {sqnr(y_float, pt2e['y_test']):6.2f} dB")
    print(f"  PT2E compiled by microcompile     {sqnr(y_float, y_pt2e_ours):6.2f} dB  "
          f"({(steps < 1e-3).mean():.1%} of outputs equal to torch's, {(steps <= 1.0001).mean():.1%} within "
          f"one step, at most {steps.max():.2f} steps)")
    print(f"  mc.quantize of the float program  {sqnr(y_float, y_ptq):6.2f} dB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
