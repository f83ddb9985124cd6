"""RAM and flash of the MLPerf Tiny int8 models against TFLite Micro, and the issue-12 targets.

    PYTHONPATH=. python benchmarks/memory.py [--models DIR] [--skip-stm32] [--only-mobilenets]
                                             [--only-ram-weights]

For each shared int8 model, deployed to QEMU mps2-an386 (the deterministic input of
../shared/BENCHMARK.md, output checked against the reference interpreter):

  arena      our planned arena, its lower bound (the most bytes live at one step, in-place
             sharing credited), TFLM's arena_used_bytes and the ratio
  code       all flash but the weights (report keys flash_code_bytes + flash_other_bytes),
             TFLM's code+rodata without the model, and the ratio
  weights    the weights linked on mps2-an386 (which has room, so kernels get int16 weights),
             the same with int8 weights everywhere (what a board without room gets), and the
             model's own int8 tensors plus biases and requantization constants (int32
             multiplier and shift per output channel, as TFLM computes them)
  instr      instructions for one inference against the figures of 2025-12 (before issue 12)

Then the MobileNet fixtures (tests/fixtures/mobilenets: MobileNetV1 0.25 and MobileNetV2 0.35,
96x96x3 int8) on mps2-an386 with their own input, whole-tensor (--patch off) and with the
patch stage auto picks: arena, its lower bound, instructions, bit-exact against the reference
interpreter; beside the whole-tensor arena of 2026-12-05 (before the planner's rule subsets).
Targets: patch-based at least 2x smaller than whole-tensor, at most 10% more instructions.

Then --weights-in-ram: each shared int8 model's run on the M4 twin with none, 16 KiB and all of
its weights copied to RAM, priced with the L4R5's memory system (the cycle model's estimate).

Then every shared model on the stm32 twin (NUCLEO-F446RE limits: 512 KiB flash, 128 KiB RAM):
does it build, fit and verify. Targets checked (exit 1 if one is missed): arena <= 0.8x TFLM
on each model and <= 0.65x in geometric mean; code <= 0.35x TFLM; int8-everywhere weights no
larger than the model's tensors; instructions at most 3% above today's; every model TFLM can
run on the STM32F446 fits ours.
"""

from __future__ import annotations

import argparse
import math
import sys
import tempfile
from pathlib import Path

import microcompile as mc
from microcompile.frontend import load_model
from microcompile.ir import ops

# TFLM + CMSIS-NN on the same QEMU set-up (BENCHMARK.md): arena_used_bytes, code+rodata without the model.
TFLM = {"kws_ref_model": (22_820, 58_276), "pretrainedResnet_quant": (54_996, 56_064), "ad01_int8": (2_580, 32_564)}
# microcompile before issue 12 (mps2-an386): instructions, arena, code, weights.
TODAY = {"kws_ref_model": (4_513_760, 32_400, 13_760, 59_184),
         "pretrainedResnet_quant": (15_417_360, 54_784, 12_476, 165_224),
         "ad01_int8": (341_120, 3_328, 6_152, 371_232)}
# The shared models TFLM runs on a 512 KiB / 128 KiB STM32F446 (the float ResNet-8 needs about
# 220 KiB of arena there and ad01_fp32 1 MiB of weights, so neither fits TFLM either).
STM32_MODELS = ["kws_ref_model", "pretrainedResnet_quant", "ad01_int8", "kws_ref_model_float32"]
TARGETS = {"arena": 0.8, "arena_geomean": 0.65, "code": 0.35, "instructions": 1.03}
FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "mobilenets"
# The whole-tensor arena on mps2-an386 on 2026-12-05 (every in-place rule taken, none over the
# graph input), before issue 27's patch stages.
MOBILENETS = {"mobilenet_v1_025_96_int8": 64_160, "mobilenet_v2_035_96_int8": 191_280}
PATCH_TARGETS = {"arena": 0.5, "instructions": 1.10}


