"""End to end: generate -> build -> run, on the host, in QEMU (mps2-an386, stm32 twin)."""

import json
import shutil
import subprocess

import numpy as np
import pytest

from support.fake_artifact import expected_outputs, needs_arm, needs_qemu, write_artifact
from microcompile.errors import BoardError, ToolchainError
from microcompile.project import BuildOptions, build, generate, run_emulated, run_host


def _check(result, x):
    for got, want in zip(result.outputs, expected_outputs(x), strict=True):
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)


def test_host_end_to_end(artifact, test_input, tmp_path):
    out = generate(artifact, "host", tmp_path / "p", [test_input])
    lines = []
    build(out, progress=lines.append)
    assert "[build] CC model/model.c" in lines
    result = run_host(out)
    _check(result, test_input)
    assert result.instructions is None


@needs_arm
@needs_qemu
@pytest.mark.qemu
@pytest.mark.parametrize("board, per_tick", [("mps2-an386", 40), ("stm32", 1), ("mps2-an385", 40)])
def test_qemu_end_to_end(artifact, test_input, tmp_path, board, per_tick):
    out = generate(artifact, board, tmp_path / "p", [test_input], BuildOptions(emulate=True))
    report = build(out, progress=lambda line: None)
    assert report.flash == report.text + report.data and report.flash > 1000
    assert report.sections[".stack_reserve"] == 4096
    result = run_emulated(out, timeout=30)
    _check(result, test_input)
    assert result.ticks > 0 and result.instructions == result.ticks * per_tick
    assert "MC-BEGIN" in result.console
    # deterministic count
    assert run_emulated(out / "firmware.elf", timeout=30).ticks == result.ticks


@needs_arm
def test_standalone_make_for_both_platforms(artifact, test_input, tmp_path):
    out = generate(artifact, "stm32", tmp_path / "p", [test_input], BuildOptions(emulate=False))
    env = {"PATH": "/usr/bin:/bin"}  # no python, no microcompile involved
    for platform in ("board", "twin"):
        proc = subprocess.run(["make", f"PLATFORM={platform}"], cwd=out, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert "warning" not in (proc.stdout + proc.stderr).lower()
        assert (out / "build" / "platform").read_text().strip() == platform
    for name in ("firmware.elf", "firmware.bin", "firmware.hex", "firmware.map"):
        assert (out / name).is_file()
    assert "filename" in proc.stdout  # arm-none-eabi-size printed at the end


@needs_arm
def test_run_emulated_refuses_real_board_build(artifact, test_input, tmp_path):
    from microcompile.errors import DeviceError
    out = generate(artifact, "stm32", tmp_path / "p", [test_input], BuildOptions(emulate=False))
    build(out, progress=lambda line: None)
    with pytest.raises(DeviceError, match="PLATFORM=twin"):
        run_emulated(out)


@needs_arm
def test_linker_overflow_is_a_board_error(tmp_path, test_input):
    # The manifest under-reports the weights, so only the linker notices.
    art = write_artifact(tmp_path / "a", weights_bytes=600 * 1024)
    m = json.loads((art / "manifest.json").read_text())
    m["weights_bytes"] = 3
    (art / "manifest.json").write_text(json.dumps(m))
    out = generate(art, "stm32", tmp_path / "p", [test_input], BuildOptions(emulate=True))
    with pytest.raises(BoardError) as info:
        build(out, progress=lambda line: None)
    msg = str(info.value)
    assert "flash bank FLASH needs" in msg and "nucleo-f446re has 512 KiB (over by" in msg and "overflowed" not in msg
    assert "weights 600.0 KiB" in msg   # measured from the unbounded link (build/measure.elf)
    report = info.value.report
    assert report.needs["weights"] >= 600 * 1024 and not report.fits
    assert any("a board that fits" in h for h in report.hints)


def test_missing_toolchain(artifact, test_input, tmp_path, monkeypatch):
    out = generate(artifact, "mps2-an386", tmp_path / "p", [test_input], BuildOptions(emulate=True))
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda tool, *a, **k: None if tool.startswith("arm-none-eabi") else real_which(tool))
    with pytest.raises(ToolchainError) as info:
        build(out)
    assert "arm-none-eabi-gcc" in str(info.value)
    assert "sudo apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi" in str(info.value)


def test_missing_qemu(artifact, test_input, tmp_path, monkeypatch):
    out = generate(artifact, "mps2-an386", tmp_path / "p", [test_input], BuildOptions(emulate=True))
    (out / "firmware.elf").write_bytes(b"")
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ToolchainError, match="sudo apt-get install qemu-system-arm"):
        run_emulated(out)
