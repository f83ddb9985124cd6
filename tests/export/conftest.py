"""The models the export tests build into applications."""

from __future__ import annotations

from pathlib import Path

import pytest

import microcompile as mc
from support.digits import build_graph, load_digits_split, train

MODELS = Path(__file__).resolve().parents[2].parent / "shared" / "models"


@pytest.fixture(scope="module")
def sources(tmp_path_factory):
    """(name, model) pairs: kws and ad01, or the example model float and quantized."""
    if (MODELS / "kws_ref_model.tflite").is_file() and (MODELS / "ad01_int8.tflite").is_file():
        return [("kws", MODELS / "kws_ref_model.tflite"), ("ad01", MODELS / "ad01_int8.tflite")]
    from microcompile.frontend.tflite.writer import write_tflite
    tmp = tmp_path_factory.mktemp("models")
    (xtr, ytr), _ = load_digits_split()
    path = tmp / "digits.tflite"
    path.write_bytes(write_tflite(build_graph(train(xtr, ytr, epochs=30))))
    q = mc.quantize(path, calibration=xtr[:50].reshape(50, 1, 64))
    return [("digits", path), ("digits_s8", q)]
