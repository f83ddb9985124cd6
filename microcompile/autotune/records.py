"""Tuning records: one JSON object per line, one line per measurement, written and flushed
(and fsync'ed) as each measurement ends, so Ctrl-C or a crash loses none.

    {"v": 1, "workload": "conv2d:...", "family": "conv2d", "op": "conv2d", "config": {...},
     "trace": [{"primitive": ..., "args": [...]}, ...], "status": "ok" | "invalid" | "failed",
     "count": 655720 | null, "unit": "instructions" | "cycles" | "estimated_cycles" | null, "error": null | "reason",
     "board": "mps2-an386", "core": "cortex-m4f", "kernel_set": "dsp", "cflags": [...],
     "toolchain": "arm-none-eabi-gcc 12.2.1", "microcompile": "0.1.0", "schedule_version": 1,
     "model": "kws_ref_model",
     "nodes": ["conv_2d_2", ...], "default": true, "trial": 3, "time": "2026-12-01T18:00:00Z"}

`count` is the mean per kernel of the workload's kernels in one inference. `invalid`: the
knob choice was rejected before code generation (`error` says why); `failed`: the build,
the device (a crash, a hang) or the bit-exact check failed (`error` says which).

`select` picks, for a target core and toolchain, the fastest `ok` record per workload among
the non-default points (a record of the default point adds nothing, and its trace would replay
an older default than today's); records of another core, toolchain version or schedule
version (schedule/version.py: the defaults and knob meanings a record was measured against;
a record without one is version 0) are ignored with a note, never applied.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..escape import json_text, say
from ..errors import UserError, shown
from ..project import toolchain_version
from ..schedule import Trace, kernel_set
from ..schedule.version import SCHEDULE_VERSION
from ..compiler.patches import PATCH_BUDGET, PATCH_FAMILY

RECORD_VERSION = 1
STATUSES = ("ok", "invalid", "failed")


@dataclass(frozen=True)
class Environment:
    """What a measurement depends on besides the schedule: records from another core or
    toolchain version are not comparable."""

    board: str
    core: str
    kernel_set: str
    cflags: tuple[str, ...]
    toolchain: str
    microcompile: str = __version__
    schedule_version: int = SCHEDULE_VERSION


@dataclass(frozen=True)
class Outcome:
    """What measuring one candidate gave."""

    status: str                   # "ok", "failed", "invalid" (refused before code generation),
                                  # "retry" (batch: measure this one on its own) or
                                  # "lost" (the slot's device is gone: measure it elsewhere)
    count: int | None = None      # per kernel of the workload, in `unit`
    unit: str | None = None
    error: str | None = None


def record(env: Environment, workload, config: dict, trace: Trace | None, outcome: Outcome, *,
           model: str = "", trial: int = 0) -> dict:
    assert outcome.status in STATUSES, outcome.status
    return {"v": RECORD_VERSION, "workload": workload.key, "family": workload.family, "op": workload.op,
            "config": dict(config), "trace": trace.to_json() if trace is not None else None,
            "status": outcome.status, "count": outcome.count, "unit": outcome.unit, "error": outcome.error,
            "board": env.board, "core": env.core, "kernel_set": env.kernel_set, "cflags": list(env.cflags),
            "toolchain": env.toolchain, "microcompile": env.microcompile,
            "schedule_version": env.schedule_version, "model": model,
            "nodes": list(workload.nodes), "default": config == workload.default, "trial": trial,
            "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


class RecordWriter:
    """Appends records to a JSON-lines file, one flushed and fsync'ed line each."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # O_NOFOLLOW: never append through a symlink (tune_model refused one before any work).
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666)
        except OSError as e:
            raise UserError(f"cannot write records file {self.path}: {e.strerror or e}") from None
        self._f = os.fdopen(fd, "a", encoding="utf-8")

    def write(self, rec: dict) -> None:
        self._f.write(json_text(rec, sort_keys=True) + "\n")
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read_records(path: str | Path) -> tuple[list[dict], list[str]]:
    """The records of `path` and notes on lines skipped (a line cut short by a crash, a line that
    is not a record). A missing or unreadable file is a UserError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UserError(f"records file {path} does not exist",
                        hint="run `microcompile tune ... --records FILE` first, or check the path") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UserError(f"cannot read records file {path}: {e}") from None
    out, notes = [], []
    lines = text.splitlines()
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError:
            last = i == len(lines) and not text.endswith("\n")
            notes.append(f"{path}:{i}: " + ("the last line is cut short (an interrupted write); skipped" if last
                                            else "not JSON; skipped"))
            continue
        if not isinstance(rec, dict) or rec.get("v") != RECORD_VERSION or "workload" not in rec \
                or rec.get("status") not in STATUSES:
            notes.append(f"{path}:{i}: not a version-{RECORD_VERSION} tuning record; skipped")
            continue
        out.append(rec)
    return out, notes


@dataclass
class Selection:
    """The best record per workload for one environment, and what was left out and why."""

    best: dict[str, dict] = field(default_factory=dict)      # workload key -> record
    notes: list[str] = field(default_factory=list)
    applicable: int = 0          # records measured on this environment (core, toolchain, version)
    slower: int = 0              # workloads whose records are none faster than their default

    def traces(self) -> dict[str, Trace]:
        return {k: Trace.from_json(r["trace"]) for k, r in self.best.items()}


def compatible(rec: dict, env: Environment) -> str | None:
    """None when `rec` applies to `env`, else why not."""
    if rec.get("core") != env.core or rec.get("kernel_set") != env.kernel_set:
        return f"core {rec.get('core')}/{rec.get('kernel_set')}"
    if rec.get("toolchain") != env.toolchain:
        return f"toolchain {rec.get('toolchain')}"
    version = rec.get("schedule_version", 0)
    if version != env.schedule_version:
        return f"schedule version {version}"
    return None


def pick_patch(records: list[dict]) -> dict | None:
    """Among one graph's patch-choice records (autotune/patch_search.py), the one `tune` and
    `--records` take: the smallest arena within PATCH_BUDGET of the count without a stage
    ("off"), the fewest counts on a tie; None without a measured "off". Counts in different
    units are not compared: the best-ranked unit measured (as `select`) decides."""
    ok = [r for r in records if r.get("status") == "ok" and isinstance(r.get("count"), int)
          and isinstance(r.get("arena"), int) and isinstance(r.get("config"), dict)]
    if not ok:
        return None
    unit = min((_UNIT_RANK.get(r.get("unit"), 2), r.get("unit")) for r in ok)[1]
    ok = [r for r in ok if r.get("unit") == unit]
    off = [r for r in ok if r["config"].get("patch") == "off"]
    if not off:
        return None
    limit = min(r["count"] for r in off) * (1 + PATCH_BUDGET)
    return min((r for r in ok if r["count"] <= limit), key=lambda r: (r["arena"], r["count"]))


_UNIT_RANK = {"cycles": 0, "estimated_cycles": 1}


def select(records: list[dict], env: Environment) -> Selection:
    """The fastest valid record per workload measured on env's core with env's toolchain, when it
    beats the default point's record (a record of the default point itself is never taken:
    today's default schedule serves it, and its trace could replay an older default). Counts in
    different units are not compared: cycles (a real board) win over estimated cycles (QEMU and
    the cycle model), which win over instructions (QEMU)."""
    sel = Selection()
    ignored: dict[str, int] = {}
    defaults: dict[str, tuple] = {}

    patches: dict[str, list[dict]] = {}

    def rank(rec):
        return (_UNIT_RANK.get(rec.get("unit"), 2), rec["count"])
    for rec in records:
        why = compatible(rec, env)
        if why is not None:
            ignored[why] = ignored.get(why, 0) + 1
            continue
        sel.applicable += 1
        if rec.get("family") == PATCH_FAMILY:       # chosen by the arena, below, not by speed
            patches.setdefault(rec["workload"], []).append(rec)
            continue
        if rec["status"] != "ok" or not isinstance(rec.get("count"), int) or not rec.get("trace"):
            continue
        key = rec["workload"]
        if rec.get("default"):
            defaults[key] = min(defaults.get(key, rank(rec)), rank(rec))
            continue
        best = sel.best.get(key)
        if best is None or rank(rec) < rank(best):
            sel.best[key] = rec
    for key in [k for k, rec in sel.best.items() if k in defaults and rank(rec) >= defaults[k]]:
        del sel.best[key]          # no faster than the default schedule
        sel.slower += 1
    for key, recs in patches.items():
        best = pick_patch(recs)
        if best is not None and best.get("trace"):
            sel.best[key] = best
    for why, n in sorted(ignored.items()):
        sel.notes.append(f"{n} record(s) from {why} ignored (this build: {env.core}/{env.kernel_set}, "
                         f"{env.toolchain}, schedule version {env.schedule_version})")
    return sel


def environment(board) -> Environment:
    """The environment of measurements on `board` (a target.Board) with the installed toolchain."""
    t = board.target
    return Environment(board.name, t.core, kernel_set(t), tuple(t.cflags), toolchain_version(board))


def load_selection(path, board, progress=say) -> Selection:
    """The best valid record per workload of the records file `path` for `board`; reports the
    notes (lines skipped, records of another core or toolchain ignored) through `progress`."""
    records, notes = read_records(path)
    sel = select(records, environment(board))
    sel.notes[:0] = notes
    for n in sel.notes:
        progress(f"[records] note: {n}")
    return sel


def tuned_summary(compiled, sel: Selection) -> str:
    """How many kernels of a compiled model replay a record, e.g. "3 of 12 kernels tuned ..."."""
    workloads = len(set(compiled.tuned.values()))
    slower = f", {sel.slower} no faster than their default" if sel.slower else ""
    patch = compiled.patch.mode if compiled.patch is not None and compiled.patch.mode.endswith("(tuned)") else None
    return (f"{len(compiled.tuned)} of {len(compiled.kernels)} kernels tuned ({workloads} workload(s) with a "
            f"record faster than the default; the file holds {sel.applicable} record(s) for this core and "
            f"toolchain, the best of {len(sel.best)} workload(s) used{slower}), the others keep the default "
            "schedule" + (f"; patch stage {shown(patch, 200)} from the records" if patch else ""))
