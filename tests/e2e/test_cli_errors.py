"""User mistakes get a clear message and exit code 2, never a traceback."""

import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import model_path
from support.cli_run import run_cli_inprocess   # cli.main in this process: no interpreter start-up per case

from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, Tensor


def run_cli(*args, env=None, cwd=None):
    p = subprocess.run([sys.executable, "-m", "microcompile", *map(str, args)], capture_output=True, text=True,
                       env=env, cwd=cwd, timeout=600)
    assert "Traceback" not in p.stderr, p.stderr
    return p


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> pathlib.Path:
    """A float32 softmax over 1x8, written with the project's own writer."""
    t = {n: Tensor(n, (1, 8), "float32") for n in ("x", "y")}
    g = Graph("tiny", t, (Node("softmax", "softmax", ("x",), ("y",), {"beta": 1.0}),), ("x",), ("y",))
    path = tmp_path_factory.mktemp("model") / "tiny.tflite"
    path.write_bytes(write_tflite(g))
    return path


@pytest.mark.parametrize("content", [b"", b"not a model at all", b"\x89PNG\r\n\x1a\n" + bytes(64)])
def test_not_a_tflite_file(tmp_path, content):
    bad = tmp_path / "bad.tflite"
    bad.write_bytes(content)
    p = run_cli("deploy", bad, "--board=host", "-o", tmp_path / "out")
    assert p.returncode == 2
    assert "bad.tflite" in p.stderr and "error:" in p.stderr
    assert not (tmp_path / "out").exists(), "nothing is written for a bad model"


