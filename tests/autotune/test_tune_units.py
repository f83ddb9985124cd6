"""The tuner without a device: workload keys and deduplication, records (round trip, a line cut
short, selection per core and toolchain), the search strategies on a synthetic cost, and the
tuning loop with a fake measurement: budget, invalid points, failures, Ctrl-C and --resume
(no measurement lost, no point measured twice), --jobs 2 and the budget parsing."""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest

from support import flows
from microcompile.errors import UserError
from microcompile.lower import lower_node
from microcompile.schedule import Knob, KnobSpace, Trace
from microcompile.target import load_board
from microcompile.autotune import (Budget, Environment, Outcome, Plan, RecordWriter, extract_workloads, make_search,
                              read_records, record, select, tune, workload_key)
from microcompile.autotune.run import parse_budget
from support import multi_op_models as M

DSP = load_board("mps2-an386")
PLAIN = load_board("mps2-an385")
ENV = Environment("mps2-an386", "cortex-m4f", "dsp", ("-mcpu=cortex-m4",), "arm-none-eabi-gcc 12.2.1")


@pytest.fixture(scope="module")
def dscnn(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("dscnn")
    path = M.write("dscnn_int8", tmp)
    out = {}
    for board in (DSP, PLAIN):
        compiled = flows.compile_model(path, board, tmp / board.name)
        lowered = [(n, lower_node(compiled.graph, n, board.target)) for n, _, _ in compiled.kernels]
        out[board.name] = (compiled, lowered)
    return path, out


def test_identical_kernels_share_a_workload_and_others_do_not(dscnn):
    _, by_board = dscnn
    compiled, lowered = by_board["mps2-an386"]
    workloads = extract_workloads(lowered, DSP.target)
    by_node = {n: w for w in workloads for n in w.nodes}
    # ds0/dw and ds1/dw: the same 5x5x20 depthwise 3x3 (different weights and scales): one workload.
    dws = [n.name for n, _ in lowered if n.op == "depthwise_conv2d"]
    assert len(dws) == 2 and by_node[dws[0]] is by_node[dws[1]]
    assert by_node[dws[0]].nodes == dws
    # The two pointwise convs (20->20, 20->28) and the stem conv differ.
    convs = [n.name for n, _ in lowered if n.op == "conv2d"]
    assert len({by_node[c].key for c in convs}) == 3
    assert len(workloads) == len(lowered) - 1
    assert by_node[dws[0]].key.startswith("depthwise_conv2d:1x5x5x20->1x5x5x20:int8:cortex-m4f/dsp:")
    # The key is stable (a second lowering) and names the core: the M3's kernels are another workload.
    again = [(n, lower_node(compiled.graph, n, DSP.target)) for n, _ in lowered]
    assert [workload_key(n, f, DSP.target) for n, f in again] == [workload_key(n, f, DSP.target) for n, f in lowered]
    _, plain = by_board["mps2-an385"]
    assert not {w.key for w in extract_workloads(plain, PLAIN.target)} & {w.key for w in workloads}


class _W:
    """A stand-in workload over a synthetic space."""

    def __init__(self, key="conv2d:test", knobs=None):
        self.key, self.family, self.op, self.nodes = key, "conv2d", "conv2d", ["n0", "n1"]
        self.space = KnobSpace("conv2d", knobs or (Knob("a", (1, 2, 4, 8), ""), Knob("b", ("x", "y", "z"), ""),
                                                   Knob("c", (0, 1), "")))
        self.default = {"a": 1, "b": "x", "c": 0}
        self.func = None


def _cost(c) -> int:
    """A synthetic count: best at a=4, b=z, c=1 with an interaction."""
    return 1000 + 100 * abs(np.log2(c["a"]) - 2) + {"x": 300, "y": 150, "z": 0}[c["b"]] \
        + (0 if c["c"] else 200) + (250 if c["a"] == 8 and c["b"] == "z" else 0)


def test_records_round_trip_and_a_line_cut_short(tmp_path):
    w = _W()
    path = tmp_path / "r.jsonl"
    trace = Trace.loads('[{"primitive": "split", "args": ["i", 4]}]')
    with RecordWriter(path) as out:
        out.write(record(ENV, w, w.default, trace, Outcome("ok", 1234, "instructions"), model="m"))
        out.write(record(ENV, w, {**w.default, "a": 2}, None, Outcome("invalid", error="tile too large")))
        out.write(record(ENV, w, {**w.default, "a": 4}, trace, Outcome("failed", error="hang: no answer")))
    with open(path, "a") as f:
        f.write('{"v": 1, "workload": "conv2d:te')       # a crash mid-write
    recs, notes = read_records(path)
    assert [r["status"] for r in recs] == ["ok", "invalid", "failed"]
    assert recs[0]["count"] == 1234 and recs[0]["default"] and recs[0]["nodes"] == ["n0", "n1"]
    assert Trace.from_json(recs[0]["trace"]) == trace
    assert recs[0]["toolchain"] == "arm-none-eabi-gcc 12.2.1" and recs[0]["core"] == "cortex-m4f"
    assert {"workload", "trace", "count", "unit", "board", "core", "cflags", "toolchain", "microcompile",
            "error"} <= set(recs[0])
    assert recs[1]["error"] == "tile too large" and recs[1]["trace"] is None
    assert len(notes) == 1 and "cut short" in notes[0]
    with pytest.raises(UserError, match="does not exist"):
        read_records(tmp_path / "missing.jsonl")


def test_select_takes_the_fastest_valid_record_of_this_core_and_toolchain():
    w, t = _W(), Trace.loads('[{"primitive": "split", "args": ["i", 4]}]')
    other_core = Environment("mps2-an385", "cortex-m3", "c", (), ENV.toolchain)
    other_cc = Environment(ENV.board, ENV.core, ENV.kernel_set, ENV.cflags, "arm-none-eabi-gcc 13.3.1")
    recs = [record(ENV, w, w.default, t, Outcome("ok", 900, "instructions")),
            record(ENV, w, {**w.default, "a": 2}, t, Outcome("ok", 800, "instructions")),
            record(ENV, w, {**w.default, "a": 4}, t, Outcome("failed", error="wrong answer")),
            record(other_core, w, {**w.default, "a": 8}, t, Outcome("ok", 10, "instructions")),
            record(other_cc, w, {**w.default, "a": 8}, t, Outcome("ok", 20, "instructions"))]
    sel = select(recs, ENV)
    assert sel.best[w.key]["count"] == 800 and sel.best[w.key]["config"]["a"] == 2
    # A record of the default point is never selected, however fast: the default serves it; nor
    # a point slower than the default's record.
    assert w.key not in select([record(ENV, w, w.default, t, Outcome("ok", 1, "instructions"))], ENV).best
    slower = [record(ENV, w, w.default, t, Outcome("ok", 700, "instructions")), *recs[1:]]
    assert w.key not in select(slower, ENV).best
    assert len(sel.notes) == 2
    assert any("core cortex-m3/c ignored" in n for n in sel.notes)
    assert any("toolchain arm-none-eabi-gcc 13.3.1 ignored" in n for n in sel.notes)
    assert select(recs, other_core).best[w.key]["count"] == 10


@pytest.mark.parametrize("strategy", ["random", "model"])
def test_a_search_starts_at_the_default_and_never_repeats(strategy):
    w = _W()
    s = make_search(strategy, w.space, w.default, seed=1)
    seen = []
    while (c := s.propose()) is not None:
        seen.append(json.dumps(c, sort_keys=True))
        s.tell(c, _cost(c))
    assert json.loads(seen[0]) == w.default
    assert len(seen) == len(set(seen)) == w.space.size


def test_the_model_search_beats_random_search_at_equal_trials():
    """Best-so-far after 12 of 120 points on a larger synthetic space, over 10 seeds."""
    knobs = (Knob("a", (1, 2, 4, 8, 16), ""), Knob("b", ("x", "y", "z"), ""), Knob("c", (0, 1), ""),
             Knob("d", (0, 1, 2, 3), ""))
    w = _W(knobs=knobs)
    w.default = {"a": 1, "b": "x", "c": 0, "d": 0}

    def cost(c):
        return _cost({**c, "a": min(c["a"], 8)}) + 40 * abs(c["d"] - 2) + (30 if c["a"] == 16 else 0)

    def best_after(strategy, seed, n=12):
        s = make_search(strategy, w.space, w.default, seed=seed)
        best = None
        for _ in range(n):
            c = s.propose()
            s.tell(c, cost(c))
            best = cost(c) if best is None else min(best, cost(c))
        return best
    model = np.mean([best_after("model", k) for k in range(10)])
    rand = np.mean([best_after("random", k) for k in range(10)])
    assert model < rand, (model, rand)


def _fake_measure(calls, fail=None, stop_after=None):
    def measure(slot, w, config, trace):
        calls.append((slot, json.dumps(config, sort_keys=True)))
        if stop_after is not None and len(calls) == stop_after:
            raise KeyboardInterrupt
        if fail and fail(config):
            return Outcome("failed", error="wrong answer: kernel n0 differs")
        return Outcome("ok", count=int(_cost(config)), unit="instructions")
    return measure


def _schedule(func, target, config, scratch_budget=None):
    from microcompile.schedule import InvalidConfig

    if config["a"] == 8 and config["c"] == 0:
        raise InvalidConfig("conv2d: a block of 8 columns is larger than the 5 output pixels")
    return None, Trace()


def test_the_loop_records_every_outcome_and_keeps_to_the_budget(tmp_path):
    w1, w2 = _W("conv2d:one"), _W("conv2d:two")
    calls = []
    with RecordWriter(tmp_path / "r.jsonl") as out:
        result = tune([w1, w2], Plan(None, ENV, Budget(trials=10), strategy="random", seed=3, schedule=_schedule),
                      _fake_measure(calls, fail=lambda c: c["b"] == "y"), out)
    recs, _ = read_records(tmp_path / "r.jsonl")
    measured = [r for r in recs if r["status"] != "invalid"]
    assert len(calls) == len(measured) == 10 == result.trials
    assert all(r["status"] == "invalid" and "larger than" in r["error"] for r in recs if r["config"]["a"] == 8
               and r["config"]["c"] == 0)
    failed = [r for r in recs if r["status"] == "failed"]
    assert failed and all(r["config"]["b"] == "y" and r["error"].startswith("wrong answer") for r in failed)
    for st in result.stats:                      # both workloads: the default first, 5 trials each
        assert st.trials == 5 and st.default_count == _cost(w1.default)
        assert st.best_count == min(r["count"] for r in recs if r["workload"] == st.key and r["status"] == "ok")
    assert [r["config"] for r in measured[:2]] == [w1.default, w2.default]


def test_ctrl_c_loses_nothing_and_resume_measures_no_point_twice(tmp_path):
    w = _W()
    path = tmp_path / "r.jsonl"
    calls = []
    with RecordWriter(path) as out:
        result = tune([w], Plan(None, ENV, Budget(trials=14), strategy="model", seed=0, schedule=_schedule),
                      _fake_measure(calls, stop_after=6), out)
    assert result.interrupted
    first, _ = read_records(path)
    assert len([r for r in first if r["status"] != "invalid"]) == 5 == len(calls) - 1   # the 6th was interrupted
    calls2 = []
    with RecordWriter(path) as out:
        result = tune([w], Plan(None, ENV, Budget(trials=14), strategy="model", seed=0, schedule=_schedule),
                      _fake_measure(calls2), out, previous=first)
    assert result.resumed == 5 and result.trials == 9 and len(calls2) == 9
    recs, _ = read_records(path)
    points = [json.dumps(r["config"], sort_keys=True) for r in recs]
    assert len(points) == len(set(points))           # no point measured (or rejected) twice
    assert len([r for r in recs if r["status"] != "invalid"]) == 14


def test_two_jobs_use_two_slots_at_once(tmp_path):
    w = _W()
    both = threading.Barrier(2, timeout=10)
    slots = []

    def measure(slot, w, config, trace):
        slots.append(slot)
        if len(slots) <= 2:
            both.wait()       # the first two measurements overlap, or this times out
        return Outcome("ok", count=int(_cost(config)), unit="instructions")
    with RecordWriter(tmp_path / "r.jsonl") as out:
        result = tune([w], Plan(None, ENV, Budget(trials=6), jobs=2, strategy="random", schedule=_schedule),
                      measure, out)
    assert result.trials == 6 and sorted(set(slots)) == [0, 1]


def test_budget_parsing():
    assert parse_budget(50, None) == Budget(50, None)
    assert parse_budget(None, "200") == Budget(200, None)
    assert parse_budget(None, "30m") == Budget(None, 30.0)
    assert parse_budget(None, "2h") == Budget(None, 120.0)
    for bad in ("soon", "0", "-5m"):
        with pytest.raises(UserError):
            parse_budget(None, bad)
    with pytest.raises(UserError, match="needs a budget"):
        parse_budget(None, None)


def test_a_time_budget_that_has_run_out_measures_nothing(tmp_path):
    calls = []
    with RecordWriter(tmp_path / "r.jsonl") as out:
        result = tune([_W()], Plan(None, ENV, Budget(minutes=1e-9), schedule=_schedule), _fake_measure(calls), out)
    assert result.trials == 0 and calls == []


@pytest.mark.parametrize("args,message", [
    (["--trials", "5", "--jobs", "0"], "--jobs 0"),
    (["--trials", "5", "--address", "10.0.0.1:6379"], "--address is the Ray cluster's address"),
    (["--budget", "soon"], "neither a trial count nor minutes"),
    (["--trials", "5", "--family", "conv2d,loops"], "unknown knob family loops"),
    (["--trials", "5", "--jobs", "2"], "--jobs 2 on real boards needs 2 nucleo-f446re boards; found 1: "),
])
def test_tune_refuses_bad_arguments_with_exit_2(dscnn, tmp_path, args, message, capsys):
    from microcompile.cli import main

    path, _ = dscnn
    port = tmp_path / "ttyFAKE"   # exists, so the port check (issue 14) passes and --jobs is what is refused
    port.write_bytes(b"")
    target = ["--board=stm32", "--port", str(port)] if "real boards" in message else ["--board=mps2-an386", "--emulate"]
    code = main(["tune", str(path), *target, "--records", str(tmp_path / "r.jsonl"), *args])
    assert code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


def test_batch_mode_measures_every_workload_at_once_and_retries_alone(tmp_path):
    """A firmware with a bad point (b == "y") of one workload fails as a whole when several
    workloads share it: its items come back as "retry" and are measured alone, where only the
    bad point fails. Every point is recorded once, within the budget."""
    ws = [_W("conv2d:one"), _W("conv2d:two"), _W("conv2d:three")]
    sizes, solo = [], []

    def measure(slot, items):
        sizes.append(len(items))
        bad = any(c["b"] == "y" for _, c, _ in items)
        if len(items) == 1:
            solo.append(json.dumps(items[0][1], sort_keys=True))
        if bad and len(items) > 1:
            return [Outcome("retry", error="hang: no answer")] * len(items)
        return [Outcome("failed", error="hang: no answer") if c["b"] == "y"
                else Outcome("ok", count=int(_cost(c)), unit="instructions") for _, c, _ in items]
    with RecordWriter(tmp_path / "r.jsonl") as out:
        result = tune(ws, Plan(None, ENV, Budget(trials=15), strategy="random", seed=5, batch=True,
                               schedule=_schedule), measure, out)
    recs, _ = read_records(tmp_path / "r.jsonl")
    measured = [r for r in recs if r["status"] != "invalid"]
    assert result.trials == len(measured) == 15
    assert max(sizes) == 3 and solo                   # batches of all three, and some alone
    points = [(r["workload"], json.dumps(r["config"], sort_keys=True)) for r in recs]
    assert len(points) == len(set(points))
    assert all((r["status"] == "failed") == (r["config"]["b"] == "y") for r in measured)
    assert all(r["config"]["b"] == "y" or r["count"] == _cost(r["config"]) for r in measured)


def test_the_model_search_tries_the_best_point_of_a_sibling_workload(tmp_path):
    """Two workloads of one family, the first's best point known from a resumed record: the
    model search measures that point on the second right after its default; random search
    (no hints) does not."""
    best = {"a": 8, "b": "y", "c": 1}

    def measure(slot, w, config, trace):
        return Outcome("ok", count=100 if config == best else int(_cost(config)), unit="instructions")

    def second_workload(strategy):
        a, b = _W("conv2d:a"), _W("conv2d:b")
        known = [record(ENV, a, best, Trace(), Outcome("ok", 100, "instructions"))]
        with RecordWriter(tmp_path / f"{strategy}.jsonl") as out:
            tune([a, b], Plan(None, ENV, Budget(trials=4), strategy=strategy, seed=2,
                              schedule=lambda f, t, c, scratch_budget=None: (None, Trace())),
                 measure, out, previous=known)
        return [r["config"] for r in read_records(tmp_path / f"{strategy}.jsonl")[0] if r["workload"] == b.key]
    model, rand = second_workload("model"), second_workload("random")
    assert model == [_W().default, best], model
    assert best not in rand and len(rand) == 2, rand


def test_records_of_another_schedule_version_are_ignored_with_a_note():
    """A record measured against other default schedules or knob meanings (schedule/version.py)
    is never replayed nor resumed; a record written before the version existed counts as 0."""
    from microcompile.schedule.version import SCHEDULE_VERSION
    from microcompile.autotune.run import resumable

    w, t = _W(), Trace.loads('[{"primitive": "split", "args": ["i", 4]}]')
    old_env = Environment(*[getattr(ENV, f) for f in ("board", "core", "kernel_set", "cflags", "toolchain")],
                          schedule_version=SCHEDULE_VERSION - 1)
    now = record(ENV, w, {**w.default, "a": 2}, t, Outcome("ok", 800, "instructions"))
    old = record(old_env, w, {**w.default, "a": 4}, t, Outcome("ok", 500, "instructions"))
    unversioned = {k: v for k, v in old.items() if k != "schedule_version"}
    assert now["schedule_version"] == SCHEDULE_VERSION and old["schedule_version"] == SCHEDULE_VERSION - 1
    sel = select([now, old], ENV)
    assert sel.best[w.key]["count"] == 800                      # the faster old record is not taken
    assert sel.notes == [f"1 record(s) from schedule version {SCHEDULE_VERSION - 1} ignored (this build: "
                         f"cortex-m4f/dsp, arm-none-eabi-gcc 12.2.1, schedule version {SCHEDULE_VERSION})"]
    assert w.key not in select([old], ENV).best
    assert select([old], old_env).best[w.key]["count"] == 500   # its own version still reads it
    previous, notes = resumable([now, old, unversioned], ENV)
    assert previous == [now]
    assert sorted(n.split(" (")[0] for n in notes) == sorted(
        [f"1 record(s) from schedule version {SCHEDULE_VERSION - 1} not resumed",
         "1 record(s) from schedule version 0 not resumed"])   # the unversioned one


def test_the_arena_budget_flag():
    """--arena-budget: absent is the default schedules' arena, `none` lifts it, else bytes (a
    bad value is a UserError naming the flag)."""
    from microcompile.autotune.run import parse_arena_budget as _arena_budget
    from microcompile.errors import UserError

    assert _arena_budget(None) == "default"
    assert _arena_budget("none") is None and _arena_budget("NONE") is None
    assert _arena_budget("40000") == 40000 and _arena_budget("48K") == 48 * 1024
    with pytest.raises(UserError, match="--arena-budget"):
        _arena_budget("lots")


def test_importing_microcompile_keeps_blas_to_one_thread():
    """OpenBLAS's thread pool and tune --jobs's forks from worker threads do not mix (a fork
    during the cost model's fit left it waiting for pool threads that were gone): importing
    microcompile before numpy sets OPENBLAS_NUM_THREADS=1 unless the user set it."""
    import os
    import subprocess
    import sys

    code = "import os, microcompile, numpy; print(os.environ['OPENBLAS_NUM_THREADS'])"
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    assert out.stdout.strip() == "1"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**env, "OPENBLAS_NUM_THREADS": "4"}, check=True)
    assert out.stdout.strip() == "4"


def test_select_ranks_measured_cycles_then_estimated_cycles_then_instructions():
    w, t = _W(), Trace.loads('[{"primitive": "split", "args": ["i", 4]}]')
    recs = [record(ENV, w, {**w.default, "a": 2}, t, Outcome("ok", 10, "instructions")),
            record(ENV, w, {**w.default, "a": 4}, t, Outcome("ok", 500, "estimated_cycles")),
            record(ENV, w, {**w.default, "a": 8}, t, Outcome("ok", 900, "cycles"))]
    assert select(recs, ENV).best[w.key]["unit"] == "cycles"
    assert select(recs[:2], ENV).best[w.key]["unit"] == "estimated_cycles"


def test_tune_refuses_an_unknown_objective(tmp_path):
    from microcompile.autotune.run import TuneOptions, check_request
    from microcompile.deploy import Link

    with pytest.raises(UserError, match="unknown objective 'speed'"):
        check_request(DSP, tmp_path / "r.jsonl", TuneOptions(parse_budget(5, None), objective="speed"),
                      Link(emulate=True))
