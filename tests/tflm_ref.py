"""The second oracle: TFLite Micro's host interpreter (the `tflite-micro` package), used where
LiteRT refuses a model that TFLM runs (e.g. the old converter's bias quantized_dimension).

`run_tflm(model, inputs, n_outputs)` runs one inference and returns the outputs in the model's order.
Where TFLM and LiteRT both run a model but differ (FULLY_CONNECTED rounds twice in TFLM, once
in LiteRT), microcompile follows LiteRT; docs/models.md ("The model corpus and the second oracle") lists the differences.
"""

from __future__ import annotations

import numpy as np
import pytest


def tflm_interpreter(model: bytes, arena_size: int | None = None):
    """TFLM's interpreter of `model`; its default arena (10x the model's size) is too small for
    a one-op model whose tensors are all inputs or whose kernel keeps state (the RFFT's)."""
    runtime = pytest.importorskip("tflite_micro.python.tflite_micro.runtime",
                                  reason="tflite-micro (TFLM's host interpreter) is not installed")
    if arena_size is None:
        return runtime.Interpreter.from_bytes(bytes(model))
    return runtime.Interpreter.from_bytes(bytes(model), arena_size=arena_size)


def run_tflm(model: bytes, inputs: list[np.ndarray], n_outputs: int = 1) -> list[np.ndarray]:
    """One inference of `model` with `inputs` in the model's input order."""
    interp = tflm_interpreter(model)
    for k, x in enumerate(inputs):
        interp.set_input(np.ascontiguousarray(x), k)
    interp.invoke()
    return [np.array(interp.get_output(k), copy=True) for k in range(n_outputs)]
