"""`microcompile flash`: the command line of every runner, probe detection, and every error path,
with fake runners on PATH (scripts that record their arguments and answer as told) and a fake
pyocd package for its Python API. No hardware: the real runners are never called."""

import json
import os
import subprocess
import sys
import textwrap
import time

import pytest

from support import fake_runners as fake
from support.fake_artifact import needs_arm, write_artifact, benchmark_input
from microcompile.errors import BoardError, DeviceError
from microcompile.project import BuildOptions, build, flash, generate
from microcompile.project import flash_runners as fr
from microcompile.project.uf2 import from_uf2
from microcompile.target import load_board

RUNNER_TOOLS = ["st-flash", "st-info", "openocd", "STM32_Programmer_CLI", "nrfjprog", "picotool"]


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    """The tiny fake model built for three real boards (their PLATFORM=board firmware)."""
    root = tmp_path_factory.mktemp("flash")
    art = write_artifact(root / "artifact")
    x = benchmark_input((1, 4, 4, 1))
    out = {}
    for board in ("nucleo-f446re", "rpi-pico", "nrf52840dk"):
        out[board] = generate(art, board, root / board, [x], BuildOptions(emulate=False))
        build(out[board], progress=lambda line: None)
    return out


@pytest.fixture
def tools(tmp_path, monkeypatch):
    """Fake runners installed, and nothing else on PATH (so no real runner is found)."""
    bin_dir = fake.install(tmp_path, RUNNER_TOOLS)
    fake.link(bin_dir, "arm-none-eabi-objcopy")
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setattr(fr.PyOcd, "available", lambda self: False)
    monkeypatch.setattr(fr, "uf2_mount_roots", lambda: [])
    return bin_dir


def _remove(bin_dir, *names):
    for n in names:
        (bin_dir / n).unlink()


def _files(project):
    return {k: project / f"firmware.{k}" for k in ("elf", "bin", "hex")}


# --- the command line of each runner ----------------------------------------------------

def test_command_lines():
    f446, pico, nrf = load_board("stm32"), load_board("rpi-pico"), load_board("nrf52840dk")
    files = {k: f"firmware.{k}" for k in ("elf", "bin", "hex", "uf2")}
    assert fr.RUNNERS["st-flash"].command(f446, files, "0671FF") == \
        ["st-flash", "--reset", "--serial", "0671FF", "write", "firmware.bin", "0x08000000"]
    assert fr.RUNNERS["st-flash"].command(f446, files, None) == \
        ["st-flash", "--reset", "write", "firmware.bin", "0x08000000"]
    assert fr.RUNNERS["stm32cubeprogrammer"].command(f446, files, "0671FF") == \
        ["STM32_Programmer_CLI", "-c", "port=SWD", "sn=0671FF", "-w", "firmware.hex", "-v", "-rst"]
    assert fr.RUNNERS["openocd"].command(f446, files, "0671FF") == \
        ["openocd", "-f", "board/st_nucleo_f4.cfg", "-c", "adapter serial 0671FF", "-c",
         "program firmware.elf verify reset exit"]
    assert fr.RUNNERS["openocd"].command(pico, files, None) == \
        ["openocd", "-f", "interface/cmsis-dap.cfg", "-f", "target/rp2040.cfg", "-c",
         "program firmware.elf verify reset exit"]
    assert fr.RUNNERS["pyocd"].command(f446, files, None) == \
        ["pyocd", "flash", "--target", "stm32f446retx", "firmware.hex"]
    assert fr.RUNNERS["nrfjprog"].command(nrf, files, "683512345") == \
        ["nrfjprog", "-f", "NRF52", "-s", "683512345", "--program", "firmware.hex", "--sectorerase", "--verify",
         "--reset"]
    assert fr.RUNNERS["picotool"].command(pico, files, None) == ["picotool", "load", "-v", "-x", "firmware.elf"]
    assert fr.RUNNERS["uf2"].command(pico, files, None) is None   # a file copy, not a command


@needs_arm
def test_make_flash_uses_the_first_runner(built):
    text = (built["nucleo-f446re"] / "Makefile").read_text()
    assert "st-flash --reset write firmware.bin 0x08000000" in text
    assert "picotool load -v -x firmware.elf" in (built["rpi-pico"] / "Makefile").read_text()
    assert "nrfjprog -f NRF52 --program firmware.hex" in (built["nrf52840dk"] / "Makefile").read_text()


# --- errors, each with what to do ---------------------------------------------------------

