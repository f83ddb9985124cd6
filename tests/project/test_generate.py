import json
import shutil

import numpy as np
import pytest

from support.fake_artifact import write_artifact
from microcompile.errors import BoardError, UserError
from microcompile.project import BuildOptions, MARKER, check_fits, generate, load_manifest
from microcompile.target import load_board


def _tree(root):
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_layout(artifact, test_input, tmp_path):
    out = generate(artifact, "stm32", tmp_path / "p", [test_input], BuildOptions(emulate=True))
    files = _tree(out)
    for rel in ["Makefile", "linker.ld", "main.c", "test_input.c", "test_input.h", "manifest.json", MARKER,
                "model/model.c", "model/model_weights.c", "model/model.h", "runtime/include/mc_runtime.h",
                "runtime/include/mc_platform.h", "runtime/src/mc_runtime.c", "board/cortex-m/startup.c",
                "board/stm32f4/platform_stm32f446.c", "board/stm32f4/platform_stm32f405_qemu.c"]:
        assert rel in files, rel
    makefile = files["Makefile"].decode()
    assert "PLATFORM ?= twin" in makefile
    assert "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16" in makefile
    assert "-O2 -Wall -Wextra -Werror -std=c99 -ffunction-sections -fdata-sections" in makefile
    assert "st-flash --reset write firmware.bin 0x08000000" in makefile
    ld = files["linker.ld"].decode()
    assert "ORIGIN = 0x08000000, LENGTH = 0x00080000" in ld and "ORIGIN = 0x20000000, LENGTH = 0x00020000" in ld
    assert "0x83, 0x8a" in files["test_input.c"].decode()  # x[0] = 3-128 = -125 = 0x83, x[1] = 0x8a


def test_real_board_default_platform(artifact, test_input, tmp_path):
    out = generate(artifact, "nucleo-f446re", tmp_path / "p", [test_input], BuildOptions(emulate=False))
    assert "PLATFORM ?= board" in (out / "Makefile").read_text()


def test_deterministic(artifact, test_input, tmp_path):
    a = _tree(generate(artifact, "mps2-an386", tmp_path / "a", [test_input], BuildOptions(emulate=True)))
    b = _tree(generate(artifact, "mps2-an386", tmp_path / "b", [test_input], BuildOptions(emulate=True)))
    # regenerate in place
    c = _tree(generate(artifact, "mps2-an386", tmp_path / "a", [test_input], BuildOptions(emulate=True)))
    assert a == b == c


def test_refuses_foreign_directory(artifact, test_input, tmp_path):
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "thesis.tex").write_text("precious")
    with pytest.raises(UserError, match="refusing"):
        generate(artifact, "host", tmp_path / "mine", [test_input])
    assert (tmp_path / "mine" / "thesis.tex").read_text() == "precious"
    assert not (tmp_path / "mine" / "Makefile").exists()


def test_regenerate_keeps_user_files_and_drops_stale_ones(artifact, test_input, tmp_path):
    out = generate(artifact, "stm32", tmp_path / "p", [test_input], BuildOptions(emulate=True))
    (out / "notes.txt").write_text("mine")
    generate(artifact, "host", out, [test_input])
    assert (out / "notes.txt").read_text() == "mine"
    assert not (out / "linker.ld").exists() and not (out / "board/cortex-m/startup.c").exists()
    assert json.loads((out / MARKER).read_text())["board"] == "host"


def test_empty_existing_directory_is_fine(artifact, test_input, tmp_path):
    (tmp_path / "empty").mkdir()
    generate(artifact, "host", tmp_path / "empty", [test_input])


def test_bad_test_input(artifact, tmp_path):
    with pytest.raises(UserError, match="shape"):
        generate(artifact, "host", tmp_path / "p", [np.zeros((1, 3), np.int8)])
    with pytest.raises(UserError, match="1 inputs"):
        generate(artifact, "host", tmp_path / "p", [])


def test_emulate_needs_twin(artifact, test_input, tmp_path, monkeypatch):
    import dataclasses
    board = dataclasses.replace(load_board("stm32"), emulator=None)
    with pytest.raises(BoardError, match="no emulated twin"):
        generate(artifact, board, tmp_path / "p", [test_input], BuildOptions(emulate=True))


def test_check_fits_big_weights(tmp_path):
    art = write_artifact(tmp_path / "big")
    manifest = load_manifest(art)
    manifest["weights_bytes"] = 2 * 1024 * 1024
    with pytest.raises(BoardError) as info:
        check_fits(manifest, load_board("stm32"))
    msg = str(info.value)
    assert "flash bank FLASH needs 2048 KiB, nucleo-f446re has 512 KiB (over by 1536 KiB): weights 2048 KiB" in msg
    # 2 MiB of weights and some code: the smallest board with more than 2 MiB of flash
    assert "a board that fits: mps2-an385" in msg and info.value.exit_code == 2
    check_fits(manifest, load_board("mps2-an386"))  # 4 MiB: fits


def test_check_fits_big_arena(artifact):
    manifest = load_manifest(artifact)
    manifest["arena_bytes"] = 200 * 1024
    with pytest.raises(BoardError, match="ram bank SRAM needs 204 KiB, nucleo-f446re has 128 KiB"):
        check_fits(manifest, load_board("stm32"))


def test_generate_runs_check_fits(tmp_path, test_input):
    art = write_artifact(tmp_path / "big")
    m = json.loads((art / "manifest.json").read_text())
    m["weights_bytes"] = 2 * 1024 * 1024
    (art / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(BoardError, match="512 KiB"):
        generate(art, "stm32", tmp_path / "p", [test_input], BuildOptions(emulate=True))
    assert not (tmp_path / "p").exists()


def test_bad_manifest(tmp_path, test_input):
    art = write_artifact(tmp_path / "a")
    m = json.loads((art / "manifest.json").read_text())
    m["schema_version"] = 99
    (art / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(UserError, match="schema_version"):
        generate(art, "host", tmp_path / "p", [test_input])
    shutil.rmtree(art)
    with pytest.raises(UserError, match="not found"):
        generate(art, "host", tmp_path / "p", [test_input])
