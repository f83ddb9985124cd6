"""The GEMM micro-kernel knobs of the conv2d space, per conv workload, on QEMU mps2-an386.

    python benchmarks/gemm_knobs.py [--models DIR] [--only NAME ...] [--knob NAME=VALUE ...]
                                    [--base NAME=VALUE ...]

For each model (default: kws_ref_model and pretrainedResnet_quant from ../shared/models) and
each knob value (default: every non-default value of gemm_loop_order and gemm_tile), every
conv2d workload where the value applies is measured through the tuner's measurement path
(microcompile/tune/run.py: one agent firmware per value with it on every such workload, each
tuned kernel's tensor checked byte for byte against the reference, then profiled) next to
the default point on the same workloads (with the im2col cap the compiler gave each kernel,
schedule/blocks.py). Printed: per workload, the instructions per kernel
(QEMU -icount: instructions, not cycles) for the default and the value, and the model's
total over its kernels of those workloads. `--base` sets knobs on both sides (e.g. `cols=25
col_bytes_max=4096`: the value against the default kernel on the same blocks). Exits 1 if any
measurement is not `ok`.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import microcompile as mc
from microcompile.deploy import Link
from microcompile.schedule import InvalidConfig, KNOBS, apply_config
from microcompile.schedule.blocks import col_bytes_max
from microcompile.autotune.run import Measurer, lowered_workloads

MODELS = ("kws_ref_model", "pretrainedResnet_quant")
KNOB_VALUES = ("gemm_loop_order=columns", "gemm_tile=4x2")


def _parse(text: str):
    name, _, value = text.partition("=")
    if name not in KNOBS:
        sys.exit(f"error: unknown knob {name!r}")
    dom = KNOBS[name].domain
    value = next((v for v in dom if str(v) == value), None)
    if value is None:
        sys.exit(f"error: {text}: the value is outside the domain {list(dom)}")
    return name, value


def measure(model: Path, board, knobs, work: Path, base: dict) -> bool:
    compiled, workloads = lowered_workloads(model, board)
    convs = [w for w in workloads if w.space is not None and w.space.family == "conv2d"]
    cm = mc.compile(model, board)      # the default schedules: what each candidate is measured against
    m = Measurer(cm.artifact, work, Link(emulate=True, timeout=120.0))
    caps = {n.name: col_bytes_max(t) for n, _, t in compiled.kernels}
    ok = True
    for name, value in knobs:
        if not convs or name not in convs[0].space.names:
            print(f"{model.stem}: {name} is not a conv2d knob of this version")
            continue
        print(f"{model.stem}: {name}={value}" + "".join(f", {k}={v}" for k, v in base.items()))
        default, tuned = [], []
        for w in convs:
            # the default as deployed: with the im2col cap the compiler gave the kernel (blocks.py)
            start = {**w.default, "col_bytes_max": caps.get(w.nodes[0]) or w.default["col_bytes_max"], **base}
            config = {**start, name: value}
            try:
                _, trace = apply_config(w.func, board.target, config)
                default.append((w, start, apply_config(w.func, board.target, start)[1]))
            except InvalidConfig as e:
                print(f"  {w.key} x{len(w.nodes)}: refused: {e}")
                continue
            tuned.append((w, config, trace))
        if not tuned:
            print("  applies to no conv workload")
            continue
        before = m.batch(0, default)
        got = m.batch(0, tuned)
        total_b = total_t = 0
        for (w, _, _), b, t in zip(tuned, before, got):
            if b.status != "ok" or t.status != "ok":
                ok = False
                print(f"  {w.key}: default {b.status} {b.error or ''} / {name}={value} {t.status} {t.error or ''}")
                continue
            n = len(w.nodes)
            total_b, total_t = total_b + b.count * n, total_t + t.count * n
            side = "base" if base else "default"
            print(f"  {w.key} x{n}: {side} {b.count:,} -> {t.count:,} ({t.count / b.count:.4f})")
        if total_b:
            print(f"  total over those kernels: {total_b:,} -> {total_t:,} ({total_t / total_b:.4f}, "
                  f"{total_t - total_b:+,} instructions)")
    return ok


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=str(Path(__file__).resolve().parents[2] / "shared" / "models"))
    ap.add_argument("--only", nargs="*", default=list(MODELS))
    ap.add_argument("--knob", nargs="*", default=list(KNOB_VALUES), help="NAME=VALUE, e.g. gemm_tile=4x2")
    ap.add_argument("--base", nargs="*", default=[], help="NAME=VALUE set on both sides, e.g. cols=25")
    args = ap.parse_args(argv)
    board = mc.board("mps2-an386")
    knobs = [_parse(k) for k in args.knob]
    ok = True
    with tempfile.TemporaryDirectory(prefix="mc-gemm-knobs-") as tmp:
        for name in args.only:
            path = Path(args.models) / f"{name}.tflite"
            if not path.exists():
                print(f"{name}: {path} not found, skipped")
                continue
            ok &= measure(path, board, knobs, Path(tmp) / name, dict(_parse(b) for b in args.base))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
