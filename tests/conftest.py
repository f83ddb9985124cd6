"""Shared fixtures: where the MLPerf Tiny models are, and small tools for the tests."""

import pathlib

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
MODELS_DIR = REPO.parent / "shared" / "models"

INT8_MODELS = ["kws_ref_model", "pretrainedResnet_quant", "ad01_int8"]
FLOAT_MODELS = ["kws_ref_model_float32", "pretrainedResnet", "ad01_fp32"]
ALL_MODELS = INT8_MODELS + FLOAT_MODELS


def model_path(name: str) -> pathlib.Path:
    """Path of an MLPerf Tiny model in ../shared/models; skips the test when it is absent."""
    path = MODELS_DIR / f"{name}.tflite"
    if not path.is_file():
        pytest.skip(f"{path} not found: the MLPerf Tiny models live in ../shared/models next to the repository")
    return path
