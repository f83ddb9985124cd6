"""MLPerf Tiny models on QEMU mps2-an386 (Cortex-M4F): instructions, arena and flash vs TFLM+CMSIS-NN.

    python benchmarks/mlperf_tiny.py [--models DIR] [--board mps2-an386] [--layers] [--only NAME ...]

With --board mps2-an500 (M7), mps2-an505 (M33) or mps3-an547 (M55, CMSIS-NN's Helium kernels)
the TFLM+CMSIS-NN column is that core's figure from BENCHMARK.md (instructions; the arena too on
the M55), and the portable-reference and code columns are left empty.

Each model is deployed with `microcompile deploy --emulate` on the deterministic input of
../shared/BENCHMARK.md; the instruction count comes from the CMSDK timer under
`-icount shift=0` (one warm-up inference, then one counted). Every output is checked
against microcompile's reference interpreter (bit-exact for int8); the script exits 1
if any model is not verified. Figures are exact and repeatable. `--layers` adds, per model,
one row per layer: op, MACs, instructions (from the firmware's MC-KERNEL lines: a third,
profiled inference) and instructions per MAC.

The `est. cycles` and `est. ms` columns are the cycle model's estimate for --board
(docs/cycles.md): QEMU's exact instruction trace priced with the
core's published timings and the board's memory system; an estimate, never a measurement.
`--parts` adds a table of estimated milliseconds on the three MLPerf Tiny reference parts
(L4R5 M4 120 MHz, H7A3 M7 280 MHz, U575 M33 160 MHz) beside the best published closed-division
results: each model runs on the QEMU twin of that core and is priced with that part's clock
and flash (PARTS below states each fact and what is assumed).
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
# The same peer on the other cores' twins (BENCHMARK.md): instructions and, where measured,
# arena_used_bytes; on the M55 with CMSIS-NN's Helium kernels.
PEER_BY_BOARD = {
    "mps2-an500": {"kws_ref_model": (7_643_800, None), "pretrainedResnet_quant": (30_024_080, None),
                   "ad01_int8": (583_640, None)},
    "mps2-an505": {"kws_ref_model": (7_680_350, None), "pretrainedResnet_quant": (29_960_950, None),
                   "ad01_int8": (583_900, None)},
    "mps3-an547": {"kws_ref_model": (1_814_500, 27_300), "pretrainedResnet_quant": (4_910_750, 54_996),
                   "ad01_int8": (286_031, 5_172)},
}


def peer_of(board: str, name: str) -> tuple | None:
    """(instructions, arena, code, portable-reference instructions) of TFLM+CMSIS-NN on `board`'s
    twin, None where not measured."""
    if board == "mps2-an386":
        return PEER.get(name)
    other = PEER_BY_BOARD.get(board, {}).get(name)
    return (other[0], other[1], None, None) if other else None


# MLPerf Tiny's best closed-division latencies in ms (issue 26): KWS, IC (ResNet-8), AD.
PUBLISHED = {"L4R5": (43.19, 165.1, 4.05), "H7A3": (11.32, 40.85, 1.08), "U575": (28.99, 104.3, 3.09)}
PUBLISHED_MODELS = ("kws_ref_model", "pretrainedResnet_quant", "ad01_int8")


def parts():
    """The reference parts: (name, twin board of its core, memory system). The L4R5 is the
    nucleo-l4r5zi board's data (boards/); the H7A3 and U575 have no board here yet, so their
    facts are stated here."""
    from microcompile.target import load_board
    from microcompile.target.cycles import MemorySystem, memory_system

    return [
        ("L4R5", "mps2-an386", memory_system(load_board("nucleo-l4r5zi"))),
        # STM32H7A3 at 280 MHz (VOS0): AXI at the core clock; 128-bit flash words; weights reach
        # the core through the M7's 16 KiB 4-way D-cache (32-byte lines). Wait states: 6 assumed
        # for 280 MHz (RM0455's latency table; to be checked against the manual).
        ("H7A3", "mps2-an500", MemorySystem(280_000_000, flash_wait_states=6, flash_read_bytes=16, cache_lines=512,
                                            cache_line_bytes=32, cache_ways=4)),
        # STM32U575 at 160 MHz (Range 1): 4 wait states (RM0456, up to 160 MHz); 128-bit flash
        # reads; code-bus data reads go through the 8 KiB 2-way ICACHE (16-byte lines; assumed).
        ("U575", "mps2-an505", MemorySystem(160_000_000, flash_wait_states=4, flash_read_bytes=16, cache_lines=512,
                                            cache_line_bytes=16, cache_ways=2)),
    ]


def part_estimates(models: Path, only) -> dict:
    """{(part, model): (estimated ms with the weights in flash, with them all copied to RAM at
    mc_init by --weights-in-ram)}, each model built for the part's twin and priced with its
    memory system. Every part has the RAM for them (L4R5 640 KiB, H7A3 1.4 MiB, U575 786 KiB
    of SRAM; ResNet-8's 166 KiB of weights are the most)."""
    from microcompile.deploy.estimate import run_estimated

    out = {}
    for part, twin, mem in parts():
        for name in PUBLISHED_MODELS:
            path = models / f"{name}.tflite"
            if (only and name not in only) or not path.is_file():
                continue
            ms = []
            for weights_in_ram in ("off", 1 << 20):
                with tempfile.TemporaryDirectory() as tmp:
                    try:
                        cm = mc.compile(path, twin, options=mc.CompileOptions(weights_in_ram=weights_in_ram))
                        built = cm.build(Path(tmp) / name, emulate=True).built
                        _, est = run_estimated(built.project_dir, built.board, len(built.compiled.kernels), mem,
                                               timeout=600)
                    except mc.UserError as e:
                        print(f"{part} {name}: error: {e.message.splitlines()[0]}", file=sys.stderr)
                        break
                ms.append(est.ms)
            if len(ms) == 2:
                out[part, name] = tuple(ms)
    return out


def print_parts(est: dict) -> None:
    print("\nestimated ms on the MLPerf Tiny reference parts vs the best published closed-division results")
    print(f"  {'part':<6} {'model':<24} {'est. ms':>9} {'in RAM':>9} {'published':>9} {'ratio':>6}")
    for part, _, mem in parts():
        for k, name in enumerate(PUBLISHED_MODELS):
            if (part, name) not in est:
                continue
            (flash, ram), pub = est[part, name], PUBLISHED[part][k]
            print(f"  {part:<6} {name:<24} {flash:>9.2f} {ram:>9.2f} {pub:>9.2f} {min(flash, ram) / pub:>6.2f}")
        print(f"         ({mem.clock_hz / 1e6:g} MHz, {mem.flash_wait_states} flash wait states)")
    print("est. ms: weights in flash; in RAM: all of them copied to RAM at mc_init (--weights-in-ram);"
          " ratio: the faster of the two over the published figure.")
    print("An estimate is not a measurement: the model prices QEMU's instructions with published timings"
          " (docs/cycles.md); on a board, profile reads DWT->CYCCNT.")


MODELS = ["kws_ref_model", "pretrainedResnet_quant", "ad01_int8", "kws_ref_model_float32", "pretrainedResnet",
          "ad01_fp32"]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "models")
    ap.add_argument("--board", default="mps2-an386")
    ap.add_argument("--layers", action="store_true", help="print a per-layer breakdown after each model")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="benchmark only these models")
    ap.add_argument("--parts", action="store_true",
                    help="also estimate ms on the L4R5, H7A3 and U575 against the published MLPerf Tiny results")
    args = ap.parse_args(argv)
    if not args.models.is_dir():
        print(f"no models at {args.models}; pass --models DIR", file=sys.stderr)
        return 2
    header = (f"{'model':<24} {'MACs':>11} {'instructions':>13} {'instr/MAC':>9} {'TFLM+CMSIS':>11} {'ratio':>6} "
              f"{'TFLM ref':>12} {'ratio':>6} {'arena':>7} {'bound':>7} {'TFLM':>7} {'code':>7} {'TFLM':>7} {'weights':>8} "
              f"{'ok':>3} {'est. cycles':>12} {'est. ms':>8}")
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
        peer = peer_of(args.board, name)
        ref = (f"{peer[3]:>12,} {r['instructions'] / peer[3]:>6.2f} " if peer and peer[3] else f"{'-':>12} {'':>6} ")
        cells = (f"{peer[0]:>11,} {r['instructions'] / peer[0]:>6.2f} {ref}" if peer else
                 f"{'-':>11} {'':>6} {'-':>12} {'':>6} ")
        peer_arena = f"{peer[1]:,}" if peer and peer[1] else "-"
        peer_code = f"{peer[2]:,}" if peer and peer[2] else "-"
        print(f"{name:<24} {r['macs']:>11,} {r['instructions']:>13,} {r['instructions'] / r['macs']:>9.2f} {cells}"
              f"{r['arena_bytes']:>7,} {r['arena_lower_bound_bytes']:>7,} {peer_arena:>7} {code:>7,} "
              f"{peer_code:>7} "
              f"{r['weights_bytes']:>8,} {'yes' if r['verified'] else 'NO':>3} "
              f"{r.get('estimated_cycles') or 0:>12,} {r.get('estimated_ms') or 0:>8.2f}")
        if peer and peer[1]:
            arena_ratios.append(r["arena_bytes"] / peer[1])
        if args.layers:
            layer_tables.append((name, r["layers"]))
    for name, layers in layer_tables:
        print(f"\n{name}: per layer")
        print(f"  {'layer':<32} {'op':<18} {'MACs':>10} {'instructions':>13} {'instr/MAC':>9} {'est. cycles':>12}")
        for row in layers:
            ins = row.get("instructions")
            per = f"{ins / row['macs']:>9.2f}" if ins and row["macs"] else f"{'':>9}"
            est = row.get("estimated_cycles")
            est = f"{est:>12,}" if est is not None else f"{'-':>12}"
            print(f"  {row['name'][:32]:<32} {row['op']:<18} {row['macs']:>10,} "
                  f"{ins if ins is not None else '-':>13,} {per} {est}" if ins is not None else
                  f"  {row['name'][:32]:<32} {row['op']:<18} {row['macs']:>10,} {'-':>13} {per} {est}")
    if arena_ratios:
        geo = math.exp(sum(map(math.log, arena_ratios)) / len(arena_ratios))
        print(f"\narena / TFLM arena_used_bytes, geometric mean over {len(arena_ratios)} int8 models: {geo:.3f}")
    print("bound = the arena's lower bound (the most bytes live at one step, in-place sharing credited).")
    print("code = flash - weights (our text + rodata without the weight arrays; TFLM's excludes its model array).")
    print("ratio < 1 means fewer instructions than the peer.")
    print(f"est. = the cycle model's estimate at {args.board}'s clock (not a measurement; docs/cycles.md).")
    if args.parts:
        print_parts(part_estimates(args.models, args.only))
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
