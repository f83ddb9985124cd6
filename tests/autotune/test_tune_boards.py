"""Several real boards at once (`tune --jobs N` without --emulate), against fakes only: no real
board is attached here. The pool in the tuning loop (a lost board is dropped with a note and
its candidate measured on another), which boards (tune/boards.py: --port/--probe paired in
order, or discovered by USB id with the ports listed by a faked pyserial), the exit-2 error
when fewer boards than --jobs are found, and the Measurer's wiring with fake flash tools on
PATH (tests/project/fake_runners.py) and pseudo-terminals as the boards' serial ports: each
slot flashes with its own probe and talks over its own port; a probe whose flash fails, or a
port that vanished, loses the board; a board that does not answer is the candidate's failure
(a hang), not the board's."""

from __future__ import annotations

import json
import os
from types import SimpleNamespace

import pytest

from microcompile.errors import UserError
from microcompile.target import load_board
from microcompile.autotune import Budget, Outcome, Plan, RecordWriter, read_records, tune
from microcompile.autotune.boards import BoardLink, resolve_boards
from tests.autotune.test_tune_units import ENV, _W, _cost, _schedule

STM32 = load_board("nucleo-f446re")
A, B = "0671FF495457725187074012", "066DFF555054877567014727"     # the probes fake_runners.ST_INFO_TWO lists


def test_a_lost_board_is_dropped_and_its_candidate_measured_on_another(tmp_path):
    slots, notes = [], []

    def measure(slot, w, config, trace):
        slots.append((slot, json.dumps(config, sort_keys=True)))
        if slot == 1:
            return Outcome("lost", error="board /dev/ttyACM1 (probe B): flash failed: no probe")
        return Outcome("ok", count=int(_cost(config)), unit="instructions")
    with RecordWriter(tmp_path / "r.jsonl") as out:
        result = tune([_W()], Plan(None, ENV, Budget(trials=8), jobs=3, strategy="random", seed=1,
                                       schedule=_schedule), measure, out, note=notes.append)
    recs = [r for r in read_records(tmp_path / "r.jsonl")[0] if r["status"] != "invalid"]
    assert result.trials == len(recs) == 8 and all(r["status"] == "ok" for r in recs)
    lost = [c for s, c in slots if s == 1]
    assert len(lost) == 1                                   # never used again after it was lost
    assert [s for s, c in slots].count(1) == 1 and {s for s, _ in slots} == {0, 1, 2}
    assert lost[0] in [json.dumps(r["config"], sort_keys=True) for r in recs]      # measured elsewhere
    assert len(notes) == 1 and notes == result.notes and not result.devices_lost
    assert notes[0].startswith("job 1 dropped from the pool: board /dev/ttyACM1 (probe B)")
    assert "go to the other 2 job(s)" in notes[0]


def test_when_every_board_is_lost_the_run_stops_with_a_note(tmp_path):
    def measure(slot, w, config, trace):
        return Outcome("lost", error=f"board {slot}: its serial port vanished")
    with RecordWriter(tmp_path / "r.jsonl") as out:
        result = tune([_W()], Plan(None, ENV, Budget(trials=8), jobs=2, strategy="random", schedule=_schedule),
                      measure, out)
    assert result.trials == 0 and result.devices_lost
    assert not [r for r in read_records(tmp_path / "r.jsonl")[0] if r["status"] != "invalid"]
    assert any("no job is left" in n for n in result.notes)
    assert result.notes[-1].endswith("candidate(s) not measured: every job's device was lost")


def _attach(monkeypatch, *boards):
    """Fake what pyserial lists: (device, vid, pid, USB serial number)."""
    from serial.tools import list_ports

    fake = [SimpleNamespace(device=d, vid=v, pid=p, serial_number=sn) for d, v, p, sn in boards]
    monkeypatch.setattr(list_ports, "comports", lambda: fake)


@pytest.fixture
def ports(tmp_path):
    paths = [tmp_path / f"ttyACM{i}" for i in range(3)]
    for p in paths:
        p.touch()
    return [str(p) for p in paths]


def test_boards_are_paired_in_order_or_discovered_by_usb_id(monkeypatch, ports):
    st = (0x0483, 0x374B)
    _attach(monkeypatch, (ports[1], *st, B), (ports[0], *st, A), ("/dev/ttyUSB0", 0x0403, 0x6001, "FT1"))
    assert resolve_boards(STM32, 2, [], []) == [BoardLink(A, ports[0]), BoardLink(B, ports[1])]
    assert resolve_boards(STM32, 1, [], []) == [BoardLink(None, None)]        # one job: as before
    assert resolve_boards(STM32, 2, [ports[1], ports[0]], ["X", "Y"]) == [BoardLink("X", ports[1]),
                                                                        BoardLink("Y", ports[0])]
    assert resolve_boards(STM32, 2, [ports[1], ports[0]], []) == [BoardLink(B, ports[1]), BoardLink(A, ports[0])]
    assert resolve_boards(STM32, 2, [], [B, A]) == [BoardLink(B, ports[1]), BoardLink(A, ports[0])]
    assert resolve_boards(STM32, 1, [], [A, B]) == [BoardLink(A, ports[0])]     # more boards than jobs
    with pytest.raises(UserError, match=r"--jobs 3 on real boards needs 3 nucleo-f446re boards; found 2: "
                                        rf"{ports[0]} \(probe {A}\), {ports[1]} \(probe {B}\)"):
        resolve_boards(STM32, 3, [], [])
    with pytest.raises(UserError, match=r"2 --port but 1 --probe"):
        resolve_boards(STM32, 2, ports[:2], ["X"])
    with pytest.raises(UserError, match=r"--port .*ttyACM0 is given twice"):
        resolve_boards(STM32, 2, [ports[0], ports[0]], [])
    with pytest.raises(UserError, match=r"cannot tell which probe flashes the board on .*ttyACM2"):
        resolve_boards(STM32, 2, [ports[0], ports[2]], [])
    with pytest.raises(UserError, match=r"serial port .*ttyACM9 does not exist"):
        resolve_boards(STM32, 2, [ports[0], ports[0][:-1] + "9"], ["X", "Y"])
    _attach(monkeypatch, (ports[0], *st, A), (ports[1], *st, None))
    with pytest.raises(UserError, match="USB serial number of .*ttyACM1 is unknown"):
        resolve_boards(STM32, 2, [], [])


