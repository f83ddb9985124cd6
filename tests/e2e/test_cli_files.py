"""Files the user names: unreadable models, odd .npy files, output paths that cannot be
written. Each gets exit 2 and a message naming the file, early, never a traceback or a hang.

Most cases run cli.main in-process (run_cli_inprocess); a subprocess where the process is
the point: a hang (FIFO), root's file powers dropped (permissions), one full deploy."""

from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest

from support.cli_run import run_cli, run_cli_inprocess, run_cli_unprivileged, tiny_model


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> pathlib.Path:
    return tiny_model(tmp_path_factory.mktemp("model") / "tiny.tflite")


def _no_work_done(p):
    assert "[compile]" not in p.stdout and "[build]" not in p.stdout, "the check must come before any work"


# --- models that cannot be read ------------------------------------------------------------

def test_unreadable_model_without_extension(model, tmp_path):
    locked = tmp_path / "model"
    locked.write_bytes(model.read_bytes())
    locked.chmod(0)
    p = run_cli_unprivileged("inspect", locked)
    assert p.returncode == 2, p.stderr
    assert str(locked) in p.stderr and "permission denied" in p.stderr


def test_unreadable_onnx_model_says_permission_not_re_export(tmp_path):
    locked = tmp_path / "m.onnx"
    locked.write_bytes(b"\x08\x07")
    locked.chmod(0)
    p = run_cli_unprivileged("inspect", locked)
    assert p.returncode == 2 and "permission denied" in p.stderr
    assert "re-export" not in p.stderr


@pytest.mark.parametrize("name", ["model.tflite", "model.onnx"])
def test_fifo_as_model_does_not_hang(tmp_path, name):
    fifo = tmp_path / name
    os.mkfifo(fifo)
    p = run_cli("inspect", fifo, timeout=60)
    assert p.returncode == 2 and "FIFO" in p.stderr and str(fifo) in p.stderr


@pytest.mark.parametrize("name", ["zero.tflite", "zero"])
def test_symlink_to_dev_zero_is_not_read(tmp_path, name):
    link = tmp_path / name
    link.symlink_to("/dev/zero")
    p = run_cli_inprocess("inspect", link) if name == "zero" else run_cli("inspect", link, timeout=60)
    assert p.returncode == 2 and "character device" in p.stderr


def test_directory_named_like_an_onnx_model(tmp_path):
    d = tmp_path / "x.onnx"
    d.mkdir()
    p = run_cli_inprocess("inspect", d)
    assert p.returncode == 2 and "directory" in p.stderr and "does not exist" not in p.stderr


# --- .npy and .npz inputs --------------------------------------------------------------------

