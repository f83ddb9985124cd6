"""Mutation check: break, one at a time, the places where a wrong answer would be silent
(requantization rounding, zero-point handling, padding values, the per-channel axis, the
float tolerance helper, ...) and confirm that the tests meant to guard each one fail.

    .venv/bin/python tests/mutation_check.py            # every mutation (a few minutes)
    .venv/bin/python tests/mutation_check.py --list     # what it would do
    .venv/bin/python tests/mutation_check.py --only rdbpot-ties-c fc-ties-away

Not part of the default run (its name does not start with test_). It copies the checkout
(`git ls-files`) into a temporary directory next to a link to ../shared, runs the guarding
tests once unmutated (they must pass), then for each mutation replaces one exact snippet
of one file in the copy, runs its tests (`python -m pytest -x` in the copy, which imports
the copy's microcompile) and restores the file. The checkout itself is never modified.
A mutation "survives" when its tests still pass; the script exits 1 if any survives.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    what: str          # the silent wrong answer it stands for
    path: str          # relative to the repository
    old: str           # an exact snippet, present once
    new: str
    tests: tuple[str, ...]   # pytest arguments (node ids, -k expressions)


INTERP_OPS = "tests/ir/test_interp_ops.py"
MUTATIONS = [
    Mutation("srdhm-nudge", "gemmlowp's rounding doubling high multiply rounds negatives toward +inf",
             "microcompile/ir/fixedpoint.py", "nudge = np.where(ab >= 0, 1 << 30, 1 - (1 << 30))",
             "nudge = np.where(ab >= 0, 1 << 30, 1 << 30)", (INTERP_OPS, "-k", "conv2d and int8")),
    Mutation("rdbpot-ties", "RoundingDivideByPOT rounds negative ties toward +inf (Python)",
             "microcompile/ir/fixedpoint.py", "threshold = (mask >> 1) + (x < 0)", "threshold = (mask >> 1)",
             ("tests/ir/test_fixedpoint.py", INTERP_OPS, "-k", "fixedpoint or (depthwise and int8)")),
    Mutation("rdbpot-ties-c", "the cheap C RoundingDivideByPOT rounds negative ties toward +inf",
             "runtime_c/include/mc_requant.h",
             "const int32_t threshold = (mask >> 1) + (int32_t)((uint32_t)x >> 31);",
             "const int32_t threshold = (mask >> 1);", ("tests/runtime_c/test_mc_requant.py",)),
    Mutation("fc-ties-away", "int8 FULLY_CONNECTED rounds ties up instead of away from zero",
             "microcompile/ir/fixedpoint.py", "return np.where(x < 0, -magnitude, magnitude)",
             "return (x * mult + (np.int64(1) << (total - 1))) >> total",
             ("tests/ir/test_rounding_ties.py", INTERP_OPS, "-k", "ties or (fully_connected and int8)")),
    Mutation("onnx-ties-even", "ONNX layers round ties up instead of to even (Python)",
             "microcompile/ir/fixedpoint.py",
             "return floor + ((rem > half) | ((rem == half) & ((floor & 1) == 1)))",
             "return floor + (rem >= half)", ("tests/runtime_c/test_mc_requant.py",)),
    Mutation("onnx-ties-even-c", "ONNX layers round ties up instead of to even (C)",
             "runtime_c/include/mc_fixedpoint.h", "return (int32_t)(floor + (rem > half || (rem == half && (floor & 1))));",
             "return (int32_t)(floor + (rem >= half));", ("tests/runtime_c/test_mc_requant.py",)),
    Mutation("onnx-rounding-dropped", "QDQ layers keep TFLite's double rounding (the MobileNet bug)",
             "microcompile/frontend/onnx/qdq_fold.py", 'attrs["rounding"] = "onnx"', 'attrs["rounding"] = "tflite"',
             ("tests/frontend/test_onnx_qdq.py", "-k", "mobilenet")),
    Mutation("tflite-quantize-ties", "TFLite's QUANTIZE rounds ties to even instead of away from zero",
             "microcompile/reference/elementwise.py",
             "q = np.rint(scaled) if p.half_even else fp.tflite_round(scaled)", "q = np.rint(scaled)",
             ("tests/ir/test_rounding_ties.py", INTERP_OPS, "-k", "ties or quantize")),
    Mutation("conv-padding-zero-point", "a padded conv tap reads 0 instead of the input zero point (lowering)",
             "microcompile/lower/conv2d.py", 'xv = Select(valid, xv, IntImm(-p.input_offset, "int8"))',
             'xv = Select(valid, xv, IntImm(0, "int8"))',
             ("tests/lower/test_lower_ops.py", "-k", "conv2d and int8")),
    Mutation("conv-bias-zero-point", "the input zero point folded into the conv bias with the wrong sign",
             "microcompile/lower/conv2d.py", "folded = bias - zp_in * w_per_out.astype(np.int64).sum(axis=1)",
             "folded = bias + zp_in * w_per_out.astype(np.int64).sum(axis=1)",
             ("tests/lower/test_lower_ops.py", "-k", "conv2d and int8")),
    Mutation("mean-zero-point", "int8 MEAN subtracts the input zero point once instead of once per element",
             "microcompile/reference/vision.py", "total - p.input_zero_point * p.count, p.multiplier",
             "total - p.input_zero_point, p.multiplier", (INTERP_OPS, "-k", "mean and int8")),
    Mutation("uint8-zero-point", "uint8 ONNX zero points moved by -127 instead of -128",
             "microcompile/frontend/onnx/qdq.py", "np.dtype(np.uint8): -128}", "np.dtype(np.uint8): -127}",
             ("tests/frontend/test_onnx_qdq.py", "-k", "u8")),
    Mutation("pad-value", "int8 PAD fills with 0 instead of the output zero point",
             "microcompile/reference/vision.py",
             'return np.float32(0.0) if out.dtype == "float32" else qp._q(graph, node.outputs[0]).zp',
             'return np.float32(0.0) if out.dtype == "float32" else 0', (INTERP_OPS, "-k", "pad and int8")),
    Mutation("max-pool-padding", "int8 max pool pads with 0, which can win over negative values",
             "microcompile/reference/vision.py",
             "low = -np.inf if x.dtype == np.float32 else np.iinfo(x.dtype).min",
             "low = -np.inf if x.dtype == np.float32 else 0", (INTERP_OPS, "-k", "max_pool2d and int8")),
    Mutation("per-channel-scales", "per-channel weight scales applied to the wrong channels",
             "microcompile/reference/qparams.py",
             "return np.broadcast_to(scales, (channels,)) if scales.size == 1 else scales",
             "return np.broadcast_to(scales, (channels,)) if scales.size == 1 else scales[::-1]",
             (INTERP_OPS, "-k", "(conv2d or depthwise) and int8")),
    Mutation("per-channel-axis-writer", "the TFLite writer stores the quantized dimension as 0 for every tensor",
             "microcompile/frontend/tflite/writer.py",
             "tflite.QuantizationParametersAddQuantizedDimension(b, q.axis or 0)",
             "tflite.QuantizationParametersAddQuantizedDimension(b, 0)",
             ("tests/ir/test_tflite_writer.py", INTERP_OPS, "-k", "writer or (depthwise and int8)")),
    Mutation("shared-multiplier", "conv/depthwise multipliers 1% off in the parameters the interpreter and the "
             "C share: device == interpreter, so only a comparison with LiteRT sees it",
             "microcompile/reference/qparams.py",
             "reals = [float(np.float32(in_s)) * float(ws) / float(np.float32(out_s)) for ws in w_scales]",
             "reals = [1.01 * float(np.float32(in_s)) * float(ws) / float(np.float32(out_s)) for ws in w_scales]",
             ("tests/lower/test_depthwise.py", "-k", "cortex_m and 3x3-s1-same and an385")),
    Mutation("relu6-clamp", "a fused RELU6 clamps at 6.5 instead of 6",
             "microcompile/ir/fixedpoint.py", '"RELU6": (0.0, 6.0)', '"RELU6": (0.0, 6.5)',
             (INTERP_OPS, "-k", "relu6")),
    Mutation("float-tolerance", "the float tolerance helper accepts 1e-3 instead of 1e-5",
             "microcompile/ir/compare.py", "RTOL = 1e-5", "RTOL = 1e-3", ("tests/ir/test_compare.py",)),
    Mutation("float-tolerance-nan", "the float tolerance helper lets NaN through",
             "microcompile/ir/compare.py",
             "bad = ~(diff <= RTOL * np.abs(r64) + atol_of_max * (np.abs(r64).max() if r64.size else 0.0))",
             "bad = diff > RTOL * np.abs(r64) + atol_of_max * (np.abs(r64).max() if r64.size else 0.0)",
             ("tests/ir/test_compare.py",)),
    Mutation("float-tolerance-dtype", "the float tolerance helper ignores a dtype mismatch",
             "microcompile/ir/compare.py", "if dev.shape != ref.shape or dev.dtype != ref.dtype:",
             "if dev.shape != ref.shape:", ("tests/ir/test_compare.py",)),
    Mutation("verified-ignored", "deploy exits 0 whatever the comparison says",
             "microcompile/cli.py", '        print(result.fit.format())\n    return 0 if r["verified"] else EXIT_MISMATCH',
             "        print(result.fit.format())\n    return 0",
             ("tests/e2e/test_cli_claims.py", "-k", "mismatch")),
    Mutation("skip-budget", "a skip with any reason is allowed",
             "tests/skip_budget.py", "    for key in keys:\n        if re.search(ALLOWED[key], reason):",
             "    for key in keys:\n        if True:", ("tests/test_skip_budget.py",)),
]


def _copy_checkout(dst: Path) -> Path:
    """The tracked and untracked (not ignored) files of the checkout, in dst/checkout, with
    dst/shared linked to ../shared so the MLPerf models are found as usual."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True,
                           check=True).stdout.decode().split("\0")
    root = dst / "checkout"
    for rel in filter(None, files):
        src = REPO / rel
        if src.is_file():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, root / rel)
    if (REPO.parent / "shared").is_dir():
        (dst / "shared").symlink_to(REPO.parent / "shared")
    return root