def test_tune_with_fewer_boards_than_jobs_exits_2_naming_them(monkeypatch, ports, tmp_path, capsys):
    from microcompile.cli import main

    _attach(monkeypatch, (ports[0], 0x0483, 0x374B, A))
    model = tmp_path / "m.tflite"
    model.write_bytes(b"")
    code = main(["tune", str(model), "--board=stm32", "--jobs", "2", "--trials", "4",
                 "--records", str(tmp_path / "r.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and f"needs 2 nucleo-f446re boards; found 1: {ports[0]} (probe {A})" in err
    assert "Traceback" not in err and not (tmp_path / "r.jsonl").exists()
    code = main(["tune", str(model), "--board=stm32", "--jobs", "2", "--trials", "4", "--port", ports[0],
                 "--port", ports[1], "--probe", A, "--records", str(tmp_path / "r.jsonl")])
    assert code == 2 and "2 --port but 1 --probe" in capsys.readouterr().err
    code = main(["tune", str(model), "--board=mps2-an386", "--emulate", "--probe", A, "--trials", "4",
                 "--records", str(tmp_path / "r.jsonl")])
    assert code == 2 and "--probe names a real board's debug probe" in capsys.readouterr().err


@pytest.fixture
def flash_tools(tmp_path, monkeypatch):
    """Fake flash tools first on PATH (the real make and gcc after them, for the build); st-info
    lists probes A and B, st-flash writes through A and fails through B."""
    from microcompile.project import flash_runners as fr
    from support import fake_runners as fake

    bin_dir = fake.install(tmp_path, ["st-flash", "st-info", "openocd", "STM32_Programmer_CLI"])
    monkeypatch.setenv("PATH", f"{bin_dir}:{fake.ORIGINAL_PATH}")
    monkeypatch.setattr(fr.PyOcd, "available", lambda self: False)
    monkeypatch.setattr(fr, "uf2_mount_roots", lambda: [])
    fake.behave(bin_dir, "st-info", [("--probe", fake.ST_INFO_TWO, 0)])
    fake.behave(bin_dir, "st-flash", [(B, "ERROR: could not write to flash: target not responding\n", 255),
                                      ("write", "Flash written and verified! jolly good!\n", 0)])
    fake.behave(bin_dir, "openocd", [("", "Error: open failed\n", 1)])
    fake.behave(bin_dir, "STM32_Programmer_CLI", [("", "Error: No debug probe detected.\n", 1)])
    return bin_dir, fake


def test_each_board_flashes_with_its_probe_and_a_failing_one_is_lost(tmp_path, flash_tools):
    from microcompile.autotune import run as tuning
    from support import flows
    from microcompile.schedule import apply_config
    from support import multi_op_models as M

    bin_dir, fake = flash_tools
    model = M.write("residual_int8", tmp_path)
    compiled, workloads = tuning.lowered_workloads(model, STM32)
    w = workloads[0]
    _, trace = apply_config(w.func, STM32.target, w.default)
    masters = []
    try:
        links = []
        for probe in (A, B):
            master, slave = os.openpty()          # a serial port nothing answers on
            masters += [master, slave]
            links.append(BoardLink(probe, os.ttyname(slave)))
        m = flows.measurer(model, STM32, tmp_path / "work", compiled, emulate=False, timeout=0.5, boards=links)
        first = m(0, w, w.default, trace)
        assert first.status == "failed" and first.error.startswith("hang:"), first     # the board stays
        writes = [c for c in fake.calls(bin_dir) if c[0] == "st-flash"]
        assert writes and all(c[2:4] == ["--serial", A] for c in writes), writes
        second = m(1, w, w.default, trace)
        assert second.status == "lost", second
        assert second.error.startswith(f"board {links[1].port} (probe {B}): flash failed"), second.error
        assert [c[2:4] for c in fake.calls(bin_dir) if c[0] == "st-flash"][-1] == ["--serial", B]
        # Board A's port vanishes (unplugged): lost too.
        m.boards[0] = BoardLink(A, str(tmp_path / "ttyGONE"))
        third = m(0, w, w.default, trace)
        assert third.status == "lost" and "its serial port vanished" in third.error, third
    finally:
        for fd in masters:
            os.close(fd)