def _bad_arrays(tmp: pathlib.Path) -> dict[str, tuple[pathlib.Path, str]]:
    """file -> the words the message must contain."""
    cases = {}
    (tmp / "empty.npy").write_bytes(b"")
    cases["empty"] = (tmp / "empty.npy", "is empty")
    (tmp / "text.npy").write_text("1, 2, 3, 4, 5, 6, 7, 8\n")
    cases["text"] = (tmp / "text.npy", "not a .npy or .npz file")
    np.save(tmp / "objects.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    cases["objects"] = (tmp / "objects.npy", "Python objects")
    import pickle
    (tmp / "pickle.npy").write_bytes(pickle.dumps([1.0] * 8))
    cases["pickle"] = (tmp / "pickle.npy", "pickle")
    np.save(tmp / "cut.npy", np.zeros((1, 8), np.float32))
    (tmp / "cut.npy").write_bytes((tmp / "cut.npy").read_bytes()[:-5])
    cases["truncated"] = (tmp / "cut.npy", "truncated")
    np.savez(tmp / "none.npz")
    cases["empty npz"] = (tmp / "none.npz", "holds no arrays")
    np.save(tmp / "words.npy", np.array(["a"] * 8))
    cases["strings"] = (tmp / "words.npy", "not numbers")
    return cases


@pytest.mark.parametrize("case", ["empty", "text", "objects", "pickle", "truncated", "empty npz", "strings"])
def test_bad_input_array(model, tmp_path, case):
    path, words = _bad_arrays(tmp_path)[case]
    p = run_cli_inprocess("deploy", model, "--board=host", "--input", path, "-o", tmp_path / "out")
    assert p.returncode == 2, p.stderr
    assert words in p.stderr and str(path) in p.stderr
    assert "allow_pickle" not in p.stderr and "arrays found: \n" not in p.stderr + "\n"
    _no_work_done(p)


@pytest.mark.parametrize("case", ["empty", "text", "pickle", "empty npz"])
def test_bad_calibration_array(model, tmp_path, case):
    path, words = _bad_arrays(tmp_path)[case]
    p = run_cli_inprocess("quantize", model, "--calibration", path, "-o", tmp_path / "q.tflite")
    assert p.returncode == 2, p.stderr
    assert words in p.stderr and "allow_pickle" not in p.stderr


def test_big_endian_input_is_converted_and_outputs_go_into_new_directories(model, tmp_path):
    """One full deploy (a subprocess, the C compiler, the run): a big-endian input is
    converted, and --report/--output into missing directories create them (as mkdir -p)."""
    x = tmp_path / "be.npy"
    values = np.linspace(-2, 2, 8, dtype=np.float32).reshape(1, 8)
    np.save(x, values.astype(">f4"))
    report, output = tmp_path / "reports" / "today" / "r.json", tmp_path / "outputs" / "y.npy"
    p = run_cli("deploy", model, "--board=host", "--input", x, "--output", output, "--report", report,
                "-o", tmp_path / "out")
    assert p.returncode == 0, p.stderr
    e = np.exp(values - values.max())
    np.testing.assert_allclose(np.load(output), e / e.sum(), rtol=1e-5)
    assert report.is_file()


# --- output paths ----------------------------------------------------------------------------

def test_project_dir_under_a_regular_file(model, tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    p = run_cli_inprocess("deploy", model, "--board=host", "-o", tmp_path / "notes.txt" / "build")
    assert p.returncode == 2 and "notes.txt" in p.stderr and "not a directory" in p.stderr
    _no_work_done(p)
    assert (tmp_path / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("flag", ["-o", "--report", "--output"])
def test_name_longer_than_the_file_system_allows(model, tmp_path, flag):
    p = run_cli_inprocess("deploy", model, "--board=host", flag, tmp_path / ("x" * 300) / "y")
    assert p.returncode == 2 and "bytes long" in p.stderr, p.stderr
    _no_work_done(p)
    assert len(p.stderr) < 600, "the 300-character name is not echoed in full"


@pytest.mark.parametrize("flag", ["-o", "--report", "--output"])
def test_output_under_proc(model, tmp_path, flag):
    target = "/proc/microcompile-test/out" if flag == "-o" else "/proc/self/microcompile-report.json"
    p = run_cli_inprocess("deploy", model, "--board=host", flag, target,
                *(["-o", tmp_path / "out"] if flag != "-o" else []))
    assert p.returncode == 2, p.stderr
    assert "cannot" in p.stderr and "/proc" in p.stderr
    _no_work_done(p)


@pytest.mark.parametrize("flag", ["-o", "--report"])
def test_output_in_an_unwritable_directory(model, tmp_path, flag):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    p = run_cli_unprivileged("deploy", model, "--board=host", flag, locked / "out",
                             *(["-o", tmp_path / "out"] if flag != "-o" else []))
    locked.chmod(0o755)
    assert p.returncode == 2 and "cannot write in" in p.stderr and str(locked) in p.stderr, p.stderr
    _no_work_done(p)


def test_report_onto_a_directory(model, tmp_path):
    (tmp_path / "r").mkdir()
    p = run_cli_inprocess("deploy", model, "--board=host", "--report", tmp_path / "r", "-o", tmp_path / "out")
    assert p.returncode == 2 and "is a directory" in p.stderr
    _no_work_done(p)


def test_quantize_output_onto_a_directory(model, tmp_path):
    np.save(tmp_path / "calib.npy", np.random.default_rng(0).normal(size=(4, 8)).astype(np.float32))
    (tmp_path / "q.tflite").mkdir()
    p = run_cli_inprocess("quantize", model, "--calibration", tmp_path / "calib.npy", "-o", tmp_path / "q.tflite")
    assert p.returncode == 2 and "is a directory" in p.stderr
    assert "calibrating" not in p.stderr, "the check must come before calibration"


def test_verify_report_into_an_impossible_place(model, tmp_path):
    (tmp_path / "f").write_text("")
    p = run_cli_inprocess("verify", model, "--board=host", "--report", tmp_path / "f" / "r.json", "-o", tmp_path / "out")
    assert p.returncode == 2 and "not a directory" in p.stderr
    _no_work_done(p)


def test_existing_output_is_replaced_whole(model, tmp_path):
    """A rerun overwrites --output; a failed rerun leaves the previous file as it was."""
    out = tmp_path / "y.npy"
    np.save(out, np.arange(3))
    before = out.read_bytes()
    bad = tmp_path / "bad.npy"
    bad.write_bytes(b"")
    p = run_cli_inprocess("deploy", model, "--board=host", "--input", bad, "--output", out, "-o", tmp_path / "out")
    assert p.returncode == 2 and out.read_bytes() == before


# --- the agent commands (run, profile) and flash: same checks, same exit codes -----------------

def test_run_on_a_serial_port_that_does_not_exist(model, tmp_path):
    """A mistyped --port is exit 2 before any building (a missing device is a user's problem)."""
    p = run_cli_inprocess("run", model, "--board=nucleo-f446re", "--port", tmp_path / "ttyACM9", "-o", tmp_path / "out")
    assert p.returncode == 2 and "ttyACM9" in p.stderr and "does not exist" in p.stderr, p.stderr
    _no_work_done(p)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flag", ["--report", "--output"])
def test_run_output_under_a_regular_file(model, tmp_path, flag):
    (tmp_path / "f").write_text("")
    p = run_cli_inprocess("run", model, "--board=host", flag, tmp_path / "f" / "x", "-o", tmp_path / "out")
    assert p.returncode == 2 and "not a directory" in p.stderr, p.stderr
    _no_work_done(p)


@pytest.mark.parametrize("flag, name", [("--json", "p.json"), ("--csv", "p.csv"), ("--plot", "p.svg")])
def test_profile_output_under_a_regular_file(model, tmp_path, flag, name):
    (tmp_path / "f").write_text("")
    p = run_cli_inprocess("profile", model, "--board=host", flag, tmp_path / "f" / name, "-o", tmp_path / "out")
    assert p.returncode == 2 and "not a directory" in p.stderr, p.stderr
    _no_work_done(p)


def test_profile_plot_in_an_unknown_format(model, tmp_path):
    p = run_cli_inprocess("profile", model, "--board=host", "--plot", tmp_path / "p.bmpx", "-o", tmp_path / "out")
    assert p.returncode == 2 and "bmpx" in p.stderr and ".svg" in p.stderr, p.stderr
    _no_work_done(p)


@pytest.mark.parametrize("flag", ["--input", "--labels"])
def test_run_batch_and_labels_files_are_read_safely(model, tmp_path, flag):
    """`run --repeat`'s batch and `--labels` go through the same reader as --input: an empty
    file is named (it was an EOFError traceback), a text file never gets numpy's pickle advice."""
    batch = tmp_path / "batch.npy"
    np.save(batch, np.zeros((2, 1, 8), np.float32))
    empty, text = tmp_path / "empty.npy", tmp_path / "text.npy"
    empty.write_bytes(b"")
    text.write_text("1 2 3\n")
    for bad, words in ((empty, "is empty"), (text, "not a .npy")):
        args = ["--input", bad] if flag == "--input" else ["--input", batch, "--labels", bad]
        p = run_cli_inprocess("run", model, "--board=host", "--repeat", "2", *args, "-o", tmp_path / "out")
        assert p.returncode == 2 and words in p.stderr and str(bad) in p.stderr, p.stderr
        assert "allow_pickle" not in p.stderr


def test_flash_of_nothing_is_exit_2(tmp_path):
    p = run_cli_inprocess("flash", tmp_path / "no-such-project", "--board=nucleo-f446re")
    assert p.returncode == 2 and "no-such-project" in p.stderr, p.stderr
