"""MLPerf Tiny models on QEMU mps2-an386 (Cortex-M4F): instructions, arena and flash vs TFLM+CMSIS-NN.

    python benchmarks/mlperf_tiny.py [--models DIR] [--board mps2-an386] [--layers] [--only NAME ...]

Each model is deployed with `microcompile deploy --emulate` on the deterministic input of
../shared/BENCHMARK.md; the instruction count comes from the CMSDK timer under
`-icount shift=0` (one warm-up inference, then one counted). Every output is checked
against microcompile's reference interpreter (bit-exact for int8); the script exits 1
if any model is not verified. Figures are exact and repeatable. `--layers` adds, per model,
one row per layer: op, MACs, instructions (from the firmware's MC-KERNEL lines: a third,
profiled inference) and instructions per MAC.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import microcompile as mc

# TFLM + CMSIS-NN on the same QEMU set-up at -O2 (BENCHMARK.md): instructions, arena_used_bytes,
# code+rodata excluding the model array, and the TFLM portable-reference-kernel instructions.
PEER = {
    "kws_ref_model": (7_697_361, 22_820, 58_276, 43_114_754),
    "pretrainedResnet_quant": (29_860_944, 54_996, 56_064, 107_488_164),
    "ad01_int8": (582_955, 2_580, 32_564, 1_954_066),
}
MODELS = ["kws_ref_model", "pretrainedResnet_quant", "ad01_int8", "kws_ref_model_float32", "pretrainedResnet",
          "ad01_fp32"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "models")
    ap.add_argument("--board", default="mps2-an386")
    ap.add_argument("--layers", action="store_true", help="print a per-layer breakdown after each model")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="benchmark only these models")
    args = ap.parse_args(argv)
    if not args.models.is_dir():
        print(f"no models at {args.models}; pass --models DIR", file=sys.stderr)
        return 2
    header = (f"{'model':<24} {'MACs':>11} {'instructions':>13} {'instr/MAC':>9} {'TFLM+CMSIS':>11} {'ratio':>6} "
              f"{'TFLM ref':>12} {'ratio':>6} {'arena':>7} {'bound':>7} {'TFLM':>7} {'code':>7} {'TFLM':>7} {'weights':>8} "
              f"{'ok':>3}")
    print(header)
    print("-" * len(header))
    all_ok = True
    layer_tables = []
    arena_ratios = []           # our arena / TFLM's arena_used_bytes, per int8 model
    for name in MODELS:
        if args.only and name not in args.only:
            continue
        path = args.models / f"{name}.tflite"
        if not path.is_file():
            continue
        with tempfile.TemporaryDirectory() as tmp:
            try:
                r = mc.compile(path, args.board).deploy(Path(tmp) / name, emulate=True).report
            except mc.UserError as e:
                print(f"{name:<24} error: {e.message}")
                all_ok = False
                continue
        all_ok &= r["verified"]
        code = r["flash_bytes"] - r["weights_bytes"]
        peer = PEER.get(name)
        cells = (f"{peer[0]:>11,} {r['instructions'] / peer[0]:>6.2f} {peer[3]:>12,} {r['instructions'] / peer[3]:>6.2f} "
                 if peer else f"{'-':>11} {'':>6} {'-':>12} {'':>6} ")
        print(f"{name:<24} {r['macs']:>11,} {r['instructions']:>13,} {r['instructions'] / r['macs']:>9.2f} {cells}"
              f"{r['arena_bytes']:>7,} {r['arena_lower_bound_bytes']:>7,} {f'{peer[1]:,}' if peer else '-':>7} {code:>7,} "
              f"{f'{peer[2]:,}' if peer else '-':>7} "
              f"{r['weights_bytes']:>8,} {'yes' if r['verified'] else 'NO':>3}")
        if peer:
            arena_ratios.append(r["arena_bytes"] / peer[1])
        if args.layers:
            layer_tables.append((name, r["layers"]))
    for name, layers in layer_tables:
        print(f"\n{name}: per layer")
        print(f"  {'layer':<32} {'op':<18} {'MACs':>10} {'instructions':>13} {'instr/MAC':>9}")
        for row in layers:
            ins = row.get("instructions")
            per = f"{ins / row['macs']:>9.2f}" if ins and row["macs"] else f"{'':>9}"
            print(f"  {row['name'][:32]:<32} {row['op']:<18} {row['macs']:>10,} "
                  f"{ins if ins is not None else '-':>13,} {per}" if ins is not None else
                  f"  {row['name'][:32]:<32} {row['op']:<18} {row['macs']:>10,} {'-':>13} {per}")
    if arena_ratios:
        geo = math.exp(sum(map(math.log, arena_ratios)) / len(arena_ratios))
        print(f"\narena / TFLM arena_used_bytes, geometric mean over {len(arena_ratios)} int8 models: {geo:.3f}")
    print("bound = the arena's lower bound (the most bytes live at one step, in-place sharing credited).")
    print("code = flash - weights (our text + rodata without the weight arrays; TFLM's excludes its model array).")
    print("ratio < 1 means fewer instructions than the peer.")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
