"""Writes stay inside -o (issue 22, "What we saw" 7 and 8).

An existing project directory is hostile until checked: a file or directory in it may be a
symlink (or a hard link) to something outside, planted by whoever made the directory. The rule
(README, "Output paths"): below -o nothing is followed; a link where the project has a file or
directory is replaced, never written through, and the project still builds. A single output
file the user names (--report, --output, quantize -o, tune --records) that is a symlink is
refused with exit 2 naming the link, before any work. -o itself is checked before any work
(a dangling link, a directory that cannot be written), a relative -o starting with '-' works
and never reaches a tool as an option, and new directories get the user's umask.

Most cases deploy the tiny softmax model to --board host (a native build, about a second).
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import time
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent

from support.cli_run import REPO, run_cli, run_cli_inprocess, run_cli_unprivileged, tiny_model  # noqa: E402

OUTSIDE = b"outside the project: must not change\n"
LONG_AGO = 946684800   # 2000-01-01: older than any object, so make rebuilds what a link stands for


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> Path:
    return tiny_model(tmp_path_factory.mktemp("model") / "tiny.tflite")


@pytest.fixture(scope="module")
def built(model, tmp_path_factory) -> Path:
    """One deployed host project; each test works on a copy (mtimes kept, so make reuses it)."""
    out = tmp_path_factory.mktemp("built") / "p"
    p = run_cli_inprocess("deploy", model, "--board=host", "-o", out)
    assert p.returncode == 0, p.stderr
    return out


def _copy(built: Path, tmp_path: Path) -> Path:
    project = tmp_path / "project"
    shutil.copytree(built, project, symlinks=True)
    return project


def _snapshot(root: Path, skip: Path | None = None) -> dict[str, tuple]:
    """Every entry under root (not following links): type, size, mtime and content of files,
    link targets; directories by name only (a temporary directory made and removed in them
    changes their mtime, not their content)."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if skip is not None:
            dirnames[:] = [d for d in dirnames if Path(dirpath, d) != skip]
        for name in dirnames + filenames:
            path = Path(dirpath, name)
            if path == skip:
                continue
            st = path.lstat()
            rel = path.relative_to(root).as_posix()
            if stat.S_ISLNK(st.st_mode):
                found[rel] = ("link", os.readlink(path))
            elif stat.S_ISDIR(st.st_mode):
                found[rel] = ("dir",)
            else:
                found[rel] = ("file", st.st_size, st.st_mtime_ns, path.read_bytes())
    return found


def _outside(tmp_path: Path) -> Path:
    """A directory beside the project with a file and a directory a link may point at."""
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "target.txt").write_bytes(OUTSIDE)
    (outside / "dir" / "model.c").write_bytes(OUTSIDE)
    for path in (outside / "target.txt", outside / "dir" / "model.c", outside / "dir"):
        os.utime(path, (LONG_AGO, LONG_AGO))
    return outside


def _deployed(p) -> None:
    assert p.returncode == 0, p.stdout + p.stderr
    assert "outputs match reference: yes" in p.stdout, p.stdout


# --- links planted in an existing project ----------------------------------------------------

# (path in the project, what it is made): generated files, the marker, a generated directory,
# and make's outputs (the Makefile's flags stamp and gcc's dependency files are written through
# a link; the linker happens to replace one, but nothing should depend on that).
PLANTED = [
    ("main.c", "symlink"),
    ("Makefile", "symlink"),
    ("model/model.c", "symlink"),
    (".microcompile-project", "symlink"),
    ("main.c", "hardlink"),
    ("model", "dirlink"),
    ("runtime", "dirlink"),
    ("build", "dirlink"),
    ("build/host/flags", "symlink"),
    ("build/host/main.d", "symlink"),
    ("firmware", "symlink"),
]


@pytest.mark.parametrize("rel,kind", PLANTED, ids=[f"{r}-{k}" for r, k in PLANTED])
def test_a_link_in_the_project_is_replaced_not_written_through(model, built, tmp_path, rel, kind):
    project, outside = _copy(built, tmp_path), _outside(tmp_path)
    planted = project / rel
    if planted.is_dir():
        shutil.rmtree(planted)
    else:
        planted.unlink()
    if kind == "symlink":
        planted.symlink_to(outside / "target.txt")
    elif kind == "hardlink":
        os.link(outside / "target.txt", planted)
    else:
        planted.symlink_to(outside / "dir", target_is_directory=True)
    if rel.startswith("build/"):
        os.utime(project / "main.c")   # newer than its object: make compiles it again, writing main.d
    before = _snapshot(outside)

    p = run_cli_inprocess("deploy", model, "--board=host", "-o", project)

    assert _snapshot(outside) == before, f"a write went through {rel} to {outside}"
    _deployed(p)
    assert not planted.is_symlink(), f"{rel} is still a link"
    assert planted.is_dir() if kind == "dirlink" else planted.is_file()


