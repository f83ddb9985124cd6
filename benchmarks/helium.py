"""The Cortex-M55 (QEMU mps3-an547) with each kernel set: portable C, Armv7E-M DSP (scalar SIMD
within a register) and Helium (MVE). Instructions per inference, bit-exact checked.

    python benchmarks/helium.py [--models DIR] [--only NAME ...] [--layers]

The same core and firmware, only the kernel set changes: the board's core features are
overridden (mve off: the DSP kernels; mve and dsp off: plain C). QEMU counts instructions, not
beats or cycles: on a real Cortex-M55 most MVE instructions take two beats (a 128-bit vector on
a 64-bit datapath) and a gather one beat per lane, so these figures flatter Helium against the
scalar sets. Exit status 1 if any run is not bit-exact.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import tempfile
from pathlib import Path

import microcompile as mc

MODELS = ["kws_ref_model", "pretrainedResnet_quant", "ad01_int8"]


def boards() -> dict:
    b = mc.board("mps3-an547")
    return {"c": dataclasses.replace(b, target=dataclasses.replace(b.target, mve=False, dsp=False)),
            "dsp": dataclasses.replace(b, target=dataclasses.replace(b.target, mve=False)),
            "mve": b}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "models")
    ap.add_argument("--only", nargs="+", metavar="NAME")
    ap.add_argument("--layers", action="store_true", help="instructions per layer too")
    args = ap.parse_args(argv)
    print("mps3-an547 (Cortex-M55), instructions per inference (QEMU counts instructions, not beats)")
    header = f"{'model':<24} {'MACs':>11} {'C':>12} {'DSP':>12} {'MVE':>12} {'MVE/DSP':>8} {'MVE/C':>7} {'ok':>3}"
    print(header)
    print("-" * len(header))
    ok_all = True
    for name in args.only or MODELS:
        path = args.models / f"{name}.tflite"
        if not path.is_file():
            print(f"{name:<24} (not found in {args.models})")
            continue
        counts, layers, ok, macs = {}, {}, True, 0
        for kernels, board in boards().items():
            with tempfile.TemporaryDirectory() as tmp:
                r = mc.compile(path, board).deploy(Path(tmp) / "p", emulate=True).report
            counts[kernels], layers[kernels], macs = r["instructions"], r["layers"], r["macs"]
            ok &= r["verified"]
        ok_all &= ok
        print(f"{name:<24} {macs:>11,} {counts['c']:>12,} {counts['dsp']:>12,} {counts['mve']:>12,} "
              f"{counts['mve'] / counts['dsp']:>8.2f} {counts['mve'] / counts['c']:>7.2f} {'yes' if ok else 'NO':>3}")
        if args.layers:
            for row_c, row_d, row_m in zip(layers["c"], layers["dsp"], layers["mve"]):
                if row_m["instructions"]:
                    print(f"    {row_m['op']:<20} {row_m['macs']:>11,} {row_c['instructions']:>12,} "
                          f"{row_d['instructions']:>12,} {row_m['instructions']:>12,}")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