def _pytest(root: Path, args: tuple[str, ...]) -> tuple[int, float, str]:
    start = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", *args], cwd=root,
                       capture_output=True, text=True, env=dict(os.environ, PYTHONDONTWRITEBYTECODE="1"))
    tail = (p.stdout.strip().splitlines() or [""])[-1]
    return p.returncode, time.monotonic() - start, tail


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="+", metavar="NAME", help="run only these mutations")
    ap.add_argument("--list", action="store_true", help="list the mutations and their tests, run nothing")
    args = ap.parse_args(argv)
    chosen = [m for m in MUTATIONS if not args.only or m.name in args.only]
    if args.only and len(chosen) != len(args.only):
        print(f"unknown mutation(s): {sorted(set(args.only) - {m.name for m in MUTATIONS})}", file=sys.stderr)
        return 2
    for m in chosen:
        src = (REPO / m.path).read_text()
        if src.count(m.old) != 1:
            print(f"{m.name}: the snippet is not in {m.path} exactly once (found {src.count(m.old)}); update the list",
                  file=sys.stderr)
            return 2
    if args.list:
        for m in chosen:
            print(f"{m.name:<26} {m.path}: {m.what}\n{'':<26} tests: {' '.join(m.tests)}")
        return 0
    with tempfile.TemporaryDirectory(prefix="mc-mutation-") as tmp:
        root = _copy_checkout(Path(tmp))
        caught = 0
        print(f"{'mutation':<26} {'result':<9} {'time':>6}  tests")
        for m in chosen:
            code, secs, tail = _pytest(root, m.tests)
            if code != 0:
                print(f"{m.name:<26} BASELINE FAILS ({tail}): the guarding tests must pass unmutated")
                return 2
            path = root / m.path
            original = path.read_text()
            path.write_text(original.replace(m.old, m.new))
            try:
                code, secs, tail = _pytest(root, m.tests)
            finally:
                path.write_text(original)
            caught += code != 0
            print(f"{m.name:<26} {'caught' if code else 'SURVIVED':<9} {secs:>5.0f}s  {' '.join(m.tests)}  [{tail}]")
        print(f"\nmutation score: {caught} of {len(chosen)} mutations caught")
        return 0 if caught == len(chosen) else 1


if __name__ == "__main__":
    sys.exit(main())