def test_truncated_tflite(tmp_path):
    data = model_path("kws_ref_model").read_bytes()
    for cut in (16, 1000, len(data) // 2, len(data) - 8):
        bad = tmp_path / f"cut{cut}.tflite"
        bad.write_bytes(data[:cut])
        p = run_cli("inspect", bad)
        assert p.returncode == 2, (cut, p.stdout, p.stderr)
        assert "error:" in p.stderr


def test_missing_model_file(tmp_path):
    p = run_cli("deploy", tmp_path / "nope.tflite", "--board=host")
    assert p.returncode == 2 and "nope.tflite" in p.stderr


def test_unknown_board(tiny_model, tmp_path):
    p = run_cli("deploy", tiny_model, "--board=esp32-toaster", "-o", tmp_path / "out")
    assert p.returncode == 2
    assert "esp32-toaster" in p.stderr and "mps2-an386" in p.stderr and "nucleo-f446re" in p.stderr


@pytest.mark.parametrize("array, what", [
    (np.zeros((1, 7), np.float32), "[1, 7]"),            # wrong shape
    (np.zeros((1, 8), np.int8), "int8"),                 # integers for a float input: refused, not guessed at
])
def test_input_with_wrong_shape_or_dtype(tiny_model, tmp_path, array, what):
    x = tmp_path / "x.npy"
    np.save(x, array)
    p = run_cli("deploy", tiny_model, "--board=host", "--input", x, "-o", tmp_path / "out")
    assert p.returncode == 2
    assert what in p.stderr and "float32[1, 8]" in p.stderr


def test_float64_input_for_a_float32_model_is_taken(tiny_model, tmp_path):
    """numpy's default float64 (np.random.rand, np.array([...])) is converted, not refused."""
    np.save(tmp_path / "x.npy", np.full((1, 8), 0.25))
    p = run_cli("deploy", tiny_model, "--board=host", "--input", tmp_path / "x.npy", "-o", tmp_path / "out")
    assert p.returncode == 0 and "outputs match reference: yes" in p.stdout, p.stderr


def _path_without(tmp_path, *tools) -> str:
    """A PATH holding everything the current PATH has, except `tools`."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for d in os.environ["PATH"].split(os.pathsep):
        if not os.path.isdir(d):
            continue
        for name in os.listdir(d):
            link = bindir / name
            if name not in tools and not link.exists() and os.access(os.path.join(d, name), os.X_OK):
                link.symlink_to(os.path.join(d, name))
    assert not any(shutil.which(t, path=str(bindir)) for t in tools)
    return str(bindir)


def test_missing_arm_gcc(tiny_model, tmp_path):
    env = dict(os.environ, PATH=_path_without(tmp_path, "arm-none-eabi-gcc"))
    p = run_cli("deploy", tiny_model, "--board=mps2-an386", "--emulate", "-o", tmp_path / "out", env=env)
    assert p.returncode == 2
    assert "arm-none-eabi-gcc" in p.stderr and "apt-get install" in p.stderr and "gcc-arm-none-eabi" in p.stderr


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="needs arm-none-eabi-gcc to get to the run step")
def test_missing_qemu(tiny_model, tmp_path):
    env = dict(os.environ, PATH=_path_without(tmp_path, "qemu-system-arm"))
    p = run_cli("deploy", tiny_model, "--board=mps2-an386", "--emulate", "-o", tmp_path / "out", env=env)
    assert p.returncode == 2
    assert "qemu-system-arm" in p.stderr and "apt-get install" in p.stderr


def test_refuses_to_overwrite_foreign_directory(tiny_model, tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.tex").write_text("precious")
    p = run_cli("deploy", tiny_model, "--board=host", "-o", out)
    assert p.returncode == 2 and str(out) in p.stderr
    assert (out / "thesis.tex").read_text() == "precious"


# --- issue 14: the error boundary, exit codes and the smaller mistakes --------------------------

def test_internal_error_exits_3_with_a_crash_log(tmp_path):
    """A bug (here: an exception planted in `boards`) is not a user error: exit 3, one line
    naming the version and the command, the traceback in a log file whose path is printed."""
    code = ("import sys, microcompile.target as t\n"
            "def broken(): raise RuntimeError('planted bug')\n"
            "t.list_boards = broken\n"
            "from microcompile.cli import main\n"
            "sys.exit(main(['boards']))\n")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       cwd=pathlib.Path(__file__).resolve().parents[2])
    assert p.returncode == 3, p.stderr
    assert "Traceback" not in p.stderr
    assert "internal error in microcompile" in p.stderr and "microcompile boards" in p.stderr
    log = pathlib.Path(next(line.split("crash log: ", 1)[1].strip() for line in p.stderr.splitlines()
                            if "crash log: " in line))
    text = log.read_text()
    assert "Traceback" in text and "planted bug" in text and "microcompile boards" in text
    log.unlink()


def test_broken_pipe_is_not_a_traceback(tiny_model):
    """`microcompile inspect model | head -2`: the reader went away; no BrokenPipeError noise."""
    r, w = os.pipe()
    os.close(r)   # every write to the pipe fails with EPIPE, deterministically
    p = subprocess.run([sys.executable, "-m", "microcompile", "inspect", str(tiny_model)], stdout=w,
                       stderr=subprocess.PIPE, text=True, timeout=120)
    os.close(w)
    assert "Traceback" not in p.stderr and "BrokenPipeError" not in p.stderr, p.stderr
    assert p.returncode == 141


def test_keep_float_naming_nothing_in_the_model(tiny_model, tmp_path):
    np.save(tmp_path / "calib.npy", np.random.default_rng(0).normal(size=(4, 8)).astype(np.float32))
    p = run_cli_inprocess("quantize", tiny_model, "--calibration", tmp_path / "calib.npy", "-o", tmp_path / "q.tflite",
                "--keep-float", "softmax,NOSUCHOP")
    assert p.returncode == 2 and "NOSUCHOP" in p.stderr and "softmax" in p.stderr
    assert not (tmp_path / "q.tflite").exists()


def test_calibration_without_quantize(tiny_model, tmp_path):
    np.save(tmp_path / "calib.npy", np.zeros((4, 8), np.float32))
    p = run_cli_inprocess("deploy", tiny_model, "--board=host", "--calibration", tmp_path / "calib.npy", "-o", tmp_path / "out")
    assert p.returncode == 2 and "--calibration" in p.stderr and "--quantize" in p.stderr
    assert not (tmp_path / "out").exists()


def test_very_long_board_name_is_not_echoed_in_full(tiny_model, tmp_path):
    p = run_cli_inprocess("deploy", tiny_model, "--board=" + "b" * 5000, "-o", tmp_path / "out")
    assert p.returncode == 2 and "bbbb" in p.stderr and "mps2-an386" in p.stderr
    assert len(p.stderr) < 1000, len(p.stderr)


def test_empty_npz_input_says_it_holds_no_arrays(tiny_model, tmp_path):
    np.savez(tmp_path / "x.npz")
    p = run_cli_inprocess("deploy", tiny_model, "--board=host", "--input", tmp_path / "x.npz", "-o", tmp_path / "out")
    assert p.returncode == 2 and "holds no arrays" in p.stderr
    assert "arrays found" not in p.stderr
