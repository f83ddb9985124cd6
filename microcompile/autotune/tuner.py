"""The tuning loop: propose a point per workload, reject invalid ones before code generation,
measure the valid ones (bit-exact check first) on `jobs` devices at once, write a record per
outcome, and stop at the trial or time budget.

The measuring itself is a function given by the caller (microcompile/tuning.py wires the
build and the host agent), so this module knows no device:

    measure(slot, workload, config, trace) -> Outcome
    measure(slot, [(workload, config, trace), ...]) -> [Outcome]      (batch mode)

`slot` (0..jobs-1) names the device (QEMU instance, board) and build directory a job owns.
An Outcome "lost" says the slot's device is gone (a board whose probe no longer flashes, whose
serial port vanished): the slot is dropped from the pool with a note, its candidates go back
in the queue for the other slots, and the run stops (with a note) when no slot is left.
Trials are spread over the workloads: the next trial goes to the workload with the fewest
so far, so every workload gets its default measured first and then its share.
"""

from __future__ import annotations

import math
import queue
import time
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Callable

from ..schedule import InvalidConfig, apply_config
from .records import Environment, record
from .search import make_search


@dataclass(frozen=True)
class Outcome:
    status: str                   # "ok", "failed", "retry" (batch: measure this one on its own) or
                                  # "lost" (the slot's device is gone: measure it elsewhere)
    count: int | None = None      # per kernel of the workload, in `unit`
    unit: str | None = None
    error: str | None = None


@dataclass
class WorkloadStats:
    key: str
    nodes: list
    trials: int = 0               # measured (ok or failed)
    failures: int = 0
    invalid: int = 0
    default_count: int | None = None
    best_count: int | None = None
    best_config: dict | None = None

    def short(self) -> str:
        return f"{self.key.split(':')[0]}x{len(self.nodes)}"


@dataclass
class Budget:
    trials: int | None = None     # measured candidates in all (records resumed included)
    minutes: float | None = None  # wall time of this run

    def __post_init__(self):
        if self.trials is None and self.minutes is None:
            raise ValueError("a budget needs trials or minutes")


@dataclass
class TuneResult:
    stats: list[WorkloadStats]
    trials: int                   # measured in this run
    resumed: int                  # measured before (records read with --resume)
    seconds: float
    interrupted: bool = False
    notes: list[str] = field(default_factory=list)
    devices_lost: bool = False    # every slot's device was lost before the budget was spent