@needs_arm
def test_no_runner_installed_names_the_install_commands(built, tools):
    _remove(tools, *RUNNER_TOOLS)
    with pytest.raises(DeviceError) as info:
        flash(built["nucleo-f446re"], show_bar=False, progress=lambda s: None)
    msg = str(info.value)
    assert "no flash tool for nucleo-f446re is installed" in msg
    assert "sudo apt-get install stlink-tools" in msg and "sudo apt-get install openocd" in msg
    assert "pip install 'microcompile[flash]'" in msg and "STM32CubeProgrammer from st.com" in msg
    # where the firmware is, and the emulated twin that can run it
    assert f"the firmware is at {built['nucleo-f446re'].resolve() / 'firmware.elf'}" in msg
    assert "or run it on the QEMU twin (netduinoplus2) with --emulate" in msg


@needs_arm
def test_no_probe_attached(built, tools):
    _remove(tools, "openocd")            # openocd cannot list probes: leave only listing runners
    fake.behave(tools, "st-info", [("--probe", "Found 0 stlink programmers\n", 0)])
    with pytest.raises(DeviceError) as info:
        flash(built["nucleo-f446re"], show_bar=False, progress=lambda s: None)
    msg = str(info.value)
    assert "no ST-LINK/V2-1 found for nucleo-f446re" in msg and "USB ID 0483:374b" in msg
    assert not any(c[0] == "st-flash" for c in fake.calls(tools))


@needs_arm
def test_openocd_alone_finds_out_by_trying(built, tools):
    _remove(tools, "st-flash", "st-info", "STM32_Programmer_CLI")
    fake.behave(tools, "openocd", [("program", "Error: open failed\nin procedure 'program'\n", 1)])
    with pytest.raises(DeviceError, match="no probe attached: openocd found no debug probe"):
        flash(built["nucleo-f446re"], show_bar=False, progress=lambda s: None)
    fake.behave(tools, "openocd", [])
    result = flash(built["nucleo-f446re"], show_bar=False, progress=lambda s: None)
    assert result.runner == "openocd"
    last = fake.calls(tools)[-1]
    assert last[:3] == ["openocd", "-f", "board/st_nucleo_f4.cfg"]
    assert last[-1] == f"program {built['nucleo-f446re'].resolve() / 'firmware.elf'} verify reset exit"


@needs_arm
def test_several_probes_need_probe_option(built, tools):
    fake.behave(tools, "st-info", [("--probe", fake.ST_INFO_TWO, 0)])
    with pytest.raises(DeviceError) as info:
        flash(built["nucleo-f446re"], show_bar=False, progress=lambda s: None)
    msg = str(info.value)
    assert "2 debug probes are attached" in msg and "0671FF495457725187074012" in msg
    assert "066DFF555054877567014727" in msg and "--probe" in msg
    result = flash(built["nucleo-f446re"], probe="066DFF555054877567014727", show_bar=False,
                   progress=lambda s: None)
    assert (result.runner, result.probe) == ("st-flash", "066DFF555054877567014727")
    write = [c for c in fake.calls(tools) if c[0] == "st-flash"][-1]
    assert write[:4] == ["st-flash", "--reset", "--serial", "066DFF555054877567014727"]
    assert write[-2:] == [str(built["nucleo-f446re"].resolve() / "firmware.bin"), "0x08000000"]
    # a probe no listing runner sees goes to openocd (which cannot list, so it tries) ...
    assert flash(built["nucleo-f446re"], probe="nope", show_bar=False, progress=lambda s: None).runner == "openocd"
    assert fake.calls(tools)[-1][3:5] == ["-c", "adapter serial nope"]
    # ... and without openocd it is an error listing the probes that are there
    _remove(tools, "openocd")
    with pytest.raises(DeviceError, match="no attached probe has id 'nope'; attached: 0671FF495457725187074012"):
        flash(built["nucleo-f446re"], probe="nope", show_bar=False, progress=lambda s: None)


@needs_arm
def test_probe_attached_to_another_chip(built, tools):
    fake.behave(tools, "st-info", [("--probe", fake.ST_INFO_F746, 0)])
    with pytest.raises(DeviceError) as info:
        flash(built["nucleo-f446re"], show_bar=False, progress=lambda s: None)
    msg = str(info.value)
    assert "not nucleo-f446re's stm32f446re" in msg and "chip id 0x449" in msg
    assert "--board=nucleo-f746zg" in msg           # the boards whose MCU has that chip id
    assert not any(c[0] == "st-flash" for c in fake.calls(tools))


