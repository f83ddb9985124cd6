"""Exact rounding ties against LiteRT BUILTIN_REF, where rounding schemes part: random
scales almost never produce one, so these graphs are built to make half of their values
ties (power-of-two scales, small weights, inputs on half steps).

  fully_connected: LiteRT rounds a negative tie away from zero (-2.5 -> -3), not up;
  quantize (float32 -> int8): TFLite rounds ties away from zero, not to even.
"""

from __future__ import annotations

import numpy as np

from litert_ref import run_reference
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, QuantParams, Tensor, verify
from microcompile.reference import interp


def test_fully_connected_breaks_negative_ties_away_from_zero():
    rng = np.random.default_rng(0)
    w = rng.choice(np.array([-1, 1], np.int8), (4, 2))
    t = {"x": Tensor("x", (64, 2), "int8", QuantParams((2.0 ** -4,), (0,))),
         "w": Tensor("w", (4, 2), "int8", QuantParams((2.0 ** -3,), (0,)), data=w),
         "y": Tensor("y", (64, 4), "int8", QuantParams((2.0 ** -6,), (0,)))}   # multiplier exactly 1/2
    g = verify(Graph("fc_ties", t, (Node("fully_connected", "fc", ("x", "w", ""), ("y",),
                                         {"activation": "NONE", "keep_num_dims": False}),), ("x",), ("y",)))
    x = rng.integers(-128, 128, (64, 2)).astype(np.int8)
    acc = x.astype(np.int64) @ w.T.astype(np.int64)
    assert np.sum((acc < 0) & (acc % 2 == 1) & (acc > -256)) >= 20      # negative exact ties, not clamped
    got = interp.run(g, {"x": x})["y"]
    assert np.array_equal(got, run_reference(write_tflite(g), {"x": x})["y"])
    tie = np.argwhere((acc < 0) & (acc % 2 == 1) & (acc > -256))[0]
    assert got[tuple(tie)] == (acc[tuple(tie)] - 1) // 2                # -2.5 -> -3


def test_quantize_breaks_ties_away_from_zero():
    k = np.arange(-100, 100)
    x = ((k + 0.5) * 0.25).astype(np.float32).reshape(1, -1)             # every value a tie at scale 0.25
    t = {"x": Tensor("x", x.shape, "float32"), "q": Tensor("q", x.shape, "int8", QuantParams((0.25,), (3,)))}
    g = verify(Graph("quantize_ties", t, (Node("quantize", "quantize", ("x",), ("q",)),), ("x",), ("q",)))
    got = interp.run(g, {"x": x})["q"]
    assert np.array_equal(got, run_reference(write_tflite(g), {"x": x})["q"])
    want = np.clip(np.where(k >= 0, k + 1, k) + 3, -128, 127)           # 2.5 -> 3, -2.5 -> -3
    assert np.array_equal(got.ravel(), want)
