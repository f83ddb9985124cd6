"""The conv2d placement knobs (pointwise, pad_split, cache_read_at, cache_write_at) measured per
workload on the QEMU twin: instructions per kernel and scratch bytes of each value against the
default point, every firmware checked byte for byte (tune.run.Measurer: outputs and every tuned
kernel's tensor equal the reference interpreter's).

    PYTHONPATH=. python benchmarks/conv_knobs.py [--models DIR] [--board mps2-an386] [--only NAME ...]

For each conv2d workload of each int8 model, each variant is the default point with the named
knobs changed (e.g. pointwise=direct with wide_weights=0, compared with wide_weights=0 alone).
One firmware per variant tunes every conv workload the variant applies to at once; a variant a
workload rejects prints the reason. Prints one row per workload and variant, then the model's
arena with each variant (compile only); exits 1 on a wrong answer. Counts are deterministic (QEMU instruction counts); no wall time is measured.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import microcompile as mc
from microcompile.compiler import CompileOptions, plan_model
from microcompile.deploy import Link
from microcompile.schedule import InvalidConfig, apply_config
from microcompile.autotune.run import Measurer, lowered_workloads

MODELS = ("kws_ref_model", "pretrainedResnet_quant")
# (name, knob changes against the default point, the variant it is compared with)
VARIANTS = (
    ("default", {}, None),
    ("int8 weights", {"wide_weights": 0}, "default"),
    ("pointwise=direct", {"wide_weights": 0, "pointwise": "direct"}, "int8 weights"),
    ("int8 weights, tile", {"wide_weights": 0, "epilogue": "tile"}, "int8 weights"),
    ("pointwise=direct, tile", {"wide_weights": 0, "pointwise": "direct", "epilogue": "tile"}, "int8 weights, tile"),
    ("pad_split=rows", {"pad_split": "rows"}, "default"),
    ("cache_read_at=pixel", {"cache_read_at": "pixel"}, "default"),
    ("cache_read_at=plane", {"cache_read_at": "plane"}, "default"),
    ("epilogue=tile", {"epilogue": "tile"}, "default"),
    ("tile, cache_write_at=pixel", {"epilogue": "tile", "cache_write_at": "pixel"}, "epilogue=tile"),
)


def measure(model: Path, board, work: Path) -> tuple[list, int, dict]:
    """Rows (workload, variant, count | reason, scratch, base variant), the wrong answers, and
    the model's arena bytes per variant (every conv workload it applies to at that point)."""
    _, workloads = lowered_workloads(model, board)
    convs = [w for w in workloads if w.family == "conv2d"]
    cm = mc.compile(model, board)      # the default schedules: what each candidate is measured against
    meter = Measurer(cm.artifact, work, Link(emulate=True, timeout=120.0))
    rows, wrong, arena = [], 0, {}
    for name, change, base in VARIANTS:
        items, skipped = [], []
        for w in convs:
            config = {**w.default, **change}
            try:
                func, trace = apply_config(w.func, board.target, config)
            except InvalidConfig as e:
                skipped.append((w, str(e)))
                continue
            items.append((w, config, trace, func.scratch_bytes))
        if items:
            arena[name] = plan_model(model, board, CompileOptions(tuned={w.key: t for w, _, t, _ in items})
                                     ).plan.arena_bytes
        outcomes = meter.batch(0, [(w, c, t) for w, c, t, _ in items]) if items else []
        # a firmware that failed as a whole: each item alone
        outcomes = [meter(0, w, c, t) if o.status == "retry" else o for (w, c, t, _), o in zip(items, outcomes)]
        for (w, _, _, scratch), out in zip(items, outcomes):
            if out.status != "ok":
                wrong += out.error.startswith("wrong answer")
                rows.append((w, name, f"failed: {out.error}", scratch, base))
            else:
                rows.append((w, name, out.count, scratch, base))
        rows += [(w, name, f"rejected: {why}", None, base) for w, why in skipped]
    return rows, wrong, arena


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=str(Path(__file__).resolve().parents[2] / "shared" / "models"))
    ap.add_argument("--board", default="mps2-an386")
    ap.add_argument("--only", nargs="*", default=list(MODELS))
    args = ap.parse_args(argv)
    board = mc.board(args.board)
    wrong = 0
    for m in args.only:
        path = Path(args.models) / f"{m}.tflite"
        if not path.exists():
            print(f"{m}: not found in {args.models}")
            continue
        with tempfile.TemporaryDirectory(prefix="conv-knobs-") as tmp:
            rows, bad, arena = measure(path, board, Path(tmp))
        wrong += bad
        print(f"\n## {m} on {args.board} (instructions per kernel; scratch bytes)")
        by = {(w.key, name): (count, scratch) for w, name, count, scratch, _ in rows}
        for w, name, count, scratch, base in rows:
            ref = by.get((w.key, base), (None, None))[0] if base else None
            delta = (f" ({(count - ref) / ref:+.1%} vs {base})" if isinstance(count, int) and isinstance(ref, int)
                     else "")
            shape = w.key.split(":")[1]
            print(f"{shape} x{len(w.nodes)} | {name} | {count}{delta} | scratch {scratch}")
        print("arena bytes: " + ", ".join(f"{name} {b}" for name, b in arena.items()))
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
