"""The flash runners' command lines (boards/nucleo-f446re.toml), through fake st-flash,
openocd and pyocd programs on PATH that record their arguments: tried in order, the firmware
paths filled in, the first success wins, and when all fail the error names each failure and
the command to flash by hand. (No probe here: the real tools are only ever run on a lab PC.)"""

from __future__ import annotations

import json
import os
import stat
import sys

import pytest

from fake_artifact import needs_arm
from microcompile.errors import DeviceError
from microcompile.project import build, flash, generate

FAKE = """#!{python}
import json, sys
with open({log!r}, "a") as f:
    f.write(json.dumps([{name!r}] + sys.argv[1:]) + "\\n")
print({message!r}, file=sys.stderr)
sys.exit({code})
"""


def _fake_tools(tmp_path, monkeypatch, codes: dict[str, int]):
    """Fake flash tools first on PATH; each appends its argv to calls.jsonl and exits with codes[name]."""
    bindir, log = tmp_path / "bin", tmp_path / "calls.jsonl"
    bindir.mkdir()
    for name, code in codes.items():
        tool = bindir / name
        tool.write_text(FAKE.format(python=sys.executable, log=str(log), name=name, code=code,
                                    message="Error: no probe found" if code else "done"))
        tool.chmod(tool.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    return log


def _calls(log) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


@pytest.fixture(scope="module")
def board_project(artifact, test_input, tmp_path_factory):
    """One stm32 project, built for its QEMU twin (flash rebuilds it for the board once)."""
    out = generate(artifact, "stm32", tmp_path_factory.mktemp("flash") / "p", [test_input], emulated=True)
    build(out, progress=lambda line: None)
    return out


@needs_arm
def test_runners_in_order_with_the_firmware_paths(board_project, tmp_path, monkeypatch):
    log = _fake_tools(tmp_path, monkeypatch, {"st-flash": 1, "openocd": 1, "pyocd": 0})
    lines = []
    assert flash(board_project, progress=lines.append) == "pyocd"
    fw = {k: str((board_project / f"firmware.{k}").resolve()) for k in ("elf", "bin", "hex")}
    assert _calls(log) == [
        ["st-flash", "--reset", "write", fw["bin"], "0x08000000"],
        ["openocd", "-f", "board/st_nucleo_f4.cfg", "-c", f"program {fw['elf']} verify reset exit"],
        ["pyocd", "flash", "--target", "stm32f446retx", fw["hex"]],
    ]
    assert (board_project / "build" / "platform").read_text().strip() == "board"   # rebuilt for the board
    assert any("[flash] done with pyocd" in line for line in lines)


@needs_arm
def test_first_success_stops(board_project, tmp_path, monkeypatch):
    log = _fake_tools(tmp_path, monkeypatch, {"st-flash": 0, "openocd": 0, "pyocd": 0})
    assert flash(board_project, progress=lambda line: None) == "st-flash"
    assert [c[0] for c in _calls(log)] == ["st-flash"]


@needs_arm
def test_all_runners_failing_names_each_failure(board_project, tmp_path, monkeypatch):
    log = _fake_tools(tmp_path, monkeypatch, {"st-flash": 3, "openocd": 1, "pyocd": 2})
    with pytest.raises(DeviceError) as e:
        flash(board_project, progress=lambda line: None)
    msg = str(e.value)
    for name in ("st-flash", "openocd", "pyocd"):
        assert f"{name}: failed (Error: no probe found)" in msg
    assert "st-flash --reset write" in e.value.hint and "firmware.bin" in e.value.hint
    assert len(_calls(log)) == 3
