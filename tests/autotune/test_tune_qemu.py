"""The tuner on the QEMU twin (mps2-an386) with a tiny DS-CNN: failures (a wrong answer, a hang,
a build error, each from a knob value that breaks the candidate on purpose) are recorded with
their reason and the search goes on; `tune --jobs 2` and `--resume` from the command line;
`deploy --records` replays the best record per workload and keeps the default elsewhere,
ignoring records of another core with a note; no QEMU is left behind."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from microcompile.autotune import run as tuning
from support import flows
from microcompile.schedule import Knob, KnobSpace, apply_config, primitive
from microcompile.target import load_board
from microcompile.tir.nodes import BinOp, Buffer, Cast, For, IntImm, Load, PrimFunc, SeqStmt, Store, Var
from microcompile.autotune import Budget, Plan, RecordWriter, read_records, tune
from microcompile.autotune.records import environment
from support import multi_op_models as M

BOARD = load_board("mps2-an386")
QUIET = lambda s: None  # noqa: E731


# Schedule primitives that break a kernel on purpose (registered for these tests only).
@primitive("test_break_wrong")
def _wrong(f: PrimFunc) -> PrimFunc:
    """Add one to the first element of the kernel's output after it ran."""
    y = next(b for b in f.buffers if b.scope == "arena" and b.tensor in _outputs(f))
    bump = Store(y, IntImm(0), Cast(y.dtype, BinOp("add", Cast("int32", Load(y, IntImm(0))), IntImm(1))))
    return f.with_body(SeqStmt((f.body, bump)))


@primitive("test_break_hang")
def _hang(f: PrimFunc) -> PrimFunc:
    """Run the kernel 2**31 - 1 times: far beyond any timeout."""
    return f.with_body(For(Var("test_spin"), 2**31 - 1, f.body))


@primitive("test_break_build")
def _build(f: PrimFunc) -> PrimFunc:
    """Write into a constant in flash: the C compiler refuses to assign to a const array."""
    c = Buffer("test_flash", "int8", (1,), "const", data=np.zeros(1, np.int8))
    return PrimFunc(f.name, (*f.buffers, c), SeqStmt((f.body, Store(c, IntImm(0), Cast("int8", IntImm(1))))),
                    dict(f.attrs))


def _outputs(f: PrimFunc) -> set[str]:
    return {s.split(" ")[0] for s in f.attrs.get("outputs", [])}


FAULTS = ("none", "wrong", "hang", "build")


def _faulty(func, target, config, scratch_budget=None):
    """The pooling kernel's default schedule, then the break its `fault` knob names."""
    base = {k: v for k, v in config.items() if k != "fault"}
    _, trace = apply_config(func, target, base, scratch_budget=scratch_budget)
    if config["fault"] == "none":
        return None, trace
    from microcompile.schedule import Schedule

    sch = Schedule(func)
    for d in trace.decisions:
        sch.apply(d.primitive, *d.args)
    sch.apply(f"test_break_{config['fault']}")
    return sch.func, sch.trace