@needs_arm
def test_cubeprogrammer_checks_the_chip_before_writing(built, tools):
    _remove(tools, "st-flash", "st-info")
    fake.behave(tools, "STM32_Programmer_CLI", [
        ("--list", "ST-Link Probe 0 :\n   ST-LINK SN  : 0671FF495457725187074012\n", 0),
        ("-w", "Download verified successfully\n", 0),
        ("port=SWD", "ST-LINK SN  : 0671FF495457725187074012\nDevice ID   : 0x449\n", 0)])
    with pytest.raises(DeviceError, match="not nucleo-f446re's stm32f446re"):
        flash(built["nucleo-f446re"], show_bar=False, progress=lambda s: None)
    assert not any("-w" in c for c in fake.calls(tools))    # nothing was written
    fake.behave(tools, "STM32_Programmer_CLI", [
        ("--list", "ST-Link Probe 0 :\n   ST-LINK SN  : 0671FF495457725187074012\n", 0),
        ("-w", "Download verified successfully\n", 0),
        ("port=SWD", "Device ID   : 0x421\n", 0)])
    result = flash(built["nucleo-f446re"], show_bar=False, progress=lambda s: None)
    assert result.runner == "stm32cubeprogrammer"
    assert fake.calls(tools)[-1][1:5] == ["-c", "port=SWD", "sn=0671FF495457725187074012", "-w"]


@needs_arm
def test_failed_verification(built, tools):
    fake.behave(tools, "st-info", [("--probe", fake.ST_INFO_ONE, 0)])
    fake.behave(tools, "st-flash", [("write", "Flash written\nERROR: Verification of flash failed at offset: 0x1000\n", 255)])
    with pytest.raises(DeviceError) as info:
        flash(built["nucleo-f446re"], show_bar=False, progress=lambda s: None)
    msg = str(info.value)
    assert "failed verification" in msg and "Verification of flash failed at offset: 0x1000" in msg
    assert "erase the chip" in msg


@needs_arm
def test_st_flash_success_with_progress(built, tools):
    fake.behave(tools, "st-info", [("--probe", fake.ST_INFO_ONE, 0)])
    fake.behave(tools, "st-flash", [("write", "  10% \r  55% \r 100%\nFlash written and verified! jolly good!\n", 0)])
    seen = []
    runner, probe = fr.flash_firmware(load_board("stm32"), _files(built["nucleo-f446re"]), progress=seen.append)
    assert (runner, probe.id) == ("st-flash", "0671FF495457725187074012") and probe.matches is True
    assert seen and seen[-1] == 1.0 and 0.55 in seen


@needs_arm
def test_nrfjprog(built, tools):
    fake.behave(tools, "nrfjprog", [("--ids", "683512345\n", 0), ("--deviceversion", "NRF52840_xxAA_REV2\n", 0),
                                    ("--program", "Verified OK.\n", 0)])
    result = flash(built["nrf52840dk"], show_bar=False, progress=lambda s: None)
    assert (result.runner, result.probe) == ("nrfjprog", "683512345")
    assert fake.calls(tools)[-1][:5] == ["nrfjprog", "-f", "NRF52", "-s", "683512345"]
    fake.behave(tools, "nrfjprog", [("--ids", "683512345\n", 0), ("--deviceversion", "NRF51xxx_xxAA_REV3\n", 0)])
    with pytest.raises(DeviceError, match="not nrf52840dk's nrf52840"):
        flash(built["nrf52840dk"], show_bar=False, progress=lambda s: None)


