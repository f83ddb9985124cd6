"""A project directory is complete (or marked incomplete), and its Makefile rebuilds when the flags change.

- an interrupt while `generate` writes leaves no half project behind (the next run used to
  refuse the folder forever: files, but no marker saying microcompile made it): a new
  project is complete or absent, a regenerated one is marked incomplete until rerun;
- deploying mps2-an386 and then mps2-an385 into one folder used to link the Cortex-M4F
  objects into the Cortex-M3 firmware ("uses VFP register arguments"), and every rerun failed.
"""

from __future__ import annotations

import os
import pathlib
import shutil
import time

import pytest

from microcompile.errors import UserError
from microcompile.files import OutputTree
from microcompile.project import BuildOptions, MARKER, build, generate, read_marker

needs_arm_gcc = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="needs arm-none-eabi-gcc")


def _files(root: pathlib.Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _interrupt_after(n: int):
    """An OutputTree.write (every file generate writes) that raises KeyboardInterrupt on its
    n-th call (Ctrl-C mid-generation)."""
    real, calls = OutputTree.write, [0]

    def write(tree, rel, data):
        calls[0] += 1
        if calls[0] == n:
            raise KeyboardInterrupt
        return real(tree, rel, data)
    return write


@pytest.mark.parametrize("n", [1, 5, 20])
def test_interrupted_generation_leaves_no_half_project(artifact, test_input, tmp_path, monkeypatch, n):
    out = tmp_path / "p"
    with monkeypatch.context() as m:
        m.setattr(OutputTree, "write", _interrupt_after(n))
        with pytest.raises(KeyboardInterrupt):
            generate(artifact, "mps2-an386", out, [test_input], BuildOptions(emulate=True))
    assert not out.exists(), f"a half-written project remains: {sorted(_files(out)) if out.exists() else ''}"
    assert not [p for p in tmp_path.iterdir() if p.name != "p"], "no temporary sibling is left"
    generate(artifact, "mps2-an386", out, [test_input], BuildOptions(emulate=True))   # the rerun works
    assert read_marker(out)["board"] == "mps2-an386"


def test_interrupted_regeneration_is_refused_until_rerun(artifact, test_input, tmp_path, monkeypatch):
    """An existing project is regenerated in place (it may be the user's current directory):
    interrupted, it stays recognisably ours, build refuses it, and the rerun repairs it."""
    out = generate(artifact, "host", tmp_path / "p", [test_input])
    (out / "notes.txt").write_text("mine")
    with monkeypatch.context() as m:
        m.setattr(OutputTree, "write", _interrupt_after(2))   # the first write marks it incomplete
        with pytest.raises(KeyboardInterrupt):
            generate(artifact, "mps2-an386", out, [test_input], BuildOptions(emulate=True))
    with pytest.raises(UserError, match="interrupted"):
        build(out, progress=lambda line: None)
    generate(artifact, "host", out, [test_input])
    build(out, progress=lambda line: None)
    assert (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p"]


def test_regeneration_keeps_user_files_build_products_and_mtimes(artifact, test_input, tmp_path):
    out = generate(artifact, "host", tmp_path / "p", [test_input])
    (out / "notes.txt").write_text("mine")
    (out / "model" / "my_patch.h").write_text("/* mine */")
    (out / "build").mkdir()
    (out / "build" / "x.o").write_bytes(b"object")
    old = {rel: (out / rel).stat().st_mtime_ns for rel in ("main.c", "Makefile", "model/model.c")}
    time.sleep(0.02)
    generate(artifact, "host", out, [test_input])
    assert (out / "notes.txt").read_text() == "mine" and (out / "model" / "my_patch.h").read_text() == "/* mine */"
    assert (out / "build" / "x.o").read_bytes() == b"object"
    assert {rel: (out / rel).stat().st_mtime_ns for rel in old} == old, "unchanged files keep their mtime"
    assert (out / MARKER).is_file()


def test_project_dir_given_as_a_symlink_stays_a_symlink(artifact, test_input, tmp_path):
    real = generate(artifact, "host", tmp_path / "real", [test_input])
    link = tmp_path / "link"
    link.symlink_to(real)
    generate(artifact, "host", link, [test_input])
    assert link.is_symlink() and (real / MARKER).is_file()


@needs_arm_gcc
def test_changing_the_board_rebuilds_every_object(artifact, test_input, tmp_path):
    out = tmp_path / "p"
    generate(artifact, "mps2-an386", out, [test_input], BuildOptions(emulate=True))
    build(out, progress=lambda line: None)
    objects = sorted((out / "build").rglob("*.o"))
    assert objects
    stamp = {o: o.stat().st_mtime_ns for o in objects}
    time.sleep(0.02)
    generate(artifact, "mps2-an385", out, [test_input], BuildOptions(emulate=True))
    build(out, progress=lambda line: None)        # linked Cortex-M4F objects into a Cortex-M3 firmware
    # objects whose source is still in the project (the DSP kernels left with the M4F)
    kept = [o for o in objects if (out / o.relative_to(out / "build" / "twin")).with_suffix(".c").is_file()]
    assert kept and all(o.stat().st_mtime_ns != stamp[o] for o in kept), "objects of the old flags were reused"
    build(out, progress=lambda line: None)        # and a rerun is a no-op that still succeeds


@needs_arm_gcc
def test_make_with_other_flags_rebuilds(artifact, test_input, tmp_path):
    """By hand too: `make CFLAGS+=...` must not mix objects of two flag sets."""
    import subprocess

    out = generate(artifact, "mps2-an386", tmp_path / "p", [test_input], BuildOptions(emulate=True))
    build(out, progress=lambda line: None)
    cpuflags = next(line.split(":=", 1)[1].strip() for line in (out / "Makefile").read_text().splitlines()
                    if line.startswith("CPUFLAGS :="))
    make = ["make", "-C", str(out), "--no-print-directory", f"CPUFLAGS={cpuflags} -DMC_FLAGS_CHANGED"]
    first = subprocess.run(make, capture_output=True, text=True)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "[build] CC main.c" in first.stdout and "[build] LD" in first.stdout, "a flags change recompiles"
    again = subprocess.run(make, capture_output=True, text=True)
    assert "[build] CC" not in again.stdout and "[build] LD" not in again.stdout, "same flags: nothing to do"


def test_host_makefile_rebuilds_when_the_compiler_changes(artifact, test_input, tmp_path):
    import subprocess

    out = generate(artifact, "host", tmp_path / "p", [test_input])
    build(out, progress=lambda line: None)
    p = subprocess.run(["make", "-C", str(out), "--no-print-directory", f"CC={shutil.which('cc')} -O1"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and "[build] CC main.c" in p.stdout, p.stdout + p.stderr
    assert os.access(out / "firmware", os.X_OK)
