"""The skip budget (skip_budget.py, hooks in conftest.py): every skip reason is counted at the
end of the run, and a reason outside the allow-list fails a run that would otherwise pass."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import skip_budget

HERE = Path(__file__).resolve().parent

SAMPLE = '''
import pytest
from conftest import model_path

def test_runs():
    pass

def test_models_absent():
    model_path("no_such_model")

def test_skips_for_no_good_reason():
    pytest.skip("not written yet")
'''


@pytest.mark.parametrize("reason, key", [
    ("/x/shared/models/kws.tflite " + skip_budget.NO_MODELS, "models"),
    (skip_budget.NO_LITERT, "litert"),
    (skip_budget.NO_RAY, "ray"),
    (skip_budget.NO_XGBOOST, "xgboost"),
    (skip_budget.NO_HARDWARE + ": connect a NUCLEO-F446RE", "hardware"),
    ("could not import 'onnxruntime': No module named 'onnxruntime'", None),
    ("needs ops not implemented yet: pack", None),
])
def test_reasons_are_classified(reason, key):
    assert skip_budget.classify(reason, list(skip_budget.ALLOWED)) == key


def test_ci_allows_only_hardware(monkeypatch):
    monkeypatch.setenv("MC_SKIPS_ALLOWED", "hardware")
    keys = skip_budget.allowed_keys()
    assert keys == ["hardware"]
    assert skip_budget.classify(skip_budget.NO_MODELS, keys) is None
    monkeypatch.setenv("MC_SKIPS_ALLOWED", "hardware,wishful")
    with pytest.raises(ValueError, match="wishful"):
        skip_budget.allowed_keys()


def _run(tmp_path, select: str, env_extra=None, extra=()):
    for name in ("conftest.py", "skip_budget.py"):
        shutil.copy(HERE / name, tmp_path / name)
    (tmp_path / "test_sample.py").write_text(SAMPLE)
    env = {k: v for k, v in os.environ.items() if k != "MC_SKIPS_ALLOWED"}
    env.update(env_extra or {})
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra, "-k", select,
                           "test_sample.py"], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=300)


@pytest.mark.parametrize("extra", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_an_unlisted_reason_fails_the_run_and_every_reason_is_counted(tmp_path, extra):
    p = _run(tmp_path, "runs or no_good_reason or absent", extra=extra)
    assert p.returncode == 1, p.stdout
    assert "1 passed, 2 skipped" in p.stdout
    assert "skip budget" in p.stdout and "2 skipped; allowed reasons" in p.stdout
    assert "1  NOT ALLOWED   not written yet" in p.stdout
    assert "1  models" in p.stdout and "FAILED: 1 skip(s) with a reason that is not allowed" in p.stdout


def test_allowed_reasons_pass_and_ci_narrows_them(tmp_path):
    p = _run(tmp_path, "runs or absent")
    assert p.returncode == 0, p.stdout
    p = _run(tmp_path, "runs or absent", {"MC_SKIPS_ALLOWED": "hardware"})
    assert p.returncode == 1 and "NOT ALLOWED" in p.stdout, p.stdout