@needs_arm
def test_picotool_and_uf2(built, tools, tmp_path, monkeypatch):
    fake.behave(tools, "picotool", [("info", "No accessible RP-series devices in BOOTSEL mode were found.\n", 1)])
    _remove(tools, "openocd")
    with pytest.raises(DeviceError, match="no Raspberry Pi Debug Probe"):
        flash(built["rpi-pico"], show_bar=False, progress=lambda s: None)
    # a mounted RPI-RP2 drive: firmware.uf2 is copied there
    drive = tmp_path / "RPI-RP2"
    drive.mkdir()
    (drive / "INFO_UF2.TXT").write_text("UF2 Bootloader v3.0\nModel: Raspberry Pi RP2\nBoard-ID: RPI-RP2\n")
    monkeypatch.setattr(fr, "uf2_mount_roots", lambda: [drive])
    result = flash(built["rpi-pico"], show_bar=False, progress=lambda s: None)
    assert (result.runner, result.probe) == ("uf2", str(drive))   # picotool (first) sees no device
    blocks = from_uf2((drive / "firmware.uf2").read_bytes())
    image = b"".join(blocks[a] for a in sorted(blocks))
    binary = (built["rpi-pico"] / "firmware.bin").read_bytes()
    assert min(blocks) == 0x10000000 and image[:len(binary)] == binary
    assert image[:4] == bytes.fromhex("0a4b0021")     # boot2 first in flash
    # picotool sees the same board over USB: one probe, and picotool, first in the board's order, flashes
    fake.behave(tools, "picotool", [("info", "Program Information\n name: firmware\n Device: RP2040\n", 0)])
    result = flash(built["rpi-pico"], show_bar=False, progress=lambda s: None)
    assert result.runner == "picotool" and fake.calls(tools)[-1][:4] == ["picotool", "load", "-v", "-x"]


@pytest.fixture
def forget_pyocd():
    """The fake pyocd package must not outlive its test."""
    yield
    for name in [m for m in sys.modules if m == "pyocd" or m.startswith("pyocd.")]:
        del sys.modules[name]


@needs_arm
def test_pyocd_api(built, tools, tmp_path, monkeypatch, forget_pyocd):
    """The pyocd runner through a fake pyocd package: probe listing, board target check, write,
    read-back verification."""
    _remove(tools, *RUNNER_TOOLS)
    pkg = tmp_path / "fakepyocd" / "pyocd"
    (pkg / "core").mkdir(parents=True)
    (pkg / "flash").mkdir()
    for d in (pkg, pkg / "core", pkg / "flash"):
        (d / "__init__.py").write_text("")
    (pkg / "core" / "helpers.py").write_text(textwrap.dedent("""
        import json, os
        def state(): return json.loads(os.environ["FAKE_PYOCD"])
        class Info:
            @property
            def target(self): return state()["board_target"]
        class Probe:
            unique_id = "0240000034544e45001b00028aa9001e"
            description = "NUCLEO-F446RE [stm32f446re]"
            associated_board_info = Info()
        class Target:
            def __init__(self): self.memory = {}
            def read_memory_block8(self, addr, n):
                data = open(state()["image"], "rb").read()
                if state().get("corrupt"):
                    data = bytes([data[0] ^ 1]) + data[1:]
                return list(data[:n])
            def reset(self): pass
        class Session:
            target = Target()
            def __enter__(self): return self
            def __exit__(self, *a): return False
        class ConnectHelper:
            @staticmethod
            def get_all_connected_probes(blocking=True, unique_id=None, print_wait_message=True):
                return [Probe()]
            @staticmethod
            def session_with_chosen_probe(**kw):
                open(state()["log"], "w").write(json.dumps(kw))
                return Session()
    """))
    (pkg / "flash" / "file_programmer.py").write_text(textwrap.dedent("""
        class FileProgrammer:
            def __init__(self, session, progress=None): self.progress = progress
            def program(self, path):
                for f in (0.25, 1.0):
                    self.progress(f)
    """))
    monkeypatch.syspath_prepend(str(pkg.parent))
    forget = [m for m in sys.modules if m == "pyocd" or m.startswith("pyocd.")]
    assert not forget, "a real pyocd is imported; this test needs the fake one"
    monkeypatch.setattr(fr.PyOcd, "available", lambda self: self._api() is not None)
    log = tmp_path / "pyocd.json"
    state = {"board_target": "stm32f446re", "image": str(built["nucleo-f446re"] / "firmware.bin"), "log": str(log)}
    monkeypatch.setenv("FAKE_PYOCD", json.dumps(state))
    result = flash(built["nucleo-f446re"], show_bar=False, progress=lambda s: None)
    assert (result.runner, result.probe) == ("pyocd", "0240000034544e45001b00028aa9001e")
    assert json.loads(log.read_text())["target_override"] == "stm32f446retx"
    monkeypatch.setenv("FAKE_PYOCD", json.dumps({**state, "corrupt": True}))
    with pytest.raises(DeviceError, match="(?s)failed verification.*read back differs from firmware.bin at 0x08000000"):
        flash(built["nucleo-f446re"], show_bar=False, progress=lambda s: None)
    monkeypatch.setenv("FAKE_PYOCD", json.dumps({**state, "board_target": "nrf52840"}))
    with pytest.raises(DeviceError, match="not nucleo-f446re's stm32f446re"):
        flash(built["nucleo-f446re"], show_bar=False, progress=lambda s: None)