@pytest.fixture(scope="module")
def dscnn(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("tune")
    return M.write("dscnn_int8", tmp)


def _qemu_running(marker: str) -> list[str]:
    out = subprocess.run(["pgrep", "-af", "qemu-system"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if marker in line]


@pytest.mark.qemu
def test_broken_candidates_are_recorded_and_the_search_goes_on(dscnn, tmp_path):
    compiled, workloads = tuning.lowered_workloads(dscnn, BOARD)
    pool = next(w for w in workloads if w.op == "average_pool2d")
    fixed = tuple(Knob(k.name, (pool.default[k.name],), "") for k in pool.space.knobs)
    pool.space = KnobSpace("loops", (Knob("fault", FAULTS, ""),) + fixed)
    pool.default = {"fault": "none", **pool.default}
    measure = flows.measurer(dscnn, BOARD, tmp_path / "work", compiled, emulate=True, port=None, timeout=3.0)
    with RecordWriter(tmp_path / "r.jsonl") as out:
        result = tune([pool], Plan(BOARD.target, environment(BOARD), Budget(trials=4), strategy="random",
                                       schedule=_faulty), measure, out)
    recs = {r["config"]["fault"]: r for r in read_records(tmp_path / "r.jsonl")[0]}
    assert set(recs) == set(FAULTS) and result.trials == 4
    assert recs["none"]["status"] == "ok" and recs["none"]["count"] > 0 and recs["none"]["unit"] == "instructions"
    assert recs["wrong"]["status"] == "failed" and recs["wrong"]["error"].startswith("wrong answer")
    assert recs["hang"]["status"] == "failed" and recs["hang"]["error"].startswith("hang:")
    assert recs["build"]["status"] == "failed" and recs["build"]["error"].startswith("build:")
    assert "test_flash" in recs["build"]["error"] or "read-only" in recs["build"]["error"]
    st = result.stats[0]
    assert st.failures == 3 and st.best_count == recs["none"]["count"]
    assert not _qemu_running(str(tmp_path)), "a QEMU was left running"


def _cli(*args, timeout=900):
    return subprocess.run([sys.executable, "-m", "microcompile", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.qemu
def test_tune_with_two_jobs_resume_and_deploy_with_the_records(dscnn, tmp_path):
    records = tmp_path / "tune.jsonl"
    work = tmp_path / "work"
    args = ("tune", dscnn, "--board=mps2-an386", "--emulate", "--records", records, "--jobs", 2, "-o", work,
            "--timeout", 5)
    p = _cli(*args, "--trials", 8)
    assert p.returncode == 0, p.stderr
    recs, _ = read_records(records)
    measured = [r for r in recs if r["status"] != "invalid"]
    assert len(measured) == 8 and all(r["status"] == "ok" for r in measured), [r["error"] for r in measured]
    assert {r["workload"] for r in measured if r["default"]} == {r["workload"] for r in recs}   # defaults first
    assert "7 workloads" in p.stdout + p.stderr and "8 trial(s) measured" in p.stdout
    assert sorted(d.name for d in work.iterdir()) == ["job0", "job1"]
    assert not _qemu_running(str(work)), "a QEMU was left running"

    # An existing file is not overwritten; --resume continues it to 10 trials without repeating a point.
    again = _cli(*args, "--trials", 10)
    assert again.returncode == 2 and "pass --resume" in again.stderr
    p = _cli(*args, "--trials", 10, "--resume")
    assert p.returncode == 0, p.stderr
    recs, _ = read_records(records)
    measured = [r for r in recs if r["status"] != "invalid"]
    points = [(r["workload"], json.dumps(r["config"], sort_keys=True)) for r in recs]
    assert len(measured) == 10 and len(points) == len(set(points))

    # deploy --records: a non-default point made the best of its workload replays; the others
    # keep the default schedule; a record of another core is ignored with a note.
    compiled, workloads = tuning.lowered_workloads(dscnn, BOARD)
    conv = next(w for w in workloads if w.op == "conv2d" and w.nodes == ["conv_2d_2"])
    config = {**conv.default, "cols": 5, "epilogue": "tile"}
    _, trace = apply_config(conv.func, BOARD.target, config)
    best = dict(next(r for r in recs if r["workload"] == conv.key), config=config, trace=trace.to_json(), count=1,
                status="ok", default=False)
    alien = dict(best, core="cortex-m7f", count=0)
    with open(records, "a") as f:
        f.write(json.dumps(best) + "\n" + json.dumps(alien) + "\n")
    p = _cli("deploy", dscnn, "--board=mps2-an386", "--emulate", "--records", records, "-o", tmp_path / "dep",
             "--report", tmp_path / "rep.json")
    assert p.returncode == 0, p.stderr
    out = p.stdout + p.stderr
    assert "record(s) from core cortex-m7f/dsp ignored" in out
    tuned_line = next(line for line in out.splitlines() if "kernels tuned" in line)
    assert " of 8 kernels tuned" in tuned_line and "the others keep the default schedule" in tuned_line
    assert json.load(open(tmp_path / "rep.json"))["verified"]
    manifest = json.load(open(tmp_path / "dep" / "manifest.json"))
    traces = {k["layer"]: k["trace"] for k in manifest["kernels"]}
    assert traces["conv_2d_2"] == trace.to_json()
    # Every other kernel keeps what it has without records (none of the tune run's records beat
    # the synthetic count of 1, and only conv_2d_2's workload has it).
    plain = flows.compile_model(dscnn, BOARD, tmp_path / "plain")
    selected = {r["workload"] for r in recs if r["status"] == "ok" and not r["default"]}
    for node, _, t in plain.kernels:
        if node.name != "conv_2d_2" and not any(node.name in w.nodes for w in workloads if w.key in selected):
            assert traces[node.name] == t.to_json(), node.name
    assert traces["conv_2d_2"] != next(t for n, _, t in plain.kernels if n.name == "conv_2d_2").to_json()


@pytest.mark.qemu
def test_ctrl_c_stops_tune_with_its_records_whole_and_no_qemu_left(dscnn, tmp_path):
    """SIGINT to tune's whole process group (a terminal's Ctrl-C) while two jobs run."""
    import os
    import signal
    import time

    records, work = tmp_path / "tune.jsonl", tmp_path / "work"
    proc = subprocess.Popen([sys.executable, "-m", "microcompile", "tune", str(dscnn), "--board=mps2-an386",
                             "--emulate", "--records", str(records), "--jobs", "2", "--trials", "40", "-o", str(work)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 600
        while (not records.exists() or len(records.read_text().splitlines()) < 3) and proc.poll() is None:
            assert time.monotonic() < deadline, "no records after 10 minutes"
            time.sleep(0.2)
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    recs, notes = read_records(records)
    assert notes == [] and len(recs) >= 3 and len(recs) < 40
    assert all(r["status"] == "ok" for r in recs if r["status"] != "invalid"), [r["error"] for r in recs]
    assert not _qemu_running(str(work)), "a QEMU was left running"


@pytest.mark.qemu
def test_batch_mode_pins_a_wrong_answer_on_its_kernel(dscnn, tmp_path):
    """One firmware measures the default of every workload, but one pointwise convolution's
    default is broken on purpose: that candidate fails (its tensor is the first to differ), the
    kernels before it count, those after it are measured again alone and count."""
    compiled, workloads = tuning.lowered_workloads(dscnn, BOARD)
    target = next(w for w in workloads if "conv_2d_2" in w.nodes)
    for w in workloads:
        fixed = tuple(Knob(k.name, (w.default[k.name],), "") for k in w.space.knobs)
        faults = ("wrong", "none") if w is target else ("none",)
        w.space = KnobSpace(w.space.family, (Knob("fault", faults, ""),) + fixed)
        w.default = {"fault": faults[0], **w.default}
    measure = flows.measurer(dscnn, BOARD, tmp_path / "work", compiled, emulate=True, port=None, timeout=5.0)
    with RecordWriter(tmp_path / "r.jsonl") as out:
        result = tune(workloads, Plan(BOARD.target, environment(BOARD), Budget(trials=len(workloads) + 1),
                                     strategy="random", schedule=_faulty, batch=True), measure.batch, out)
    recs = read_records(tmp_path / "r.jsonl")[0]
    assert result.trials == len(workloads) + 1 == len(recs)
    by = {(r["workload"], r["config"]["fault"]): r for r in recs}
    assert by[(target.key, "wrong")]["status"] == "failed"
    assert "kernel conv_2d_2" in by[(target.key, "wrong")]["error"]
    assert all(r["status"] == "ok" for k, r in by.items() if k != (target.key, "wrong")), recs
    assert not _qemu_running(str(tmp_path)), "a QEMU was left running"


@pytest.mark.qemu
def test_a_candidate_over_the_arena_budget_fails_before_it_is_built(dscnn, tmp_path):
    """tune's arena budget (by default the default schedules' arena): a candidate whose firmware
    plans a larger arena (e.g. an int32 accumulator tile) fails with the reason and
    is not built; without a budget the same candidate is measured."""
    from microcompile.schedule import InvalidConfig

    compiled, workloads = tuning.lowered_workloads(dscnn, BOARD)
    budget = compiled.plan.arena_bytes

    def larger_arena():
        for w in workloads:
            for change in ({"cache_read_at": "plane"}, {"epilogue": "tile"}, {"col_bytes_max": 8192, "cols": 0},
                           {"acc_rows": 1 << 30}):
                config = {**w.default, **change}
                if set(config) != set(w.default):
                    continue
                try:
                    _, trace = apply_config(w.func, BOARD.target, config)
                except InvalidConfig:
                    continue
                c = flows.compile_model(dscnn, BOARD, tmp_path / "c", tuned={w.key: trace})
                if c.plan.arena_bytes > budget:
                    return w, config, trace
    found = larger_arena()
    assert found, "no knob value of the DS-CNN raises its arena"
    w, config, trace = found
    tight = flows.measurer(dscnn, BOARD, tmp_path / "a", compiled, emulate=True, timeout=5.0, arena_budget=budget)
    out = tight(0, w, config, trace)
    assert out.status == "failed" and out.error.startswith("arena: arena ")
    assert f"over the arena budget of {budget:,} bytes" in out.error
    assert not (tmp_path / "a" / "job0" / "firmware.elf").exists()          # refused before the build
    free = flows.measurer(dscnn, BOARD, tmp_path / "b", compiled, emulate=True, timeout=5.0, arena_budget=None)
    out = free(0, w, config, trace)
    assert out.status == "ok" and out.count > 0, out.error
    assert not _qemu_running(str(tmp_path)), "a QEMU was left running"


@pytest.mark.qemu
def test_tune_objective_cycles_ranks_by_the_estimate_and_resumes_only_its_unit(dscnn, tmp_path):
    records = tmp_path / "tune.jsonl"
    args = ("tune", dscnn, "--board=mps2-an386", "--emulate", "--records", records, "--timeout", 5)
    p = _cli(*args, "--trials", 3, "--objective", "cycles")
    assert p.returncode == 0, p.stderr
    measured = [r for r in read_records(records)[0] if r["status"] != "invalid"]
    assert len(measured) == 3 and all(r["status"] == "ok" for r in measured), [r["error"] for r in measured]
    assert all(r["unit"] == "estimated_cycles" and r["count"] > 0 for r in measured)
    # Resumed with the other objective, the estimated records are not compared with instructions.
    p = _cli(*args, "--trials", 4, "--resume")
    assert p.returncode == 0, p.stderr
    assert "3 record(s) in another unit than --objective instructions's not resumed" in p.stdout + p.stderr
    units = [r["unit"] for r in read_records(records)[0] if r["status"] == "ok"]
    assert units.count("estimated_cycles") == 3 and units.count("instructions") == 4
    assert not _qemu_running(str(tmp_path)), "a QEMU was left running"


@pytest.mark.qemu
def test_tune_family_searches_only_that_familys_workloads(dscnn, tmp_path, capsys):
    """--family sketch: the DS-CNN's pooling (the one kernel outside the hand-written spaces) is
    tuned, its convolutions and the rest keep their defaults; the records replay."""
    from microcompile.cli import main

    records = tmp_path / "r.jsonl"
    code = main(["tune", str(dscnn), "--board=mps2-an386", "--emulate", "--trials", "2", "--family", "sketch",
                 "--patch", "off", "--records", str(records)])
    captured = capsys.readouterr()
    said = captured.out + captured.err
    assert code == 0, said
    recs = read_records(records)[0]
    assert len(recs) == 2 and {r["family"] for r in recs} == {"sketch"}
    assert {r["workload"].split(":")[0] for r in recs} == {"average_pool2d"}
    assert recs[0]["status"] == "ok" and recs[0]["config"]["sketch"] == "tile4"      # the default first
    # (a tile in scratch grows this small model's arena: refused by the arena budget, not broken)
    assert all(r["status"] == "ok" or "arena budget" in r["error"] for r in recs)
    assert "of other families than sketch keep their default schedules" in said
