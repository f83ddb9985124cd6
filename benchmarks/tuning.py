"""Tuning the shared int8 models on QEMU mps2-an386: default vs tuned instructions against TFLM+CMSIS-NN.

    PYTHONPATH=. python benchmarks/tuning.py [--models DIR] [--board mps2-an386] [--only NAME ...]
        [--per-workload K | --trials N] [--jobs N] [--cost-model ridge|xgboost] [--batch]
        [--records-dir DIR] [--no-curve] [--plot FILE]

For each int8 model of ../shared/models (kws_ref_model, pretrainedResnet_quant, ad01_int8):

1. `deploy` with the default schedules: instructions of one inference, bit-exact check;
2. `tune` with --jobs 1 and with --jobs N (N = os.cpu_count() by default; the same trials, seed
   and cost model; the wall time of each);
3. `deploy --records` with the --jobs N records: tuned instructions, bit-exact check;
4. the ratios of both counts to TFLM+CMSIS-NN's (BENCHMARK.md);
5. unless --no-curve, `tune --strategy random` at the same trials (one job, like the --jobs 1
   run it is compared with) and both best-so-far curves on the same workloads: after t
   trials, the model's kernel instructions if every workload ran its best point so far (the
   sum over workloads of kernels x best count), printed at fixed trial counts (and drawn to
   --plot FILE, which needs matplotlib: microcompile[plot]).

Trials per model: --trials N, else --per-workload K times the model's workload count (ResNet
has about three times kws's workloads, so it gets three times the trials).

Resumable: with --records-dir DIR the records stay in DIR (<model>.jobs1.jsonl,
<model>.jobs<N>.jsonl, <model>.random.jsonl) with the wall time spent on each
(<file>.time.json); a second run resumes each file (`tune --resume`) and measures only the
trials still missing, so an interrupted or repeated run costs only what is left; the wall
times printed are the sums over the runs that measured the file. Without --records-dir the
records go to a temporary directory and are removed.

Exits 1 if a default or tuned firmware is not bit-exact, 2 on a bad argument. Wall times
depend on the machine and its load; the instruction counts do not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import microcompile as mc
from microcompile.errors import UserError
from microcompile.autotune import COST_MODELS, Budget, check_cost_model, read_records
from microcompile.autotune.run import lowered_workloads, parse_arena_budget

# TFLM + CMSIS-NN instructions on the same QEMU set-up at -O2 (BENCHMARK.md).
PEER = {"kws_ref_model": 7_697_361, "pretrainedResnet_quant": 29_860_944, "ad01_int8": 582_955}
# TFLM's arena_used_bytes for the same models (BENCHMARK.md; benchmarks/mlperf_tiny.py prints them).
TFLM_ARENA = {"kws_ref_model": 22_820, "pretrainedResnet_quant": 54_996, "ad01_int8": 2_580}
GOAL = 0.45


def _deploy(path, board, out, records=None):
    """(instructions, bit-exact, arena bytes) of one inference on the QEMU twin."""
    cm = mc.compile(path, board, records=records)
    d = cm.deploy(out, emulate=True)
    return d.report["instructions"], d.report["verified"], cm.memory.arena_bytes


def _tune(path, board, records: Path, trials: int, jobs: int, *, strategy="model", cost_model="ridge",
          batch=False, arena_budget="default"):
    """Tune into `records` (resuming it when it exists) up to `trials`; returns (TuneResult, workloads,
    wall seconds over every run that measured this file)."""
    clock = records.with_name(records.name + ".time.json")
    spent = json.loads(clock.read_text())["seconds"] if clock.is_file() and records.is_file() else 0.0
    cm = mc.compile(path, board)    # the default schedules (tune compiles them again, inside the clock)
    options = mc.TuneOptions(Budget(trials, None), jobs=jobs, resume=True, strategy=strategy, batch=batch,
                             cost_model=cost_model, arena_budget=arena_budget)
    start = time.monotonic()
    tuned = mc.tune(cm, records=records, link=mc.Link(emulate=True), options=options)
    result, workloads = tuned.result, tuned.workloads
    if result.trials:                 # this run measured something: its time counts
        spent += time.monotonic() - start
    if not result.interrupted:
        clock.write_text(json.dumps({"seconds": round(spent, 1), "trials": result.trials + result.resumed}))
    return result, workloads, spent


def _curve(records, workloads) -> list[int | None]:
    """Best-so-far kernel instructions of the model after each measured trial (None until every
    workload has a successful measurement)."""
    kernels = {w.key: len(w.nodes) for w in workloads}
    best: dict[str, int] = {}
    out = []
    for r in read_records(records)[0]:
        if r["status"] == "invalid" or r["workload"] not in kernels:
            continue
        if r["status"] == "ok":
            best[r["workload"]] = min(best.get(r["workload"], r["count"]), r["count"])
        out.append(sum(kernels[k] * c for k, c in best.items()) if len(best) == len(kernels) else None)
    return out


def _checkpoints(n: int) -> list[int]:
    """Trial counts to print a curve at: 1, 2, 5, 10, 20, 50, ... below n, and n."""
    marks, k = [], 1
    while k < n:
        marks += [m for m in (k, 2 * k, 5 * k) if m < n]
        k *= 10
    return sorted(set(marks + [n])) if n else []


def _fmt(v) -> str:
    return f"{v:,}" if v else "-"


def _plot(curves, path: Path, cost_model: str) -> None:
    try:
        import matplotlib
    except ImportError:
        raise UserError("--plot needs matplotlib", hint="pip install 'microcompile[plot]'") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(5 * len(curves), 3.6), squeeze=False)
    for ax, (name, model, rand) in zip(axes[0], curves):
        for ys, label in ((model, f"model search ({cost_model})"), (rand, "random search")):
            pts = [(t, y) for t, y in enumerate(ys, 1) if y]
            ax.plot([t for t, _ in pts], [y for _, y in pts], label=label, drawstyle="steps-post")
        ax.set_title(name)
        ax.set_xlabel("trials")
        ax.set_ylabel("kernel instructions (best so far)")
        ax.ticklabel_format(axis="y", style="plain", useOffset=False)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=Path, default=Path(__file__).resolve().parent.parent.parent / "shared" / "models")
    ap.add_argument("--board", default="mps2-an386")
    ap.add_argument("--only", nargs="+", metavar="NAME", choices=sorted(PEER), help="these models only")
    ap.add_argument("--trials", type=int, help="trials per model (default: --per-workload x its workloads)")
    ap.add_argument("--per-workload", type=int, default=10, help="trials per workload when --trials is not given "
                                                                  "(default 10)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="N of the --jobs N run (default: the "
                                                                          "CPU count)")
    ap.add_argument("--cost-model", choices=COST_MODELS, default="ridge", help="the model search's cost model")
    ap.add_argument("--batch", action="store_true", help="tune with --batch (a candidate of every workload per "
                                                         "firmware)")
    ap.add_argument("--records-dir", type=Path, help="keep the records (and resume them on the next run) here")
    ap.add_argument("--arena-budget", default="default", metavar="default|tflm|none|BYTES",
                    help="tune's arena budget: default (the default schedules' arena: tuning costs no RAM), tflm "
                         "(TFLM's arena for the model, BENCHMARK.md), none, or bytes")
    ap.add_argument("--no-curve", action="store_true", help="skip the random search and the curves")
    ap.add_argument("--plot", type=Path, help="draw the curves to this file (.png/.svg; needs matplotlib)")
    args = ap.parse_args(argv)
    try:
        check_cost_model(args.cost_model)
        if not args.models.is_dir():
            raise UserError(f"no models at {args.models}", hint="pass --models DIR")
        if (args.trials is not None and args.trials < 1) or args.per_workload < 1 or args.jobs < 1:
            raise UserError("--trials, --per-workload and --jobs must be positive")
        if args.plot and args.no_curve:
            raise UserError("--plot draws the curves that --no-curve skips", hint="drop one of them")
        return _run(args)
    except UserError as e:
        print(f"error: {e}" + (f"\nhint: {e.hint}" if getattr(e, "hint", None) else ""), file=sys.stderr)
        return 2


def _arena_budget(text: str, name: str):
    """--arena-budget for model `name`: tflm is TFLM's arena for it, default tune's default; the
    rest as `tune` reads it."""
    t = text.strip().lower()
    if t == "tflm":
        return TFLM_ARENA[name]
    return parse_arena_budget(None if t == "default" else text)


def _run(args) -> int:
    header = (f"{'model':<24} {'default':>11} {'ratio':>6} {'tuned':>11} {'ratio':>6} {'<=0.45':>6} {'trials':>6} "
              f"{'jobs 1 (s)':>10} {f'jobs {args.jobs} (s)':>11} {'bit-exact':>9} {'arena default/tuned':>19}")
    print(f"board {args.board} (QEMU), cost model {args.cost_model}, seed 0"
          + (", batch" if args.batch else "") + f", arena budget {args.arena_budget}", flush=True)
    print(header)
    print("-" * len(header), flush=True)
    all_ok, curves = True, []
    with tempfile.TemporaryDirectory(prefix="tuning-bench-") as tmp:
        keep = args.records_dir or Path(tmp) / "records"
        keep.mkdir(parents=True, exist_ok=True)
        for name, peer in PEER.items():
            path = args.models / f"{name}.tflite"
            if (args.only and name not in args.only) or not path.is_file():
                continue
            default, ok0, arena0 = _deploy(path, args.board, Path(tmp) / name / "default")
            trials = args.trials
            if trials is None:
                _, workloads = lowered_workloads(path, mc.board(args.board))
                trials = args.per_workload * len(workloads)
            common = dict(cost_model=args.cost_model, batch=args.batch,
                          arena_budget=_arena_budget(args.arena_budget, name))
            r1 = keep / f"{name}.jobs1.jsonl"
            rn = keep / f"{name}.jobs{args.jobs}.jsonl"
            res1, workloads, t1 = _tune(path, args.board, r1, trials, 1, **common)
            if args.jobs > 1:
                resn, _, tn = _tune(path, args.board, rn, trials, args.jobs, **common)
            else:
                rn, resn, tn = r1, res1, t1
            tuned, ok, arena = _deploy(path, args.board, Path(tmp) / name / "tuned", records=rn)
            all_ok &= bool(ok and ok0)
            measured = resn.trials + resn.resumed
            print(f"{name:<24} {default:>11,} {default / peer:>6.3f} {tuned:>11,} {tuned / peer:>6.3f} "
                  f"{'yes' if tuned <= GOAL * peer else 'NO':>6} {measured:>6} {t1:>10.1f} {tn:>11.1f} "
                  f"{'yes' if ok and ok0 else 'NO':>9} {f'{arena0:,} / {arena:,}':>19}", flush=True)
            if not args.no_curve:
                rr = keep / f"{name}.random.jsonl"
                _tune(path, args.board, rr, trials, 1, strategy="random", **{**common, "cost_model": "ridge"})
                curves.append((name, _curve(r1, workloads), _curve(rr, workloads)))
    for name, model, rand in curves:
        print(f"\nbest-so-far kernel instructions of {name} (sum over workloads of kernels x best count; "
              f"'-' until every workload has one)")
        print(f"{'trials':>6} {'model search':>13} {'random search':>13} {'model/random':>12}")
        for t in _checkpoints(min(len(model), len(rand))):
            m, r = model[t - 1], rand[t - 1]
            print(f"{t:>6} {_fmt(m):>13} {_fmt(r):>13} {(f'{m / r:.3f}' if m and r else '-'):>12}")
    if args.plot and curves:
        _plot(curves, args.plot, args.cost_model)
        print(f"\ncurves drawn to {args.plot}")
    return 0 if all_ok else 1


if __name__ == "__main__":
    sys.exit(main())
