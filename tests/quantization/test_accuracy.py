"""The issue's accuracy bars, measured the way benchmarks/quantization_accuracy.py prints them.

digits: our int8 within 1 percentage point of float32, and no worse than onnxruntime's
quantize_static (QDQ, per-channel) on the same calibration samples.
MLPerf float models (slow): output SQNR vs float32 of our int8 >= the reference int8's - 1 dB.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from support.examples import benchmark

ROOT = Path(__file__).resolve().parents[2]

from microcompile.quantization import DEFAULT_METHOD  # noqa: E402
from tests.conftest import MODELS_DIR, model_path  # noqa: E402


def test_digits_int8_accuracy_against_float_and_onnxruntime(tmp_path):
    digits_table = benchmark("digits_models").digits_table

    row = digits_table(tmp_path, [DEFAULT_METHOD])
    ours = row[f"ours int8 {DEFAULT_METHOD}"]
    assert row["float32"] >= 0.95
    assert row["onnx float32 (ort)"] == row["float32"]   # the ONNX export is the same network
    assert ours >= row["float32"] - 0.01
    assert ours >= row["onnxruntime int8"]


@pytest.mark.heavy
@pytest.mark.slow      # a minute: an accuracy comparison, not a correctness check
def test_mlperf_sqnr_no_worse_than_reference_minus_1db():
    for name in ("kws_ref_model_float32", "pretrainedResnet", "ad01_fp32"):
        model_path(name)   # skips when the models are absent
    mlperf_table = benchmark("quantization_accuracy").mlperf_table

    rows = mlperf_table(MODELS_DIR, [DEFAULT_METHOD])
    assert len(rows) == 3
    for r in rows:
        assert r[DEFAULT_METHOD] >= r["reference_db"] - 1.0, r
