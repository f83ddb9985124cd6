"""Shared fixtures: where the MLPerf Tiny models are, small tools for the tests, and the
skip budget (skip_budget.py): every skip reason is printed with its count at the end of the
run, and a skip whose reason is not allowed fails the run."""

import pathlib
from collections import Counter

import pytest

import skip_budget

REPO = pathlib.Path(__file__).resolve().parent.parent
MODELS_DIR = REPO.parent / "shared" / "models"

INT8_MODELS = ["kws_ref_model", "pretrainedResnet_quant", "ad01_int8"]
FLOAT_MODELS = ["kws_ref_model_float32", "pretrainedResnet", "ad01_fp32"]
ALL_MODELS = INT8_MODELS + FLOAT_MODELS


def model_path(name: str) -> pathlib.Path:
    """Path of an MLPerf Tiny model in ../shared/models; skips the test when it is absent."""
    path = MODELS_DIR / f"{name}.tflite"
    if not path.is_file():
        pytest.skip(f"{path} {skip_budget.NO_MODELS}")
    return path


# --- the skip budget ------------------------------------------------------------------------
# Under pytest-xdist these hooks run in the controller, which receives every worker's reports.

_SKIPS: list[str] = []
_BACKEND: Counter = Counter()   # (ONNX backend suite category, outcome) -> count


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        _SKIPS.append(skip_budget.reason_of(report))
    if report.when == "call" and "test_onnx_backend.py::OnnxBackend" in report.nodeid:
        category = report.nodeid.split("::")[1].replace("OnnxBackend", "").replace("ModelTest", "")
        _BACKEND[category, report.outcome] += 1


def _is_worker(config) -> bool:
    return hasattr(config, "workerinput")


def pytest_sessionfinish(session, exitstatus):
    if _is_worker(session.config):
        return
    _, bad = skip_budget.summary(_SKIPS, skip_budget.allowed_keys())
    if bad and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, config):
    if _is_worker(config):
        return
    if _BACKEND:   # the figures docs/onnx.md quotes
        terminalreporter.section("ONNX backend suite (tests/onnx_backend/expected_pass.txt)")
        for category in sorted({c for c, _ in _BACKEND}):
            terminalreporter.write_line(f"{category:18s} " + "  ".join(
                f"{k} {_BACKEND[category, k]}" for k in ("passed", "failed", "skipped")))
    keys = skip_budget.allowed_keys()
    lines, bad = skip_budget.summary(_SKIPS, keys)
    terminalreporter.section("skip budget")
    terminalreporter.write_line(f"{len(_SKIPS)} skipped; allowed reasons: {', '.join(keys) or 'none'} "
                                "(tests/skip_budget.py, MC_SKIPS_ALLOWED)")
    for line in lines:
        terminalreporter.write_line(line)
    if bad:
        terminalreporter.write_line(f"FAILED: {bad} skip(s) with a reason that is not allowed: a skipped test "
                                    "tests nothing; fix the cause (or, if no code change can, add the reason "
                                    "to tests/skip_budget.py)", red=True, bold=True)
