"""The tuning loop: propose a point per workload, reject invalid ones before code generation,
measure the valid ones (bit-exact check first) on `jobs` devices at once, write a record per
outcome, and stop at the trial or time budget.

The measuring itself is a function given by the caller (autotune/run.py wires the
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
from .records import Environment, Outcome, record
from .search import make_search


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


@dataclass(frozen=True)
class Plan:
    """What a tuning run searches, where, and for how long."""

    target: object                # the core's target (what the schedules are made for)
    env: Environment              # written into every record
    budget: Budget
    jobs: int = 1                 # slots: devices measuring at once
    strategy: str = "model"       # search.make_search
    cost_model: str = "ridge"     # the model search's cost model (search.COST_MODELS)
    seed: int = 0
    batch: bool = False           # one firmware measures a candidate of every workload at once
    model: str = ""               # the model's name, written into every record
    scratch_budget: int | None = None
    # schedule(func, target, config, scratch_budget=...) -> (PrimFunc, Trace) or InvalidConfig:
    # schedule.apply_config, or a wrapper (the tests add a knob that breaks candidates).
    schedule: Callable = apply_config


def tune(workloads, plan: Plan, measure: Callable, writer, *, previous: list[dict] | None = None,
         executor=None, bar=None, note: Callable[[str], None] | None = None) -> TuneResult:
    """Tune `workloads` (autotune.workload.Workload) as `plan` says.

    `measure(slot, workload, config, trace)` -> Outcome; with `plan.batch`, `measure(slot, items)`
    with items [(workload, config, trace)] -> [Outcome], where an Outcome "retry" (the firmware
    failed and the item cannot be told apart from the others) measures that item again on its own.
    `writer.write(record)` receives a record per outcome. `previous`: records of an earlier run
    (--resume) for this environment: their points are not tried again and their measurements
    count toward the budget. `executor`: where measurements run, an object with
    submit(fn, *args) -> concurrent.futures.Future and shutdown(wait, cancel_futures) (default:
    `plan.jobs` local threads; autotune/ray_executor.py: Ray tasks). `bar`: a tqdm-like object
    (update, set_postfix_str). `note(text)` hears of a slot dropped from the pool (the notes are
    also in TuneResult.notes)."""
    return _Run(workloads, plan, measure, writer, note).run(previous or [], executor, bar)


class _Run:
    """One tuning run's state: the searches, what is in flight, what is recorded."""

    def __init__(self, workloads, plan: Plan, measure: Callable, writer, note):
        self.workloads, self.plan, self.measure, self.writer, self.note = workloads, plan, measure, writer, note
        self.start = time.monotonic()
        budget = plan.budget
        self.deadline = self.start + budget.minutes * 60 if budget.minutes is not None else None
        self.stats = {w.key: WorkloadStats(w.key, list(w.nodes)) for w in workloads}
        self.searches = {w.key: make_search(plan.strategy, w.space, w.default, plan.seed + i,
                                            cost_model=plan.cost_model, workload_features=_workload_features(w))
                         for i, w in enumerate(workloads)}
        self.recorded = 0                       # measured trials, resumed ones included
        self.pending = {w.key: 0 for w in workloads}    # items in flight per workload
        self.solo: list = []                    # items to measure again on their own
        self.requeued: list[list] = []          # items of a lost slot, to measure on another
        self.notes: list[str] = []
        self.live = plan.jobs                   # slots not lost
        self.running: dict[Future, tuple] = {}  # future -> (items, slot)
        self.slots: queue.SimpleQueue = queue.SimpleQueue()
        self.interrupted = False
        self.bar = None

    def run(self, previous: list[dict], executor, bar) -> TuneResult:
        self.bar = bar
        resumed = self._resume(previous)
        self.recorded = resumed
        for s in range(self.plan.jobs):
            self.slots.put(s)
        pool = executor if executor is not None else \
            ThreadPoolExecutor(max_workers=self.plan.jobs, thread_name_prefix="tune-job")
        try:
            self._loop(pool)
        except KeyboardInterrupt:
            self._interrupt()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        if self.requeued and not self.interrupted:
            self._tell(f"{sum(map(len, self.requeued))} candidate(s) not measured: every job's device was lost")
        return TuneResult(list(self.stats.values()), self.recorded - resumed, resumed,
                          time.monotonic() - self.start, self.interrupted, self.notes, devices_lost=self.live == 0)

    def _resume(self, previous: list[dict]) -> int:
        by_key = {w.key: w for w in self.workloads}
        resumed = 0
        for rec in previous:
            key = rec.get("workload")
            if key not in by_key or not isinstance(rec.get("config"), dict):
                continue
            _note(self.stats[key], self.searches[key], rec["config"], rec["status"], rec.get("count"), by_key[key])
            resumed += rec["status"] != "invalid"
        return resumed

    def _loop(self, pool) -> None:
        while True:
            while len(self.running) < self.live and (self.requeued or self.solo or self._room() > 0):
                items = self._next_items()
                if not items:
                    break
                for w, _, _ in items:
                    self.pending[w.key] += 1
                slot = self.slots.get()
                self.running[pool.submit(self._measure, slot, items)] = (items, slot)
            if not self.running:
                return
            done, _ = wait(list(self.running), return_when=FIRST_COMPLETED)
            for fut in done:
                self._finish(fut)

    def _interrupt(self) -> None:
        self.interrupted = True
        # The running measurements end within their device timeout; each stops its QEMU.
        # Those that finish are recorded: no measurement is lost.
        for fut in list(self.running):
            if fut.cancel():
                items, slot = self.running.pop(fut)
                self.slots.put(slot)
                for w, _, _ in items:
                    self.pending[w.key] -= 1
        for fut in list(self.running):
            wait([fut])
            self._finish(fut)

    def _tell(self, text: str) -> None:
        self.notes.append(text)
        if self.note is not None:
            self.note(text)

    def _room(self) -> int:
        """Trials the budget still allows beyond those recorded and in flight."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return 0
        if self.plan.budget.trials is None:
            return 1 << 30
        return self.plan.budget.trials - self.recorded - sum(self.pending.values())

    def _next_candidate(self, exclude: set):
        """(workload, config, trace) of the next valid point of a workload not in `exclude`,
        writing invalid ones as records."""
        stats, plan, workloads = self.stats, self.plan, self.workloads
        order = sorted(workloads, key=lambda w: (stats[w.key].trials + self.pending[w.key], workloads.index(w)))
        for w in order:
            if w.key in exclude:
                continue
            search = self.searches[w.key]
            if hasattr(search, "hint"):
                search.hint([stats[o.key].best_config for o in workloads if o is not w and o.family == w.family
                             and stats[o.key].best_config is not None])
            while True:
                config = search.propose()
                if config is None:
                    break
                try:
                    _, trace = plan.schedule(w.func, plan.target, config, scratch_budget=plan.scratch_budget)
                except InvalidConfig as e:
                    self.writer.write(record(plan.env, w, config, None, Outcome("invalid", error=str(e)),
                                             model=plan.model, trial=self.recorded))
                    _note(stats[w.key], search, config, "invalid", None, w)
                    continue
                search.mark_seen(config)
                return w, config, trace
        return None

    def _next_items(self) -> list:
        if self.requeued:
            return self.requeued.pop(0)
        if self.solo:
            return [self.solo.pop(0)]
        items = []
        while self._room() > len(items) and (self.plan.batch or not items):
            cand = self._next_candidate({w.key for w, _, _ in items})
            if cand is None:
                break
            items.append(cand)
        return items

    def _measure(self, slot, items):
        return self.measure(slot, items) if self.plan.batch else [self.measure(slot, *items[0])]

    def _finish(self, fut: Future) -> None:
        items, slot = self.running.pop(fut)
        for w, _, _ in items:
            self.pending[w.key] -= 1
        try:
            outs = list(fut.result())
            assert len(outs) == len(items), f"{len(outs)} outcomes for {len(items)} candidates"
        except Exception as e:                 # a bug in the measuring: recorded, the search goes on
            outs = [Outcome("failed", error=f"internal error: {type(e).__name__}: {e}")] * len(items)
        lost = next((o for o in outs if o.status == "lost"), None)
        if lost is not None:                   # the device is gone, not the candidates' fault
            self.live -= 1
            self._tell(f"job {slot} dropped from the pool: {lost.error}; "
                       + (f"its {len(items)} candidate(s) go to the other {self.live} job(s)" if self.live
                          else "no job is left"))
            if not self.interrupted:
                self.requeued.append(list(items))
            return
        self.slots.put(slot)
        for (w, config, trace), out in zip(items, outs):
            if out.status == "retry" and len(items) > 1 and not self.interrupted:
                self.solo.append((w, config, trace))
                continue
            if out.status == "retry":
                out = Outcome("failed", error=out.error)
            if self.interrupted and out.status != "ok":
                continue      # Ctrl-C also reaches make and gcc: a failure now says nothing of the point
            self.recorded += 1
            self.writer.write(record(self.plan.env, w, config, trace, out, model=self.plan.model,
                                     trial=self.recorded))
            _note(self.stats[w.key], self.searches[w.key], config, out.status, out.count, w)
            if self.bar is not None:
                self.bar.update(1)
                self.bar.set_postfix_str(_postfix(self.stats.values()))


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
