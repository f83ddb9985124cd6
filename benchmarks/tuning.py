"""Tuning the shared int8 models on QEMU mps2-an386: default vs tuned instructions against TFLM+CMSIS-NN.

    PYTHONPATH=. python benchmarks/tuning.py [--models DIR] [--board mps2-an386] [--trials N] [--jobs N]
                                             [--only NAME ...] [--curve] [--keep DIR] [--batch]

For each int8 model of ../shared/models: `deploy` with the default schedules (instructions of
one inference, bit-exact check), `tune` with --jobs 1 and with --jobs N (the same trials and
seed; wall time of each), `deploy --records` with the --jobs N records (instructions, bit-exact
check), and the ratio of both counts to TFLM+CMSIS-NN's (BENCHMARK.md). `--curve` also tunes
with --strategy random at the same trials (one job, as the --jobs 1 run it is compared with)
and prints both best-so-far curves: after t trials,
the model's kernel instructions if every workload ran its best point so far (the sum over
workloads of kernels x best count). Exits 1 if a tuned firmware is not bit-exact.
Wall times depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from microcompile import driver, tuning
from microcompile.tune import read_records

# TFLM + CMSIS-NN instructions on the same QEMU set-up at -O2 (BENCHMARK.md).
PEER = {"kws_ref_model": 7_697_361, "pretrainedResnet_quant": 29_860_944, "ad01_int8": 582_955}
GOAL = 0.45
QUIET = lambda s: None  # noqa: E731


def _deploy(path, board, out, records=None):
    r = driver.deploy(path, board, out, emulate=True, progress=QUIET, records=records).report
    return r["instructions"], r["verified"]


def _tune(path, board, records, trials, jobs, strategy="model", batch=False):
    start = time.monotonic()
    result, workloads = tuning.tune_model(path, board, records, budget=tuning.Budget(trials, None), emulate=True,
                                          jobs=jobs, strategy=strategy, progress=QUIET, bar=False, batch=batch)
    return result, workloads, time.monotonic() - start


def _curve(records, workloads) -> list[int]:
    """Best-so-far kernel instructions of the model after each measured trial."""
    kernels = {w.key: len(w.nodes) for w in workloads}
    best: dict[str, int] = {}
    out = []
    for r in read_records(records)[0]:
        if r["status"] == "invalid":
            continue
        if r["status"] == "ok":
            best[r["workload"]] = min(best.get(r["workload"], r["count"]), r["count"])
        out.append(sum(kernels[k] * c for k, c in best.items()) if len(best) == len(kernels) else None)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "models")
    ap.add_argument("--board", default="mps2-an386")
    ap.add_argument("--trials", type=int, default=60)
    ap.add_argument("--jobs", type=int, default=max(2, os.cpu_count() or 2))
    ap.add_argument("--only", nargs="+", metavar="NAME")
    ap.add_argument("--curve", action="store_true", help="also tune with random search and print both curves")
    ap.add_argument("--keep", type=Path, help="keep the records files here")
    ap.add_argument("--batch", action="store_true", help="tune with --batch (a candidate of every workload per "
                                                         "firmware)")
    args = ap.parse_args(argv)
    if not args.models.is_dir():
        print(f"no models at {args.models}; pass --models DIR", file=sys.stderr)
        return 2
    header = (f"{'model':<24} {'default':>11} {'ratio':>6} {'tuned':>11} {'ratio':>6} {'goal':>5} {'trials':>6} "
              f"{'jobs 1 (s)':>10} {f'jobs {args.jobs} (s)':>10} {'bit-exact':>9}")
    print(header)
    print("-" * len(header))
    all_ok, curves = True, []
    for name, peer in PEER.items():
        path = args.models / f"{name}.tflite"
        if (args.only and name not in args.only) or not path.is_file():
            continue
        with tempfile.TemporaryDirectory() as tmp:
            keep = args.keep or Path(tmp)
            keep.mkdir(parents=True, exist_ok=True)
            r1, rn = keep / f"{name}.jobs1.jsonl", keep / f"{name}.jobs{args.jobs}.jsonl"
            for f in (r1, rn):
                f.unlink(missing_ok=True)
            default, ok0 = _deploy(path, args.board, Path(tmp) / "default")
            res1, _, t1 = _tune(path, args.board, r1, args.trials, 1, batch=args.batch)
            resn, workloads, tn = _tune(path, args.board, rn, args.trials, args.jobs, batch=args.batch)
            tuned, ok = _deploy(path, args.board, Path(tmp) / "tuned", records=rn)
            all_ok &= ok and ok0
            print(f"{name:<24} {default:>11,} {default / peer:>6.3f} {tuned:>11,} {tuned / peer:>6.3f} "
                  f"{'yes' if tuned <= GOAL * peer else 'NO':>5} {resn.trials:>6} {t1:>10.1f} {tn:>10.1f} "
                  f"{'yes' if ok else 'NO':>9}")
            if args.curve:
                rr = keep / f"{name}.random.jsonl"
                rr.unlink(missing_ok=True)
                # One job for both curves: with several, records land in the order trials finish.
                _tune(path, args.board, rr, args.trials, 1, strategy="random", batch=args.batch)
                curves.append((name, _curve(r1, workloads), _curve(rr, workloads)))
    for name, model, rand in curves:
        print(f"\nbest-so-far kernel instructions of {name} (sum over workloads of kernels x best count)")
        print(f"{'trials':>6} {'model search':>13} {'random search':>13}")
        n = min(len(model), len(rand))
        for t in sorted({max(1, round(n * f / 10)) for f in range(1, 11)}):
            m, r = model[t - 1], rand[t - 1]
            print(f"{t:>6} {(f'{m:,}' if m else '-'):>13} {(f'{r:,}' if r else '-'):>13}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
