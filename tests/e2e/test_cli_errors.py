"""User mistakes get a clear message and exit code 2, never a traceback."""

import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from tests.conftest import model_path

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
    (np.zeros((1, 8), np.int8), "int8"),                 # wrong dtype
    (np.zeros((1, 8), np.float64), "float64"),
])
def test_input_with_wrong_shape_or_dtype(tiny_model, tmp_path, array, what):
    x = tmp_path / "x.npy"
    np.save(x, array)
    p = run_cli("deploy", tiny_model, "--board=host", "--input", x, "-o", tmp_path / "out")
    assert p.returncode == 2
    assert what in p.stderr and "float32[1, 8]" in p.stderr


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
