"""The template-free search (schedule/sketch.py) on every MLPerf Tiny model: for each kernel that
no hand-written knob space covers (family "sketch": pooling, mean, softmax in float, float
depthwise, hybrid convolutions, ...), the default schedule's instructions beside the best
sketch the tuner finds, on a board's QEMU twin.

    python benchmarks/sketches.py [--board mps2-an386] [--trials 40] [--models kws_ref_model ...]

Each model runs `microcompile tune --emulate --batch --family sketch --patch off --trials N`
(every candidate bit-exact against the reference interpreter, counted by QEMU per kernel), and
the table gives per workload: the op, the kernels sharing it, the default's instructions, the
best sketch's, its point, and the speed-up. A model with no such kernel says so. The models
are read from ../shared/models (and the MobileNetV1 fixture from tests/fixtures); a model
that is absent is skipped with a line.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODELS = ROOT.parent / "shared" / "models"
MOBILENET = ROOT / "tests" / "fixtures" / "mobilenets" / "mobilenet_v1_025_96_int8.tflite"
NAMES = ("kws_ref_model", "pretrainedResnet_quant", "ad01_int8", "mobilenet_v1_025_96_int8",
         "kws_ref_model_float32", "pretrainedResnet", "ad01_fp32")


def path_of(name: str) -> Path:
    return MOBILENET if name == MOBILENET.stem else MODELS / f"{name}.tflite"


def tune(path: Path, board: str, trials: int, records: Path) -> None:
    cmd = [sys.executable, "-m", "microcompile", "tune", str(path), "--board", board, "--emulate", "--batch",
           "--family", "sketch", "--patch", "off", "--trials", str(trials), "--records", str(records)]
    subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)


def rows(records: Path) -> list[tuple]:
    by: dict[str, list[dict]] = {}
    for line in records.read_text().splitlines():
        r = json.loads(line)
        by.setdefault(r["workload"], []).append(r)
    out = []
    for key, recs in by.items():
        ok = [r for r in recs if r["status"] == "ok"]
        if not ok or recs[0]["status"] != "ok":       # the tuner measures the default point first
            continue
        best = min(ok, key=lambda r: (r["count"], recs.index(r)))
        out.append((key.split(":")[0], key.split(":")[1], len(recs), recs[0]["count"], best["count"],
                    f"{best['config']['sketch']}, unroll {best['config']['unroll_max_extent']}"))
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--board", default="mps2-an386")
    ap.add_argument("--trials", type=int, default=40, help="measured candidates per model (default 40)")
    ap.add_argument("--models", nargs="*", default=list(NAMES))
    args = ap.parse_args()
    print("| model | op | shapes | trials | default | best sketch | point | speed-up |\n|---|---|---|---:|---:|---:|---|---:|")
    for name in args.models:
        path = path_of(name)
        if not path.exists():
            print(f"| {name} | (absent: {path}) | | | | | | |")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            records = Path(tmp) / "r.jsonl"
            tune(path, args.board, args.trials, records)
            found = rows(records) if records.exists() else []
        if not found:
            print(f"| {name} | (no kernel outside the hand-written spaces) | | | | | | |")
        for op, shapes, n, default, best, point in found:
            print(f"| {name} | {op} | {shapes} | {n} | {default:,} | {best:,} | {point} | {default / best:.2f}x |",
                  flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