@pytest.mark.parametrize("rel,kind", [("main.c", "dir"), ("model", "file")])
def test_something_in_the_way_of_a_generated_file_is_exit_2(model, built, tmp_path, rel, kind):
    """A directory where a file goes, or a file where a directory goes: a user error naming it."""
    project = _copy(built, tmp_path)
    blocker = project / rel
    if blocker.is_dir():
        shutil.rmtree(blocker)
    else:
        blocker.unlink()
    if kind == "dir":
        blocker.mkdir()
    else:
        blocker.write_bytes(OUTSIDE)
    p = run_cli_inprocess("deploy", model, "--board=host", "-o", project)
    assert p.returncode == 2, p.stderr
    assert f"cannot write {project / rel}" in p.stderr and "hint: " in p.stderr, p.stderr


def test_output_tree_keeps_every_name_inside(tmp_path):
    from microcompile.files import OutputTree

    outside = _outside(tmp_path)
    root = tmp_path / "root"
    root.mkdir()
    tree = OutputTree(root)
    before = _snapshot(outside)
    for rel in ("../outside/target.txt", str(outside / "target.txt"), "a/../../outside/target.txt", "", ".",
                "a//b", "x\0y"):
        with pytest.raises(ValueError):
            tree.write(rel, b"x")
        tree.remove(rel)                      # a name from a marker: ignored
    (root / "up").symlink_to(outside, target_is_directory=True)
    tree.remove("up/target.txt")              # below a link: not followed
    assert _snapshot(outside) == before
    assert tree.write("up/new.txt", b"new") and (root / "up").is_dir() and not (root / "up").is_symlink()
    assert not tree.write("up/new.txt", b"new"), "unchanged content is not rewritten"
    assert _snapshot(outside) == before


def test_a_link_where_deploy_saves_the_quantized_model(model, built, tmp_path):
    """deploy --quantize leaves <model>_int8.tflite in the project: written there, not through a link."""
    project, outside = _copy(built, tmp_path), _outside(tmp_path)
    (project / "tiny_int8.tflite").symlink_to(outside / "target.txt")
    calibration = tmp_path / "calibration.npy"
    np.save(calibration, np.random.default_rng(0).normal(size=(8, 1, 8)).astype(np.float32))
    before = _snapshot(outside)
    p = run_cli_inprocess("deploy", model, "--board=host", "--quantize", "int8", "--calibration", calibration,
                          "-o", project)
    assert _snapshot(outside) == before
    _deployed(p)
    saved = project / "tiny_int8.tflite"
    assert not saved.is_symlink() and saved.read_bytes()[4:8] == b"TFL3"


def test_stale_file_names_in_the_marker_never_leave_the_project(model, built, tmp_path):
    """The marker lists the files a previous deploy wrote, and the next one removes those it no
    longer writes; the marker is in the (hostile) directory, so its names are checked."""
    project, outside = _copy(built, tmp_path), _outside(tmp_path)
    marker = project / ".microcompile-project"
    record = json.loads(marker.read_text())
    record["files"] += ["../outside/target.txt", str(outside / "dir" / "model.c"), "model/../../outside/target.txt"]
    marker.write_text(json.dumps(record))
    before = _snapshot(outside)
    p = run_cli_inprocess("deploy", model, "--board=host", "-o", project)
    assert _snapshot(outside) == before
    _deployed(p)


# --- single output files the user names: a symlink is refused before any work ----------------

def _link_to_outside(tmp_path: Path, name: str) -> tuple[Path, Path]:
    outside = _outside(tmp_path)
    link = tmp_path / name
    link.symlink_to(outside / "target.txt")
    return link, outside


def _refused_before_work(p, link: Path) -> None:
    assert p.returncode == 2, p.stdout + p.stderr
    assert f"{link} is a symbolic link" in p.stderr, p.stderr
    assert "[compile]" not in p.stdout and "[build]" not in p.stdout and "calibrating" not in p.stderr, \
        "the check must come before any work"


@pytest.mark.parametrize("flag,name", [("--report", "r.json"), ("--output", "y.npy")])
def test_deploy_refuses_a_symlinked_output_file(model, tmp_path, flag, name):
    link, outside = _link_to_outside(tmp_path, name)
    p = run_cli_inprocess("deploy", model, "--board=host", flag, link, "-o", tmp_path / "p")
    _refused_before_work(p, link)
    assert (outside / "target.txt").read_bytes() == OUTSIDE and link.is_symlink()
    assert not (tmp_path / "p").exists()


