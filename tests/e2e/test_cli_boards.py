"""`microcompile boards` (text and --json) and the bank options of `deploy`, `run`, `profile` and `verify`."""

import json
import re

import pytest

from tests.e2e.test_cli_errors import run_cli, tiny_model  # noqa: F401  (tiny_model is a fixture)
from microcompile.target import list_boards, load_board


def test_boards_json_lists_every_board_with_the_stated_keys():
    p = run_cli("boards", "--json")
    assert p.returncode == 0, p.stderr
    rows = json.loads(p.stdout)
    assert [r["name"] for r in rows] == list_boards()
    for r in rows:
        assert {"name", "core", "flash_bytes", "ram_bytes", "emulated", "kernels", "memory", "runners",
                "twin", "tested_on_hardware"} <= set(r)
        assert isinstance(r["emulated"], bool) and r["kernels"] in ("c", "dsp", "mve")
        assert r["tested_on_hardware"] is False
        if r["name"] != "host":
            assert r["flash_bytes"] == sum(m["size"] for m in r["memory"] if m["kind"] == "flash") > 0
            assert r["ram_bytes"] == sum(m["size"] for m in r["memory"] if m["kind"] == "ram") > 0
    by = {r["name"]: r for r in rows}
    assert (by["mps3-an547"]["core"], by["mps3-an547"]["kernels"]) == ("cortex-m55", "mve")
    assert (by["microbit"]["kernels"], by["microbit"]["flash_bytes"], by["microbit"]["ram_bytes"]) == \
        ("c", 256 * 1024, 16 * 1024)
    assert by["nucleo-f446re"]["aliases"] == ["stm32"] and by["nucleo-f446re"]["twin"] == "netduinoplus2"
    assert by["nucleo-f446re"]["probe"]["usb_vid"] == 0x0483
    assert by["nucleo-h743zi"]["emulated"] is False and by["nucleo-h743zi"]["twin"] is None
    assert by["rpi-pico"]["runners"] == ["picotool", "uf2", "openocd", "pyocd"]


def test_boards_text_names_core_banks_kernels_runners_and_twin():
    p = run_cli("boards")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    for name in list_boards():
        assert name in out
    assert "nucleo-f746zg     cortex-m7f    dsp  FLASH 1 MiB, ITCM 16 KiB, DTCM 64 KiB, SRAM 256 KiB" in out
    assert "no twin: compiled and linked only" in out and "QEMU mps3-an547 only" in out
    assert "No board has been run on silicon" in out


def test_bank_options_are_checked(tiny_model, tmp_path):  # noqa: F811
    p = run_cli("deploy", tiny_model, "--board=nucleo-f746zg", "--arena-region", "FLASH", "-o", tmp_path / "o")
    assert p.returncode == 2 and "bank FLASH of stm32f746zg is flash, not ram" in p.stderr
    assert "hint: ram banks of nucleo-f746zg: ITCM, DTCM, SRAM" in p.stderr
    p = run_cli("deploy", tiny_model, "--board=mps2-an386", "--weights-region", "QSPI", "-o", tmp_path / "o")
    assert p.returncode == 2 and "mps2-an386 has no bank 'QSPI'" in p.stderr


@pytest.mark.qemu
def test_device_commands_take_the_bank_options(tiny_model, tmp_path):  # noqa: F811
    """run, profile and verify build the agent firmware with --arena-region / --weights-region
    (the fit check's hint names them when a model's weights do not fit the default bank), and
    check them before compiling, as deploy does."""
    p = run_cli("profile", tiny_model, "--board=mps2-an386", "--emulate", "--weights-region", "QSPI",
                "-o", tmp_path / "x")
    assert p.returncode == 2 and "mps2-an386 has no bank 'QSPI'" in p.stderr and not (tmp_path / "x").exists()
    p = run_cli("profile", tiny_model, "--board=mps3-an547", "--emulate", "--arena-region", "ISRAM",
                "-o", tmp_path / "p")
    assert p.returncode == 0, p.stderr
    bank = next(b for b in load_board("mps3-an547").mcu.banks if b.name == "ISRAM")
    at = re.search(r"^\s*\S*mc_arena\s+(0x[0-9a-f]+)", (tmp_path / "p" / "firmware.map").read_text(), re.M)
    assert at, "mc_arena not in the map"
    assert bank.origin <= int(at.group(1), 16) < bank.origin + bank.size


def test_the_agent_build_id_names_the_placement(tiny_model, tmp_path):  # noqa: F811
    """The same model with its arena in another bank is another firmware: its build id differs,
    so `run`/`profile` on a board running the one flash the other."""
    import microcompile as mc

    cm = mc.compile(tiny_model, "mps3-an547")
    default = cm.build(tmp_path / "a", agent=True).build_id
    moved = cm.build(tmp_path / "b", agent=True, options=mc.BuildOptions(arena_region="ISRAM")).build_id
    assert default and moved and default != moved
    assert cm.build(tmp_path / "c", agent=True).build_id == default
