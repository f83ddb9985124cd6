import shutil

import pytest

from fake_artifact import needs_arm
from microcompile.errors import DeviceError
from microcompile.project import build, flash, generate


@needs_arm
def test_flash_without_probe_names_the_firmware(artifact, test_input, tmp_path, monkeypatch):
    out = generate(artifact, "stm32", tmp_path / "p", [test_input], emulated=True)
    build(out, progress=lambda line: None)  # a twin build: flash() rebuilds for the real board
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda t, *a, **k: None if t in ("st-flash", "openocd", "pyocd") else real_which(t))
    lines = []
    with pytest.raises(DeviceError) as info:
        flash(out, progress=lines.append)
    msg = str(info.value)
    assert str((out / "firmware.elf").resolve()) in msg and "--emulate" in msg
    assert "st-flash" in msg and "openocd" in msg and "pyocd" in msg
    assert (out / "build" / "platform").read_text().strip() == "board"
    assert any(line.startswith("[flash]") for line in lines)


def test_flash_emulator_only_board(artifact, test_input, tmp_path):
    out = generate(artifact, "mps2-an386", tmp_path / "p", [test_input], emulated=True)
    with pytest.raises(DeviceError, match="emulator only"):
        flash(out)
