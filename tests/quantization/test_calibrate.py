"""Range selection (min-max, percentile, MSE) and TFLite's activation quantization."""

from __future__ import annotations

import numpy as np
import pytest

from microcompile.ir import Graph, Node, Tensor
from microcompile.quantization.calibrate import METHODS, Calibration, Range, activation_qparams


def _identity_graph(n=64):
    t = {name: Tensor(name, (1, n), "float32") for name in ("x", "y")}
    return Graph("relu", t, (Node("relu", "relu", ("x",), ("y",)),), ("x",), ("y",))


@pytest.mark.parametrize("lo,hi", [(-1.0, 1.0), (0.0, 6.0), (-3.5, -0.5), (0.25, 2.0), (-0.001, 100.0)])
def test_activation_qparams_represent_zero_and_range(lo, hi):
    q = activation_qparams(Range(lo, hi))
    lo0, hi0 = min(lo, 0), max(hi, 0)
    assert -128 <= q.zp <= 127
    # TFLite's scale: the range over 255 steps, as a float32
    assert q.s == float(np.float32((hi0 - lo0) / 255))
    # zero is exactly representable: the zero point is a point of the integer grid (so the
    # code k = zp dequantizes to exactly 0.0), at the grid's end for one-signed ranges
    assert isinstance(q.zp, int)
    if lo0 == 0:
        assert q.zp == -128
    if hi0 == 0:
        assert q.zp == 127
    # the ends are within half a step of the grid ends
    assert abs((-128 - q.zp) * q.s - lo0) <= q.s * 0.5 + 1e-9
    assert abs((127 - q.zp) * q.s - hi0) <= q.s * 0.5 + 1e-6 * abs(hi0)


def test_degenerate_range_gets_a_valid_scale():
    q = activation_qparams(Range(0.0, 0.0))
    assert q.s > 0 and q.zp == -128


def _calibrated(values):
    g = _identity_graph(values.shape[1])
    return Calibration(g, [{"x": v[None, :].astype(np.float32)} for v in values], progress=False)


def test_minmax_is_the_observed_range_and_the_others_clip_outliers():
    rng = np.random.default_rng(0)
    values = rng.normal(0, 1, (200, 256))
    values[3, 5] = 40.0   # one outlier in 51200 values (more than 0.01%: percentile clips it)
    cal = _calibrated(values)
    r = {m: cal.range("x", m) for m in METHODS}
    assert r["minmax"].hi == pytest.approx(40.0) and r["minmax"].lo == pytest.approx(values.min())
    assert r["percentile"].hi < 10 < r["minmax"].hi
    # MSE weighs the outlier's squared clipping error (~35^2) against 51200 values' rounding
    # noise, and a single one is worth keeping: never wider than min-max, though
    assert r["mse"].hi <= r["minmax"].hi
    # ReLU output: never below zero, so no method wastes steps on negatives
    assert all(cal.range("y", m).lo == 0.0 for m in METHODS)


@pytest.mark.parametrize("dist", ["laplace", "student_t", "rare_outlier"])
def test_mse_range_has_the_least_squared_error(dist):
    rng = np.random.default_rng(1)
    if dist == "rare_outlier":   # clipping only pays for a very rare outlier (8 bits are fine)
        values = rng.normal(0, 1, (100, 4096))
        values[7, 7] = 300.0
    else:
        values = rng.laplace(0, 1, (40, 256)) if dist == "laplace" else rng.standard_t(2, (40, 256))
    cal = _calibrated(values)

    def err(r):
        q = activation_qparams(r)
        deq = (np.clip(np.round(values / q.s) + q.zp, -128, 127) - q.zp) * q.s
        return np.mean((values - deq) ** 2)
    errors = {m: err(cal.range("x", m)) for m in METHODS}
    assert errors["mse"] <= min(errors.values()) * 1.02
    if dist == "rare_outlier":
        assert errors["mse"] < 0.8 * errors["minmax"]


def test_unknown_method():
    cal = _calibrated(np.ones((2, 4)))
    with pytest.raises(ValueError, match="unknown calibration method"):
        cal.range("x", "entropy?")