def tune(workloads, target, env: Environment, measure: Callable, writer, budget: Budget, *, jobs: int = 1,
         strategy: str = "model", seed: int = 0, model: str = "", previous: list[dict] | None = None,
         scratch_budget: int | None = None, bar=None, schedule: Callable = apply_config,
         executor=None, batch: bool = False, cost_model: str = "ridge",
         note: Callable[[str], None] | None = None) -> TuneResult:
    """Tune `workloads` (tune.workload.Workload) on `jobs` slots. `previous`: records of an
    earlier run (--resume) for this environment: their points are not tried again and their
    measurements count toward the budget. `bar`: a tqdm-like object (update, set_postfix_str).
    `schedule(func, target, config, scratch_budget=...)` -> (PrimFunc, Trace) or InvalidConfig:
    schedule.apply_config, or a wrapper (the tests add a knob that breaks candidates).
    `executor`: where measurements run, an object with submit(fn, *args) -> concurrent.futures.Future
    and shutdown(wait, cancel_futures) (default: `jobs` local threads; tune/ray_executor.py: Ray tasks).
    `batch`: one firmware measures a candidate of every workload at once, `measure(slot, items)`
    with items [(workload, config, trace)] -> [Outcome]; an Outcome "retry" (the firmware failed
    and the item cannot be told apart from the others) measures that item again on its own.
    Otherwise `measure(slot, workload, config, trace)` -> Outcome.
    `cost_model`: the model search's cost model (search.COST_MODELS). `note(text)` hears of a slot
    dropped from the pool (the notes are also in TuneResult.notes)."""
    start = time.monotonic()
    deadline = start + budget.minutes * 60 if budget.minutes is not None else None
    stats = {w.key: WorkloadStats(w.key, list(w.nodes)) for w in workloads}
    searches = {w.key: make_search(strategy, w.space, w.default, seed + i, cost_model=cost_model,
                                   workload_features=_workload_features(w))
                for i, w in enumerate(workloads)}
    by_key = {w.key: w for w in workloads}
    resumed = 0
    for rec in previous or []:
        key = rec.get("workload")
        if key not in by_key or not isinstance(rec.get("config"), dict):
            continue
        _note(stats[key], searches[key], rec["config"], rec["status"], rec.get("count"), by_key[key])
        resumed += rec["status"] != "invalid"
    recorded = resumed                          # measured trials, resumed ones included
    pending: dict[str, int] = {w.key: 0 for w in workloads}     # items in flight per workload
    solo: list = []                             # items to measure again on their own
    requeued: list[list] = []                   # items of a lost slot, to measure on another
    notes: list[str] = []
    live = jobs                                 # slots not lost

    def tell(text: str) -> None:
        notes.append(text)
        if note is not None:
            note(text)

    def room() -> int:
        """Trials the budget still allows beyond those recorded and in flight."""
        if deadline is not None and time.monotonic() >= deadline:
            return 0
        if budget.trials is None:
            return 1 << 30
        return budget.trials - recorded - sum(pending.values())

    def next_candidate(exclude: set):
        """(workload, config, trace) of the next valid point of a workload not in `exclude`,
        writing invalid ones as records."""
        order = sorted(workloads, key=lambda w: (stats[w.key].trials + pending[w.key], workloads.index(w)))
        for w in order:
            if w.key in exclude:
                continue
            search = searches[w.key]
            if hasattr(search, "hint"):
                search.hint([stats[o.key].best_config for o in workloads if o is not w and o.family == w.family
                             and stats[o.key].best_config is not None])
            while True:
                config = search.propose()
                if config is None:
                    break
                try:
                    _, trace = schedule(w.func, target, config, scratch_budget=scratch_budget)
                except InvalidConfig as e:
                    writer.write(record(env, w, config, None, status="invalid", error=str(e), model=model,
                                        trial=recorded))
                    _note(stats[w.key], search, config, "invalid", None, w)
                    continue
                search.mark_seen(config)
                return w, config, trace
        return None

    def next_items() -> list:
        if requeued:
            return requeued.pop(0)
        if solo:
            return [solo.pop(0)]
        items = []
        while room() > len(items) and (batch or not items):
            cand = next_candidate({w.key for w, _, _ in items})
            if cand is None:
                break
            items.append(cand)
        return items

    def run(slot, items):
        return measure(slot, items) if batch else [measure(slot, *items[0])]

    slots: queue.SimpleQueue = queue.SimpleQueue()
    for s in range(jobs):
        slots.put(s)
    running: dict[Future, tuple] = {}
    interrupted = False
    pool = executor if executor is not None else ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="tune-job")

    def finish(fut: Future) -> None:
        nonlocal recorded, live
        items, slot = running.pop(fut)
        for w, _, _ in items:
            pending[w.key] -= 1
        try:
            outs = list(fut.result())
            assert len(outs) == len(items), f"{len(outs)} outcomes for {len(items)} candidates"
        except Exception as e:                 # a bug in the measuring: recorded, the search goes on
            outs = [Outcome("failed", error=f"internal error: {type(e).__name__}: {e}")] * len(items)
        lost = next((o for o in outs if o.status == "lost"), None)
        if lost is not None:                   # the device is gone, not the candidates' fault
            live -= 1
            tell(f"job {slot} dropped from the pool: {lost.error}; "
                 + (f"its {len(items)} candidate(s) go to the other {live} job(s)" if live else "no job is left"))
            if not interrupted:
                requeued.append(list(items))
            return
        slots.put(slot)
        for (w, config, trace), out in zip(items, outs):
            if out.status == "retry" and len(items) > 1 and not interrupted:
                solo.append((w, config, trace))
                continue
            if out.status == "retry":
                out = Outcome("failed", error=out.error)
            if interrupted and out.status != "ok":
                continue      # Ctrl-C also reaches make and gcc: a failure now says nothing of the point
            recorded += 1
            writer.write(record(env, w, config, trace, status=out.status, count=out.count, unit=out.unit,
                                error=out.error, model=model, trial=recorded))
            _note(stats[w.key], searches[w.key], config, out.status, out.count, w)
            if bar is not None:
                bar.update(1)
                bar.set_postfix_str(_postfix(stats.values()))

    try:
        while True:
            while len(running) < live and (requeued or solo or room() > 0):
                items = next_items()
                if not items:
                    break
                for w, _, _ in items:
                    pending[w.key] += 1
                slot = slots.get()
                fut = pool.submit(run, slot, items)
                running[fut] = (items, slot)
            if not running:
                break
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for fut in done:
                finish(fut)
    except KeyboardInterrupt:
        interrupted = True
        # The running measurements end within their device timeout; each stops its QEMU.
        # Those that finish are recorded: no measurement is lost.
        for fut in list(running):
            if fut.cancel():
                items, slot = running.pop(fut)
                slots.put(slot)
                for w, _, _ in items:
                    pending[w.key] -= 1
        for fut in list(running):
            wait([fut])
            finish(fut)
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    if requeued and not interrupted:
        tell(f"{sum(map(len, requeued))} candidate(s) not measured: every job's device was lost")
    return TuneResult(list(stats.values()), recorded - resumed, resumed, time.monotonic() - start, interrupted,
                      notes, devices_lost=live == 0)


def _workload_features(w) -> tuple:
    """What the cost model knows of a workload besides its knobs: log2 of its MACs, its kernels."""
    return (math.log2(1 + getattr(w, "macs", 0)), len(w.nodes))


def _note(st: WorkloadStats, search, config: dict, status: str, count, w) -> None:
    search.tell(config, count if status == "ok" else None)
    if status == "invalid":
        st.invalid += 1
        return
    st.trials += 1
    if status != "ok":
        st.failures += 1
        return
    if config == w.default and st.default_count is None:
        st.default_count = count
    if st.best_count is None or count < st.best_count:
        st.best_count, st.best_config = count, dict(config)


def _postfix(stats) -> str:
    failures = sum(s.failures for s in stats)
    best = " ".join(f"{s.short()}:{s.best_count:,}" for s in stats if s.best_count is not None)
    return f"failures {failures} | best {best}"