def test_deploy_refuses_a_dangling_symlinked_report(model, tmp_path):
    link = tmp_path / "r.json"
    link.symlink_to(tmp_path / "elsewhere" / "r.json")
    p = run_cli_inprocess("deploy", model, "--board=host", "--report", link, "-o", tmp_path / "p")
    _refused_before_work(p, link)
    assert not (tmp_path / "elsewhere").exists()


def test_quantize_refuses_a_symlinked_output_model(model, tmp_path):
    link, outside = _link_to_outside(tmp_path, "q.tflite")
    calibration = tmp_path / "calibration.npy"
    np.save(calibration, np.zeros((4, 1, 8), np.float32))
    p = run_cli_inprocess("quantize", model, "--calibration", calibration, "-o", link)
    _refused_before_work(p, link)
    assert (outside / "target.txt").read_bytes() == OUTSIDE


def test_tune_refuses_a_symlinked_records_file(model, tmp_path):
    """--resume appends to the records file: not through a link."""
    link, outside = _link_to_outside(tmp_path, "records.jsonl")
    p = run_cli_inprocess("tune", model, "--board=host", "--records", link, "--resume", "--trials", "1",
                          "-o", tmp_path / "w")
    _refused_before_work(p, link)
    assert "[tune]" not in p.stdout
    assert (outside / "target.txt").read_bytes() == OUTSIDE