def recomputed_macs(g, first: str, last: str, grid: int) -> float:
    """MACs of the layers first..last run as a grid x grid of patches that each recompute their
    halo (MCUNetV2 without redistribution), against the layers run once: what caching the
    overlap (our bands) saves."""
    from microcompile.ir.ops_patch import vertical

    names = [n.name for n in g.nodes]
    chain = g.nodes[names.index(first):names.index(last) + 1]

    def need(n, lo, hi, size, axis):      # the input rows (axis 1) or columns (axis 2) [lo, hi) reads
        k, s, d, pad = vertical(g, n, axis)
        return max(0, lo * s - pad), min(size, (hi - 1) * s - pad + (k - 1) * d + 1)

    out = g.tensors[chain[-1].outputs[0]]
    total = 0.0
    for py in range(grid):
        for px in range(grid):
            ys = (py * out.shape[1] // grid, (py + 1) * out.shape[1] // grid)
            xs = (px * out.shape[2] // grid, (px + 1) * out.shape[2] // grid)
            for n in reversed(chain):
                y, x = g.tensors[n.outputs[0]], g.tensors[n.inputs[0]]
                total += ops.get(n.op).macs(g, n) / (y.shape[1] * y.shape[2]) * (ys[1] - ys[0]) * (xs[1] - xs[0])
                ys, xs = need(n, *ys, x.shape[1], 1), need(n, *xs, x.shape[2], 2)
    return total / sum(ops.get(n.op).macs(g, n) for n in chain)


def mobilenet_rows(failures: list[str]) -> None:
    """The MobileNet table (see the module docstring)."""
    import numpy as np

    print("\nMobileNets on mps2-an386: whole-tensor (--patch off) and patch-based (--patch auto)")
    header = (f"{'model':<26} {'12-05':>8} {'whole':>8} {'bound':>8} {'patched':>8} {'bound':>8} {'ratio':>6} | "
              f"{'instr whole':>12} {'instr patched':>13} {'ratio':>6} {'ok':>3}  stage")
    print(header)
    print("-" * len(header))
    stages = []
    for name, before in MOBILENETS.items():
        path = FIXTURES / f"{name}.tflite"
        data = np.load(FIXTURES / f"{name}.npz")
        reports = {}
        with tempfile.TemporaryDirectory() as tmp:
            np.save(Path(tmp) / "x.npy", data[list(data.keys())[0]])
            for mode in ("off", "auto"):
                cm = mc.compile(path, "mps2-an386", options=mc.CompileOptions(patch=mode))
                reports[mode] = cm.deploy(Path(tmp) / mode, inputs=Path(tmp) / "x.npy", emulate=True).report
        off, auto = reports["off"], reports["auto"]
        ratio, instr = auto["arena_bytes"] / off["arena_bytes"], auto["instructions"] / off["instructions"]
        ok = off["verified"] and auto["verified"]
        print(f"{name:<26} {before:>8,} {off['arena_bytes']:>8,} {off['arena_lower_bound_bytes']:>8,} "
              f"{auto['arena_bytes']:>8,} {auto['arena_lower_bound_bytes']:>8,} {ratio:>6.2f} | "
              f"{off['instructions']:>12,} {auto['instructions']:>13,} {instr:>6.3f} {'yes' if ok else 'NO':>3}  "
              f"{auto['patch_stage'] or 'none'}")
        checks = [(ok, "not bit-exact"),
                  (ratio <= PATCH_TARGETS["arena"], f"patch-based arena {ratio:.2f}x the whole-tensor plan"),
                  (instr <= PATCH_TARGETS["instructions"], f"patch-based instructions {instr:.3f}x")]
        failures += [f"{name}: {why}" for good, why in checks if not good]
        stages.append((name, path, auto["patch_stage"]))
    print("\nrecomputing the halo instead (MCUNetV2's grids), MACs of the stage's layers against once:")
    from microcompile.compiler.compile import read_model
    from microcompile.compiler.patches import ranked
    from microcompile.transform import pipeline
    for name, path, stage in stages:
        g = pipeline.run(read_model(path))
        spec = stage.split("@", 1)[1] if stage else "{}:{}".format(*_best_candidate(ranked(g)))
        first, last = spec.split(":")
        grids = ", ".join(f"{k}x{k} {recomputed_macs(g, first, last, k):.2f}x" for k in (2, 3, 4))
        print(f"  {name:<26} {first}..{last}: {grids}")


def ram_weight_rows(models: Path) -> None:
    """Each shared int8 model run on the M4 twin with its weights in flash, 16 KiB of them in
    RAM, and all of them, priced with the L4R5's memory system (5 flash wait states at 120 MHz):
    the cycle model's estimate, not a measurement (docs/cycles.md)."""
    from microcompile.deploy.estimate import run_estimated
    from microcompile.target.board import load_board
    from microcompile.target.cycles import memory_system

    mem = memory_system(load_board("nucleo-l4r5zi"))
    print("\n--weights-in-ram, estimated on the L4R5 (M4 twin's run, the L4R5's flash):")
    print(f"  {'model':<24} {'in RAM':>8} {'est. cycles':>12} {'flash part':>11} {'est. ms':>8}")
    for name in TFLM:
        path = models / f"{name}.tflite"
        if not path.is_file():
            continue
        for budget in ("off", 16 * 1024, 1 << 20):
            with tempfile.TemporaryDirectory() as tmp:
                cm = mc.compile(path, "mps2-an386", options=mc.CompileOptions(weights_in_ram=budget))
                built = cm.build(Path(tmp) / name, emulate=True).built
                _, est = run_estimated(built.project_dir, built.board, len(built.compiled.kernels), mem, timeout=600)
            copied = sum(cm.manifest.get("ram_weights", {}).get("banks", {}).values())
            print(f"  {name:<24} {copied:>8,} {est.cycles:>12,} {est.parts.get('flash', 0):>11,} {est.ms:>8.2f}")


def _best_candidate(ranked_list) -> tuple[str, str]:
    spec = ranked_list[0][1]
    return spec.first, spec.last


def model_tensor_bytes(path: Path) -> int:
    """The model's constant tensors (int8 weights, int32 biases) plus an int32 multiplier and
    shift per output channel of every weighted layer."""
    g = load_model(path)
    tensors = sum(t.nbytes for t in g.tensors.values() if t.is_const)
    channels = sum(g.tensors[n.outputs[0]].shape[-1] for n in g.nodes if ops.get(n.op).quant == "weighted")
    return tensors + 8 * channels


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "models")
    ap.add_argument("--skip-stm32", action="store_true", help="skip the stm32 fit check")
    ap.add_argument("--only-mobilenets", action="store_true", help="only the MobileNet fixtures' table")
    ap.add_argument("--only-ram-weights", action="store_true", help="only the --weights-in-ram estimates")
    args = ap.parse_args(argv)
    if args.only_ram_weights:
        ram_weight_rows(args.models)
        return 0
    if args.only_mobilenets:
        failures: list[str] = []
        mobilenet_rows(failures)
        print("\nall targets met" if not failures else "\ntargets missed:\n  " + "\n  ".join(failures))
        return 0 if not failures else 1
    if not args.models.is_dir():
        print(f"no models at {args.models}; pass --models DIR", file=sys.stderr)
        return 2
    header = (f"{'model':<24} {'arena':>7} {'bound':>7} {'TFLM':>7} {'ratio':>6} | {'code':>6} {'TFLM':>7} {'ratio':>6} | "
              f"{'weights':>8} {'int8':>8} {'model':>8} | {'instructions':>12} {'today':>12} {'ratio':>6} {'ok':>3}")
    print(header)
    print("-" * len(header))
    failures, ratios = [], []
    for name, (tflm_arena, tflm_code) in TFLM.items():
        path = args.models / f"{name}.tflite"
        if not path.is_file():
            print(f"{name:<24} missing")
            failures.append(f"{name} missing")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            r = mc.compile(path, "mps2-an386").deploy(Path(tmp) / name, emulate=True).report
        narrow = mc.compile(path, "mps2-an386", options=mc.CompileOptions(flash_budget=1)).manifest["weights_bytes"]
        own = model_tensor_bytes(path)
        today = TODAY[name][0]
        # The target's "code" is all flash but the weights: our program plus "other" (the
        # self-test input, vector table, data), as TFLM's figure includes its harness.
        code = r["flash_bytes"] - r["flash_weights_bytes"]
        arena_ratio, code_ratio = r["arena_bytes"] / tflm_arena, code / tflm_code
        ratios.append(arena_ratio)
        print(f"{name:<24} {r['arena_bytes']:>7,} {r['arena_lower_bound_bytes']:>7,} {tflm_arena:>7,} {arena_ratio:>6.2f} | "
              f"{code:>6,} {tflm_code:>7,} {code_ratio:>6.2f} | {r['flash_weights_bytes']:>8,} "
              f"{narrow:>8,} {own:>8,} | {r['instructions']:>12,} {today:>12,} {r['instructions'] / today:>6.3f} "
              f"{'yes' if r['verified'] else 'NO':>3}")
        checks = [(r["verified"], "not bit-exact"), (arena_ratio <= TARGETS["arena"], f"arena {arena_ratio:.2f}x TFLM"),
                  (code_ratio <= TARGETS["code"], f"code {code_ratio:.2f}x TFLM"),
                  (narrow <= own, f"int8 weights {narrow} > model tensors {own}"),
                  (r["instructions"] <= TARGETS["instructions"] * today, "instructions more than 3% above today's")]
        failures += [f"{name}: {why}" for ok, why in checks if not ok]
    if ratios:
        geo = math.exp(sum(map(math.log, ratios)) / len(ratios))
        print(f"\narena geometric mean {geo:.3f}x TFLM (target <= {TARGETS['arena_geomean']})")
        if geo > TARGETS["arena_geomean"]:
            failures.append(f"arena geometric mean {geo:.3f}")
    mobilenet_rows(failures)
    ram_weight_rows(args.models)
    if not args.skip_stm32:
        print("\nstm32 (NUCLEO-F446RE: 512 KiB flash, 128 KiB RAM), on its QEMU twin:")
        for name in STM32_MODELS:
            path = args.models / f"{name}.tflite"
            if not path.is_file():
                continue
            with tempfile.TemporaryDirectory() as tmp:
                try:
                    r = mc.compile(path, "stm32").deploy(Path(tmp) / name, emulate=True).report
                except mc.UserError as e:
                    print(f"  {name:<24} does not fit: {e.message}")
                    failures.append(f"{name} does not fit stm32")
                    continue
            print(f"  {name:<24} flash {r['flash_bytes']:>8,}  RAM {r['ram_bytes']:>7,}  arena {r['arena_bytes']:>7,}  "
                  f"int16 weights in {len(r['widened_kernels'])} kernels  verified {'yes' if r['verified'] else 'NO'}")
            if not r["verified"]:
                failures.append(f"{name} on stm32 not bit-exact")
    print("\nall targets met" if not failures else "\ntargets missed:\n  " + "\n  ".join(failures))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