# --- what is flashed, and when not -----------------------------------------------------------

def test_flash_emulator_only_board(artifact, test_input, tmp_path):
    out = generate(artifact, "mps2-an386", tmp_path / "p", [test_input], BuildOptions(emulate=True))
    with pytest.raises(DeviceError, match="emulator only"):
        flash(out)


@needs_arm
def test_flash_rebuilds_a_twin_build_for_the_board(artifact, test_input, tmp_path, monkeypatch):
    out = generate(artifact, "stm32", tmp_path / "p", [test_input], BuildOptions(emulate=True))
    build(out, progress=lambda line: None)
    assert (out / "build" / "platform").read_text().strip() == "twin"
    for r in fr.RUNNERS.values():   # whatever is installed on this machine, use none of it
        monkeypatch.setattr(type(r), "available", lambda self: False)
    lines = []
    with pytest.raises(DeviceError, match="no flash tool for nucleo-f446re is installed"):
        flash(out, show_bar=False, progress=lines.append)
    assert (out / "build" / "platform").read_text().strip() == "board"
    assert any(line.startswith("[flash] building for the real stm32f446re") for line in lines)
    assert any("fit on nucleo-f446re: fits" in line for line in lines)


@needs_arm
def test_flash_a_bare_elf_and_check_its_board(built, tools):
    fake.behave(tools, "st-info", [("--probe", fake.ST_INFO_ONE, 0)])
    elf = built["nucleo-f446re"] / "firmware.elf"
    with pytest.raises(Exception, match="needs --board"):
        flash(elf)
    result = flash(elf, board="stm32", show_bar=False, progress=lambda s: None)
    assert result.runner == "st-flash" and result.fit.fits
    write = fake.calls(tools)[-1]
    assert write[0] == "st-flash" and write[-2].endswith("firmware.bin")
    # an RP2040 firmware is not for an STM32 board: its sections lie outside every bank
    with pytest.raises(BoardError, match="lies outside every bank of nucleo-f446re"):
        flash(built["rpi-pico"] / "firmware.elf", board="stm32", show_bar=False, progress=lambda s: None)
    with pytest.raises(BoardError, match="was generated for rpi-pico, not nucleo-f446re"):
        flash(built["rpi-pico"], board="stm32", show_bar=False, progress=lambda s: None)


@needs_arm
def test_a_firmware_that_does_not_fit_is_never_flashed(tmp_path, tools, test_input, monkeypatch):
    # The manifest under-reports the weights, so only the link finds out; `flash` then refuses.
    art = write_artifact(tmp_path / "a", weights_bytes=600 * 1024)
    m = json.loads((art / "manifest.json").read_text())
    m["weights_bytes"] = 3
    (art / "manifest.json").write_text(json.dumps(m))
    out = generate(art, "stm32", tmp_path / "p", [test_input], BuildOptions(emulate=False))
    fake.behave(tools, "st-info", [("--probe", fake.ST_INFO_ONE, 0)])
    monkeypatch.setenv("PATH", f"{tools}:{fake.ORIGINAL_PATH}")   # make and gcc, for the build
    with pytest.raises(BoardError, match="does not fit nucleo-f446re"):
        flash(out, show_bar=False, progress=lambda s: None)
    assert not any(c[0] == "st-flash" for c in fake.calls(tools))


def test_run_tool_kills_a_hung_tool(tmp_path):
    bin_dir = fake.install(tmp_path, ["openocd"])
    fake.behave(bin_dir, "openocd", [("", "sleep:30", 0)])
    start = time.monotonic()
    with pytest.raises(fr.FlashFailure, match="did not finish within 0.5 s"):
        fr.run_tool([str(bin_dir / "openocd")], timeout=0.5)
    assert time.monotonic() - start < 10
    ps = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert str(bin_dir / "openocd") not in ps


@needs_arm
def test_cli_flash_errors_exit_2_without_traceback(built, tools):
    _remove(tools, *RUNNER_TOOLS)
    env = dict(os.environ)
    proc = subprocess.run([sys.executable, "-m", "microcompile", "flash", str(built["nucleo-f446re"])],
                          capture_output=True, text=True, env=env, cwd=os.path.dirname(os.path.dirname(__file__)) + "/..")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "error: " in proc.stderr and "hint: " in proc.stderr
