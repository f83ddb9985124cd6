"""NaN and infinity in calibration samples and in deploy inputs: refused with exit 2, naming
where they are; never calibrated on silently, never a bare "outputs match reference: NO"."""

from __future__ import annotations

import pathlib

import numpy as np
import pytest

from support.cli_run import run_cli_inprocess as run_cli, tiny_model


@pytest.fixture(scope="module")
def model(tmp_path_factory) -> pathlib.Path:
    return tiny_model(tmp_path_factory.mktemp("model") / "tiny.tflite")


def _calibration(tmp_path, poison) -> pathlib.Path:
    x = np.random.default_rng(0).normal(size=(6, 8)).astype(np.float32)
    poison(x)
    np.save(tmp_path / "calib.npy", x)
    return tmp_path / "calib.npy"


@pytest.mark.parametrize("poison, where", [
    (lambda x: x.fill(np.nan), "sample 0"),                       # all NaN: once wrote a model, exit 0
    (lambda x: x.__setitem__((3, 5), np.nan), "sample 3"),          # one NaN: once a ValueError traceback
    (lambda x: x.__setitem__((4, 0), -np.inf), "sample 4"),
])
def test_non_finite_calibration_is_refused(model, tmp_path, poison, where):
    out = tmp_path / "q.tflite"
    p = run_cli("quantize", model, "--calibration", _calibration(tmp_path, poison), "-o", out)
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert where in p.stderr and "'x'" in p.stderr and ("NaN" in p.stderr or "infinite" in p.stderr)
    assert not out.exists()


def test_non_finite_calibration_under_deploy(model, tmp_path):
    calib = _calibration(tmp_path, lambda x: x.__setitem__((1, 1), np.inf))
    p = run_cli("deploy", model, "--board=host", "--quantize", "int8", "--calibration", calib, "-o", tmp_path / "out")
    assert p.returncode == 2 and "sample 1" in p.stderr


@pytest.mark.parametrize("value", [np.nan, np.inf])
def test_non_finite_input_is_explained(model, tmp_path, value):
    x = np.zeros((1, 8), np.float32)
    x[0, 2] = value
    np.save(tmp_path / "x.npy", x)
    p = run_cli("deploy", model, "--board=host", "--input", tmp_path / "x.npy", "-o", tmp_path / "out")
    assert p.returncode == 2, (p.stdout, p.stderr)
    assert "'x'" in p.stderr and "non-finite" in p.stderr and "[0, 2]" in p.stderr
    assert "RuntimeWarning" not in p.stderr
    assert "outputs match reference" not in p.stdout