def test_tune_replaces_a_symlinked_job_directory(model, tmp_path):
    """tune builds candidates in <-o>/job<k>: inside -o, so a link there is replaced, not followed."""
    outside = _outside(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    (work / "job0").symlink_to(outside / "dir", target_is_directory=True)
    before = _snapshot(outside)
    p = run_cli_inprocess("tune", model, "--board=host", "--records", tmp_path / "r.jsonl", "--trials", "1",
                          "-o", work)
    assert _snapshot(outside) == before
    assert p.returncode == 0, p.stdout + p.stderr
    record = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    assert record["status"] == "ok", record["error"]
    assert not (work / "job0").is_symlink() and (work / "job0" / ".microcompile-project").is_file()


def test_inspect_plot_refuses_a_symlink(model, tmp_path):
    link, outside = _link_to_outside(tmp_path, "plot.svg")
    p = run_cli_inprocess("inspect", model, "--board=host", "--plot", link)
    assert p.returncode == 2 and f"{link} is a symbolic link" in p.stderr, p.stdout + p.stderr
    assert "memory on" not in p.stdout, "refused before planning"
    assert (outside / "target.txt").read_bytes() == OUTSIDE


def test_uf2_copy_refuses_a_link_on_the_drive(tmp_path):
    """A UF2 drive is found by its INFO_UF2.TXT at any mount point (/tmp is one): a
    firmware.uf2 planted there as a link is not written through."""
    from microcompile.project import flash_runners as fr
    from microcompile.target import load_board

    outside = _outside(tmp_path)
    drive = tmp_path / "drive"
    drive.mkdir()
    (drive / "firmware.uf2").symlink_to(outside / "target.txt")
    image = tmp_path / "firmware.uf2"
    image.write_bytes(bytes(512))
    with pytest.raises(fr.FlashFailure, match="copying to"):
        fr.RUNNERS["uf2"].flash(load_board("rpi-pico"), {"uf2": image}, fr.FoundProbe("uf2", str(drive), "drive"),
                                lambda fraction: None)
    assert (outside / "target.txt").read_bytes() == OUTSIDE


# --- -o itself, checked before any work ----------------------------------------------------------

def _nothing_compiled(p, started: float) -> None:
    assert "[compile]" not in p.stdout and "[build]" not in p.stdout, "the check must come before any work"
    assert time.monotonic() - started < 5.0


def test_dangling_symlink_as_project_dir(model, tmp_path):
    link = tmp_path / "p"
    link.symlink_to(tmp_path / "gone" / "p")
    started = time.monotonic()
    p = run_cli_inprocess("deploy", model, "--board=host", "-o", link)
    _nothing_compiled(p, started)
    assert p.returncode == 2, p.stderr
    assert f"project directory {link} is a symbolic link to {tmp_path / 'gone' / 'p'}, which does not exist" \
        in p.stderr
    assert "hint:" in p.stderr
    assert link.is_symlink() and not (tmp_path / "gone").exists()


def test_symlink_loop_as_project_dir(model, tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    started = time.monotonic()
    p = run_cli_inprocess("deploy", model, "--board=host", "-o", tmp_path / "a")
    _nothing_compiled(p, started)
    assert p.returncode == 2 and f"{tmp_path / 'a'} is a symbolic link" in p.stderr, p.stderr


def test_project_dir_below_a_dangling_symlink(model, tmp_path):
    link = tmp_path / "builds"
    link.symlink_to(tmp_path / "gone")
    started = time.monotonic()
    p = run_cli_inprocess("deploy", model, "--board=host", "-o", link / "p")
    _nothing_compiled(p, started)
    assert p.returncode == 2 and f"{link} is a symbolic link to {tmp_path / 'gone'}, which does not exist" \
        in p.stderr, p.stderr


def test_existing_project_dir_that_cannot_be_written(model, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    started = time.monotonic()
    p = run_cli_unprivileged("deploy", model, "--board=host", "-o", locked)
    locked.chmod(0o755)
    _nothing_compiled(p, started - 2.0)   # a subprocess: allow its start-up
    assert p.returncode == 2 and f"cannot write in {locked}" in p.stderr, p.stderr


LOGGED_TOOLS = ("make", "size", "arm-none-eabi-size", "arm-none-eabi-objdump", "qemu-system-arm")


def _logging_tools(tmp_path: Path) -> tuple[dict, Path]:
    """An environment whose tools (LOGGED_TOOLS) write their arguments to a log, then run the real ones."""
    bindir, log = tmp_path / "bin", tmp_path / "tools.log"
    bindir.mkdir()
    for tool in LOGGED_TOOLS:
        real = shutil.which(tool)
        if real is None:
            continue
        script = bindir / tool
        script.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "{tool} %s\\n" "$a" >> "{log}"; done\n'
                          f'exec "{real}" "$@"\n')
        script.chmod(0o755)
    return dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}", PYTHONPATH=str(REPO)), log


@pytest.mark.parametrize("board,size", [
    (["--board=host"], "size"),
    pytest.param(["--board=mps2-an386", "--emulate"], "arm-none-eabi-size", marks=pytest.mark.qemu),
], ids=["host", "mps2-an386"])
def test_relative_project_dir_starting_with_a_dash(model, tmp_path, board, size):
    """--project-dir=-x (or -o=-x) makes ./-x; the tools get ./-x, never an option -x."""
    env, log = _logging_tools(tmp_path)
    p = run_cli("deploy", model, *board, "--project-dir=-x", cwd=tmp_path, env=env)
    _deployed(p)
    assert (tmp_path / "-x" / ".microcompile-project").is_file()
    args = log.read_text().splitlines()
    assert any(a.startswith("make ") for a in args) and any(a.startswith(f"{size} ") for a in args), args
    assert not [a for a in args if a.split(" ", 1)[1].startswith("-x")], args


def test_project_dir_option_swallowing_a_dash_name_is_refused(model, tmp_path):
    p = run_cli("deploy", model, "--board=host", "-o", "-x", cwd=tmp_path)
    assert p.returncode == 2 and "expected one argument" in p.stderr
    assert sorted(q.name for q in tmp_path.iterdir()) == []


# --- permissions and the whole deploy ------------------------------------------------------------

@pytest.mark.parametrize("umask,mode", [(0o022, 0o755), (0o077, 0o700), (0o002, 0o775)])
def test_new_project_directory_follows_the_umask(tmp_path, umask, mode):
    from support.fake_artifact import benchmark_input, write_artifact
    from microcompile.project import generate

    artifact = write_artifact(tmp_path / "artifact")
    old = os.umask(umask)
    try:
        out = generate(artifact, "host", tmp_path / "new" / "p", [benchmark_input((1, 4, 4, 1))])
    finally:
        os.umask(old)
    for d in (out, out / "model", out / "runtime" / "src"):
        assert stat.S_IMODE(d.stat().st_mode) == mode, f"{d}: {oct(stat.S_IMODE(d.stat().st_mode))}"
    assert stat.S_IMODE((out / "main.c").stat().st_mode) == 0o666 & ~umask
    assert stat.S_IMODE((tmp_path / "new").stat().st_mode) == mode


def test_a_whole_deploy_writes_nothing_outside_the_project(model, tmp_path):
    """HOME, TMPDIR and the working directory are inside tmp_path; after a deploy, the tree
    outside -o is as it was (the temporary artifact is gone, nothing was cached or logged)."""
    home, tmp, cwd = tmp_path / "home", tmp_path / "tmp", tmp_path / "cwd"
    for d in (home, tmp, cwd):
        d.mkdir()
    shutil.copy(model, cwd / "tiny.tflite")
    env = dict(os.environ, HOME=str(home), TMPDIR=str(tmp), XDG_CACHE_HOME=str(home / ".cache"),
               PYTHONPATH=str(REPO))   # this checkout's microcompile, from another working directory
    before = _snapshot(tmp_path)
    p = run_cli("deploy", "tiny.tflite", "--board=host", "-o", "proj", env=env, cwd=cwd,
                preexec_fn=lambda: os.umask(0o022))
    _deployed(p)
    assert (cwd / "proj" / "firmware").is_file()
    assert stat.S_IMODE((cwd / "proj").stat().st_mode) == 0o755, "the umask, as mkdir would"
    assert _snapshot(tmp_path, skip=cwd / "proj") == before
