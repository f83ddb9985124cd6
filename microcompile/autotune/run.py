"""Tuning a model: its workloads, measured on the device by building and running candidates
(what `microcompile tune` and `microcompile.autotune` call).

    tune_model:  model -> workloads -> tuner.tune(measure=Measurer on N slots) -> records
    (compile --records reads them back: records.load_selection, replayed by the compiler
    through CompileOptions.tuned)

A candidate is measured in a firmware of the whole model in which every kernel of its
workload replays the candidate's trace and the others keep their default schedule: the agent
build runs on the QEMU twin (a fresh QEMU per candidate, always stopped) or the board; the
outputs and every tuned kernel's tensor must equal the reference interpreter's bytes, then
the per-kernel profile gives the count. A crash, a hang (no answer within the timeout), a
wrong answer, a build or fit failure is an Outcome("failed", error=reason).
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from .. import deploy, project
from ..deploy import estimate
from ..compiler import CompileOptions, check_arena, compile_model
from ..compiler.patches import PATCH_FAMILY
from ..deploy import Artifact, BuildOptions, Link
from ..errors import ArenaBudgetError, DeviceError, UserError, shown
from ..escape import say
from ..files import OutputTree, check_output_dir, check_output_file
from ..ir.compare import compare
from ..lower import lower_node
from ..progress import progress_bar
from ..reference import interp
from ..report.memory import parse_bytes
from ..target.cycles import CORES
from ..schedule import FAMILIES, ScheduleError, blocks
from ..target import Board
from .boards import BoardLink, resolve_boards
from .records import Outcome, RecordWriter, compatible, environment, read_records
from .search import check_cost_model
from . import patch_search
from .tuner import Budget, Plan, tune
from .workload import extract_workloads

Progress = Callable[[str], None]
EXECUTORS = ("local", "ray")


@dataclass(frozen=True)
class TuneOptions:
    """How `tune_model` searches.

    budget: trials and/or minutes (parse_budget). jobs: measurements at once (QEMU twins, or one
    per real board). resume: continue an existing records file. strategy: "model" (cost model
    guided) or "random"; cost_model: "ridge" or "xgboost"; seed. batch: one firmware measures a
    candidate of every workload. scratch_budget: bytes of scratch a candidate may use.
    arena_budget: bytes a candidate's arena may take ("default": the default schedules' arena;
    None: the board's memory). executor: "local" or "ray" (at `address`). work_dir: where the
    candidates are built (default a temporary directory). ports / probes: the real boards.
    objective: what a candidate is ranked by: "instructions" (QEMU's count; on a real board its
    cycles) or "cycles" (on QEMU, the cycle model's estimate, unit "estimated_cycles":
    docs/cycles.md; on a real board the measured cycles, as always). families: tune only the
    workloads of these knob families (schedule.FAMILIES; empty: all), the others keep their
    default schedules.
    """

    budget: Budget
    jobs: int = 1
    resume: bool = False
    strategy: str = "model"
    seed: int = 0
    batch: bool = False
    cost_model: str = "ridge"
    scratch_budget: int | None = None
    arena_budget: int | str | None = "default"
    executor: str = "local"
    address: str | None = None
    work_dir: Path | None = None
    ports: tuple[str, ...] = ()
    probes: tuple[str, ...] = ()
    objective: str = "instructions"
    families: tuple[str, ...] = ()      # tune only the workloads of these knob families (none: all)


OBJECTIVES = ("instructions", "cycles")


def lowered_workloads(model, board: Board, options: CompileOptions = CompileOptions()):
    """(compiled default, workloads): the model compiled with its default schedules (which
    kernels got int16 weights gives each workload's default point) and its deduplicated
    workloads."""
    with tempfile.TemporaryDirectory(prefix="microcompile-tune-") as tmp:
        compiled = compile_model(model, board, Path(tmp), replace(options, tuned={}))
    target = board.target
    # Kernels whose weights stay packed int4 (the flash is short) are not tuned: a record replays a
    # schedule without the packing, which would not fit.
    lowered = [(n, lower_node(compiled.graph, n, target)) for n, _, _ in compiled.kernels
               if n.name not in compiled.stored_int4]
    wide = {n.name: n.name in compiled.widened for n, _ in lowered}
    workloads = extract_workloads(lowered, target, wide)
    # The compiler grows im2col blocks into arena slack (schedule/blocks.py): a workload's default
    # point takes its kernels' cap (the smallest, where they differ, so replaying it never grows
    # the arena), so the default measured is what deploy builds without records.
    caps = {n.name: blocks.col_bytes_max(t) for n, _, t in compiled.kernels}
    for w in workloads:
        grown = [caps[n] for n in w.nodes if caps.get(n) is not None]
        if "col_bytes_max" in w.default and grown:
            w.default = {**w.default, "col_bytes_max": min(grown)}
    return compiled, workloads


class Measurer:
    """measure(slot, workload, config, trace) for tune.tune, and .batch(slot, items) for its batch
    mode: slot k builds in work_dir/job<k> and, on real boards, measures on boards[k]: it flashes
    each candidate with that board's probe and talks to it over that board's port. A board that
    no longer flashes (the probe's tool fails) or whose port vanished is an Outcome "lost"."""

    def __init__(self, default: Artifact, work_dir: Path, link: Link, boards: list[BoardLink] | None = None,
                 arena_budget: int | None = None, inputs=None):
        """`default`: the model compiled with its default schedules (its source, board and
        compile options are the candidates'); `inputs` as deploy.model_inputs takes them."""
        self.default, self.board, self.work_dir = default, default.board, Path(work_dir)
        self.arena_budget = arena_budget       # bytes: a firmware whose arena is larger is not built
        self.link = link
        # A real board per slot (tune/boards.py); QEMU twins and the host need none.
        self.boards = boards or [BoardLink(None, link.port)]
        self.real = not link.emulate and not self.board.is_host
        compiled = default.compiled
        self.inputs = deploy.model_inputs(compiled.graph, inputs)
        self.ordered = [self.inputs[n] for n in compiled.graph.inputs]
        self.reference = interp.run(compiled.graph, self.inputs, keep_all=True)
        self.outputs = list(compiled.graph.outputs)
        self.node_outputs = {n.name: n.outputs[0] for n, _, _ in compiled.kernels}
        self.estimate = False          # rank by the cycle model's estimate (tune --objective cycles, QEMU)

    def _compile(self, tuned: dict, directory: Path, options: CompileOptions | None = None) -> Artifact:
        """The model with `tuned` traces replayed (and other `options` than the default's, if
        given), compiled into `directory`."""
        options = replace(options or self.default.options, tuned=tuned)
        compiled = compile_model(self.default.source, self.board, directory, options)
        return Artifact(compiled, directory, self.board, self.default.name, options, self.default.source)

    def __call__(self, slot: int, workload, config: dict, trace) -> Outcome:
        return self.batch(slot, [(workload, config, trace)])[0]

    def batch(self, slot: int, items: list) -> list[Outcome]:
        """One firmware with each item's trace on its workload's kernels (distinct workloads).
        A failure of the whole firmware (build, fit, crash, hang) fails a single item and
        sends several back to be measured alone ("retry"). A wrong answer is pinned on the
        first tuned kernel, in execution order, whose tensor differs (the kernels before it
        computed right, so its inputs were right); items with a kernel after it are retried."""
        project_dir = self.work_dir / f"job{slot}"
        quiet = lambda s: None  # noqa: E731

        def everyone(error: str) -> list[Outcome]:
            return [Outcome("retry" if len(items) > 1 else "failed", error=error)] * len(items)
        try:
            with tempfile.TemporaryDirectory(prefix="microcompile-candidate-") as tmp:
                artifact = self._compile({w.key: trace for w, _, trace in items}, Path(tmp))
                project.check_out_dir(project_dir)
                built = deploy.build(artifact, project_dir, BuildOptions(emulate=self.link.emulate, agent=True,
                                                                         arena_budget=self.arena_budget),
                                     self.inputs, quiet)
        except ScheduleError as e:
            return everyone(f"schedule: the trace does not replay: {e}")
        except ArenaBudgetError as e:
            if len(items) == 1:
                return [Outcome("failed", error=_arena_reason(e))]
            return self._over_budget(slot, items)
        except project.FitError as e:
            return everyone(f"does not fit: {_first_line(e)}")
        except UserError as e:
            return everyone(f"build: {_build_reason(e)}")
        link = self.boards[slot % len(self.boards)]
        if self.real:
            try:        # every candidate is a new build: flash it with this slot's probe
                project.flash(project_dir, self.board, probe=link.probe, progress=quiet, show_bar=False)
            except project.FitError as e:
                return everyone(f"does not fit: {_first_line(e)}")
            except UserError as e:
                return [Outcome("lost", error=f"board {link}: flash failed: {_first_line(e)}")] * len(items)
        compiled = built.compiled
        index = {n.name: i for i, (n, _, _) in enumerate(compiled.kernels)}
        nodes = [[n for n in w.nodes if n in compiled.tuned] for w, _, _ in items]
        for (w, _, _), got in zip(items, nodes):
            if len(got) != len(w.nodes):
                return everyone(f"the record applied to {len(got)} of the workload's {len(w.nodes)} kernels")
        first_bad = None              # (kernel index, item, reason)
        trace = estimate.agent_trace(built, quiet) if self.estimate else None
        if self.estimate and trace is None:
            return everyone("estimate: the profile plugin cannot run for this build")
        try:
            with deploy.open_session(project_dir, self.board, Link(self.link.emulate, link.port, link.probe,
                                                                   self.link.timeout), quiet,
                                     tuple(trace.qemu_args) if trace else ()) as s:
                outs = s.run(self.ordered)
                wrong_output = None
                for name, out in zip(self.outputs, outs):
                    c = compare(out.numpy(), self.reference[name])
                    if not c.equal and wrong_output is None:
                        wrong_output = (f"wrong answer: output {name}: {c.n_diff} element(s) differ, "
                                        f"max |diff| {c.max_abs_diff:g}")
                readable = {t.name for t in s.info().tensors}
                for k, node, i in sorted((index[n], n, i) for i, ns in enumerate(nodes) for n in ns):
                    tensor = self.node_outputs[node]
                    if tensor not in readable:
                        continue
                    c = compare(s.tensor(tensor, self.ordered).numpy(), self.reference[tensor])
                    if not c.equal:
                        first_bad = (k, i, f"wrong answer: kernel {node} ({tensor}): {c.n_diff} element(s) "
                                           f"differ, max |diff| {c.max_abs_diff:g}")
                        break
                if wrong_output is not None and first_bad is None:
                    return everyone(wrong_output)
                prof = s.profile(self.ordered)
                counts, unit = prof.counts, prof.unit
                if trace is not None:
                    counts, unit = trace.kernel_cycles(prof.counts), "estimated_cycles"
                    if counts is None:
                        return everyone("estimate: the profile plugin's kernel windows do not match the counts")
        except DeviceError as e:
            if self.real and link.port and "://" not in link.port and not Path(link.port).exists():
                return [Outcome("lost", error=f"board {link}: its serial port vanished ({_first_line(e)})")] \
                    * len(items)
            kind = "hang" if type(e).__name__ == "DeviceTimeout" else "device"
            return everyone(f"{kind}: {_first_line(e)}")
        finally:
            if trace is not None:
                trace.close()
        out = []
        for i, ns in enumerate(nodes):
            if first_bad is not None and i == first_bad[1]:
                out.append(Outcome("failed", error=first_bad[2]))
            elif first_bad is not None and any(index[n] > first_bad[0] for n in ns):
                out.append(Outcome("retry", error=f"not verified: an earlier kernel answered wrong "
                                                  f"({first_bad[2]})"))
            else:
                mine = [counts[index[n]] for n in ns]
                out.append(Outcome("ok", count=int(round(sum(mine) / len(mine))), unit=unit))
        return out


    def whole(self, options: CompileOptions) -> tuple[Outcome, int | None]:
        """The model compiled with `options` (another --patch choice), built, run and checked on
        slot 0's device: (its count for one inference, in the objective's unit; its arena)."""
        project_dir = self.work_dir / "job0"
        quiet = lambda s: None  # noqa: E731
        try:
            with tempfile.TemporaryDirectory(prefix="microcompile-candidate-") as tmp:
                artifact = self._compile(dict(options.tuned), Path(tmp), options)
                project.check_out_dir(project_dir)
                built = deploy.build(artifact, project_dir, BuildOptions(emulate=self.link.emulate, agent=True),
                                     self.inputs, quiet)
        except project.FitError as e:
            return Outcome("failed", error=f"does not fit: {_first_line(e)}"), None
        except (ScheduleError, UserError) as e:
            return Outcome("failed", error=f"build: {_build_reason(e)}"), None
        arena = built.compiled.plan.arena_bytes
        link = self.boards[0]
        trace = None
        try:
            if self.real:
                project.flash(project_dir, self.board, probe=link.probe, progress=quiet, show_bar=False)
            trace = estimate.agent_trace(built, quiet) if self.estimate else None
            with deploy.open_session(project_dir, self.board, Link(self.link.emulate, link.port, link.probe,
                                                                   self.link.timeout), quiet,
                                     tuple(trace.qemu_args) if trace else ()) as s:
                for name, out in zip(self.outputs, s.run(self.ordered)):
                    c = compare(out.numpy(), self.reference[name])
                    if not c.equal:
                        return Outcome("failed", error=f"wrong answer: output {name}: {c.n_diff} element(s) "
                                                       f"differ"), arena
                prof = s.profile(self.ordered)
                counts, unit = prof.counts, prof.unit
                if trace is not None:
                    counts, unit = trace.kernel_cycles(prof.counts), "estimated_cycles"
        except (DeviceError, UserError) as e:
            return Outcome("failed", error=f"device: {_first_line(e)}"), arena
        finally:
            if trace is not None:
                trace.close()
        if counts is None:
            return Outcome("failed", error="estimate: the profile plugin's kernel windows do not match"), arena
        return Outcome("ok", count=int(sum(counts)), unit=unit), arena

    def _over_budget(self, slot: int, items: list) -> list[Outcome]:
        """A batch whose firmware plans an arena over the budget: the candidates over it on their
        own fail (found by compiling each alone, no build), the others are measured together."""
        out: list[Outcome | None] = [None] * len(items)
        fine = []
        with tempfile.TemporaryDirectory(prefix="microcompile-arena-") as tmp:
            for i, (w, _, trace) in enumerate(items):
                try:
                    check_arena(self._compile({w.key: trace}, Path(tmp) / str(i)).compiled, self.arena_budget)
                except ScheduleError as e:
                    out[i] = Outcome("failed", error=f"schedule: the trace does not replay: {e}")
                except ArenaBudgetError as e:
                    out[i] = Outcome("failed", error=_arena_reason(e))
                else:
                    fine.append(i)
        if len(fine) == len(items):        # each fits alone, not together: measure them one by one
            return [Outcome("retry", error="arena: together over the arena budget")] * len(items)
        for i, o in zip(fine, self.batch(slot, [items[i] for i in fine]) if fine else []):
            out[i] = o
        return out


def _arena_reason(e: ArenaBudgetError) -> str:
    return f"arena: {e.message} (--arena-budget)"


def _build_reason(e: Exception) -> str:
    """The compiler's first error line, else the message's first line."""
    text = getattr(e, "message", None) or str(e)
    errors = [line.strip() for line in text.splitlines() if "error:" in line]
    return errors[0] if errors else _first_line(e)


def _first_line(e: Exception, lines: int = 1) -> str:
    text = getattr(e, "message", None) or str(e)
    return " | ".join(text.strip().splitlines()[:lines])


def parse_arena_budget(text: str | None):
    """--arena-budget: absent -> "default" (the default schedules' arena, as tune_model takes
    it), "none" -> None, else bytes ("48K", "40000")."""
    if text is None:
        return "default"
    return None if text.strip().lower() == "none" else parse_bytes(text, "--arena-budget")


def parse_budget(trials: int | None, budget: str | None) -> Budget:
    """--trials N, or --budget N (trials) / --budget 30m (minutes) / 2h."""
    minutes = None
    if budget is not None:
        text = budget.strip().lower()
        try:
            if text.endswith("m"):
                minutes = float(text[:-1])
            elif text.endswith("h"):
                minutes = 60 * float(text[:-1])
            else:
                if trials is not None and int(text) != trials:
                    raise UserError("--trials and --budget disagree", hint="give one of them")
                trials = int(text)
        except ValueError:
            raise UserError(f"--budget {budget!r} is neither a trial count nor minutes",
                            hint="e.g. --budget 200 (trials), --budget 30m or --budget 2h") from None
    if trials is None and minutes is None:
        raise UserError("tune needs a budget", hint="--trials 200, or --budget 30m")
    if (trials is not None and trials < 1) or (minutes is not None and minutes <= 0):
        raise UserError("the tuning budget must be positive", hint="e.g. --trials 200 or --budget 30m")
    return Budget(trials, minutes)


def resumable(records: list[dict], env) -> tuple[list[dict], list[str]]:
    """The records `tune --resume` continues from (those of env's core, toolchain and schedule
    version) and a note per reason the others are left out."""
    previous, left = [], {}
    for r in records:
        why = compatible(r, env)
        if why is None:
            previous.append(r)
        else:
            left[why] = left.get(why, 0) + 1
    notes = [f"{n} record(s) from {why} not resumed (this run: {env.core}/{env.kernel_set}, {env.toolchain}, "
             f"schedule version {env.schedule_version})" for why, n in sorted(left.items())]
    return previous, notes


def tune_model(default: Artifact, records_path, options: TuneOptions, link: Link = Link(emulate=True), *,
               inputs=None, progress: Progress = say):
    """Tune every workload of the model compiled in `default` (with its default schedules, by
    `compile_for_tuning`) and append the records to `records_path`; returns (tuner.TuneResult,
    workloads). Real boards (link.emulate False): `options.ports` and `options.probes` (or
    link.port) name them, one job per board (tune/boards.py); with one job and none given, the
    one attached board."""
    board = default.board
    emulate = link.emulate
    records_path, boards = check_request(board, records_path, options, link)
    if boards is not None and len(boards) > 1:
        progress(f"[tune] {len(boards)} boards: {', '.join(map(str, boards))}")
    previous = []
    env = environment(board)
    if records_path.exists() and records_path.stat().st_size > 0:
        if not options.resume:
            raise UserError(f"records file {records_path} exists",
                            hint="pass --resume to continue it, or choose another --records file")
        recs, notes = read_records(records_path)
        previous, more = resumable(recs, env)
        # a search compares counts: resume only the records of this objective's unit
        estimated = options.objective == "cycles" and emulate
        other = [r for r in previous
                 if r.get("count") is not None and (r.get("unit") == "estimated_cycles") != estimated]
        if other:
            previous = [r for r in previous if r not in other]
            more.append(f"{len(other)} record(s) in another unit than --objective {options.objective}'s not resumed")
        for n in notes + more:
            progress(f"[tune] note: {n}")
    elif options.resume:
        progress(f"[tune] {records_path} is empty or absent: starting afresh")
    own = options.work_dir is None
    work = Path(tempfile.mkdtemp(prefix="microcompile-tune-")) if own else Path(options.work_dir)
    try:
        return _tune_in(default, records_path, options, link, inputs, progress,
                        (env, previous, boards, work))
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)


def _tune_in(default: Artifact, records_path: Path, options: TuneOptions, link: Link, inputs, progress,
             state: tuple):
    """tune_model's search in the work directory `state[3]`: the patch stage's choice (with
    --patch auto, autotune/patch_search.py), then the kernels."""
    env, previous, boards, work = state
    board = default.board
    if default.options.patch == "auto":
        searcher = Measurer(default, work, link, boards, None, inputs)
        searcher.estimate = options.objective == "cycles" and link.emulate
        with RecordWriter(records_path) as writer:
            chosen = patch_search.search(searcher, writer, env, default.name, previous, progress)
        if chosen is not None:
            default = replace(default, options=replace(default.options, patch=chosen))
    progress(f"[tune] {default.name} on {board.name}: compiling the default schedules")
    compiled, workloads = lowered_workloads(default.source, board, default.options)
    if options.families:
        left = [w for w in workloads if w.family not in options.families]
        workloads = [w for w in workloads if w.family in options.families]
        if left:
            progress(f"[tune] {len(left)} workload(s) of other families than {', '.join(options.families)} keep "
                     "their default schedules")
    sizes = ", ".join(f"{w.key.split(':')[0]} x{len(w.nodes)} ({w.space.size} points)" for w in workloads) or \
        "none (fused row groups and patch stages keep their parts' default schedules)"
    progress(f"[tune] {len(compiled.kernels)} kernels, {len(workloads)} workloads: {sizes}")
    arena_budget = options.arena_budget
    if arena_budget == "default":
        arena_budget = compiled.plan.arena_bytes
        progress(f"[tune] arena budget {arena_budget:,} bytes (the default schedules' arena; --arena-budget BYTES "
                 f"or none allows more)")
    elif arena_budget is not None:
        progress(f"[tune] arena budget {arena_budget:,} bytes (--arena-budget)")
    measurer = Measurer(Artifact(compiled, default.directory, board, default.name, default.options, default.source),
                        work, link, boards, arena_budget, inputs)
    emulate = link.emulate
    measurer.estimate = options.objective == "cycles" and emulate
    pool = None
    if options.executor == "ray":
        from .ray_executor import RayExecutor

        pool = RayExecutor(options.address, board=None if emulate else board.name)

    total = options.budget.trials
    kernels_previous = [r for r in previous if r.get("family") != PATCH_FAMILY]
    with RecordWriter(records_path) as writer, \
            progress_bar(progress, total, "tune", "trial",
                         initial=min(len([r for r in kernels_previous if r["status"] != "invalid"]), total or 0)) as pbar:
        plan = Plan(board.target, env, options.budget, jobs=options.jobs, strategy=options.strategy,
                    cost_model=options.cost_model, seed=options.seed, batch=options.batch, model=default.name,
                    scratch_budget=options.scratch_budget)
        result = tune(workloads, plan, measurer.batch if options.batch else measurer, writer,
                      previous=kernels_previous, executor=pool, bar=pbar,
                      note=lambda text: progress(f"[tune] note: {text}"))
    if result.devices_lost:
        raise DeviceError("every board was lost: " + "; ".join(result.notes),
                          hint=f"check the boards and their probes; the {result.trials} measurement(s) made are in "
                               f"{records_path}, and `tune ... --resume` continues it")
    return result, workloads


def check_request(board: Board, records_path, options: TuneOptions, link: Link) -> tuple[Path, list | None]:
    """Before any work: refuse what cannot be tuned as asked (the link, probes and ports,
    jobs, cost model, executor, the records file and the work directory). Returns the records
    path and, on real boards, one BoardLink per job (tune/boards.py; None on QEMU or the host)."""
    ports = list(options.ports or ([link.port] if link.port else []))
    emulate = link.emulate
    deploy.check_target(board, Link(emulate, ports[0] if ports else None))
    if options.probes and (emulate or board.is_host):
        raise UserError("--probe names a real board's debug probe", hint="drop --probe, or drop --emulate")
    if len(ports) > 1 and (emulate or board.is_host):
        raise UserError("several --port are several real boards", hint="drop --port")
    if options.jobs < 1:
        raise UserError(f"--jobs {options.jobs}: needs at least one job")
    check_cost_model(options.cost_model)
    if options.objective not in OBJECTIVES:
        raise UserError(f"unknown objective {options.objective!r}", hint=f"one of {', '.join(OBJECTIVES)}")
    if options.objective == "cycles" and emulate and board.target.core not in CORES:
        raise UserError(f"--objective cycles: no cycle model for {board.target.core}",
                        hint=f"models: {', '.join(sorted(CORES))} (docs/cycles.md)")
    if options.executor not in EXECUTORS:
        raise UserError(f"unknown executor {options.executor!r}", hint=f"one of {', '.join(EXECUTORS)}")
    unknown = [n for n in options.families if n not in FAMILIES]
    if unknown:
        raise UserError(f"unknown knob family {', '.join(shown(n) for n in unknown)}",
                        hint=f"--family takes {', '.join(FAMILIES)} (docs/tuning.md)")
    if options.address is not None and options.executor != "ray":
        raise UserError("--address is the Ray cluster's address", hint="add --executor ray")
    records_path = check_output_file(records_path, "--records file")   # never a link
    if options.work_dir is not None:
        _check_work_dir(Path(options.work_dir), options.jobs)
    probes = list(options.probes)
    if emulate or board.is_host:
        return records_path, None
    if options.executor == "local":
        return records_path, resolve_boards(board, options.jobs, ports, probes)
    # Ray: each task finds the board of its node
    return records_path, [BoardLink(probes[0] if probes else None, ports[0] if ports else None)]


def _check_work_dir(work_dir: Path, jobs: int) -> None:
    """Before any work: -o can hold the jobs' projects, and no job<k> in it is a link. The
    candidates are built in work_dir/job<k>, inside -o, where no link is followed: one found
    there is removed (the link, not what it points to), and the project made in its place."""
    check_output_dir(work_dir, "work directory")
    if work_dir.is_dir():
        tree = OutputTree(work_dir)
        for k in range(jobs):
            tree.remove_links(f"job{k}")


def format_result(result, workloads) -> str:
    rows = [f"{'workload':<58} {'kernels':>7} {'trials':>6} {'failed':>6} {'invalid':>7} {'default':>12} "
            f"{'best':>12} {'speed-up':>8}"]
    for st in result.stats:
        d, b = st.default_count, st.best_count
        ratio = f"{d / b:.3f}x" if d and b else "-"
        rows.append(f"{st.key:<58} {len(st.nodes):>7} {st.trials:>6} {st.failures:>6} {st.invalid:>7} "
                    f"{(f'{d:,}' if d is not None else '-'):>12} {(f'{b:,}' if b is not None else '-'):>12} "
                    f"{ratio:>8}")
    rows += [f"note: {n}" for n in result.notes]
    rows.append(f"{result.trials} trial(s) measured in {result.seconds:.1f} s"
                + (f", {result.resumed} resumed from the records" if result.resumed else "")
                + (" (interrupted)" if result.interrupted else ""))
    return "\n".join(rows)

