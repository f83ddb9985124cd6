"""ir/compare.py is the one definition of "outputs match" (every test and `deploy` use it),
so it is tested on its own: a looser tolerance, a NaN that passes or a dtype that slips
would leave every float comparison in the suite green."""

from __future__ import annotations

import numpy as np
import pytest

from microcompile.ir.compare import compare


def _ref():
    return np.linspace(-4.0, 4.0, 33, dtype=np.float32).reshape(3, 11)


@pytest.mark.parametrize("rel, equal", [(0.0, True), (5e-6, True), (9e-6, True), (2e-5, False), (1e-3, False)])
def test_float_relative_tolerance_is_1e_5(rel, equal):
    ref = _ref()
    dev = (ref.astype(np.float64) * (1 + rel)).astype(np.float32)
    c = compare(dev, ref)
    assert c.equal == equal, c
    if not equal:
        assert c.n_diff > 0 and c.first_mismatch is not None and c.max_abs_diff > 0


def test_floor_is_a_millionth_of_the_largest_magnitude():
    ref = np.array([1000.0, 0.0, 1e-3], np.float32)
    assert compare(ref + np.array([0, 9e-4, 0], np.float32), ref).equal        # 9e-4 < 1e-6 * 1000
    assert not compare(ref + np.array([0, 2e-3, 0], np.float32), ref).equal    # 2e-3 > 1e-3
    c = compare(ref + np.array([0, 0, 2e-3], np.float32), ref)                  # a small element: no free pass
    assert not c.equal and c.first_mismatch == (2,)


def test_nan_inf_shape_and_dtype_never_match():
    ref = _ref()
    dev = ref.copy()
    dev[1, 2] = np.nan
    c = compare(dev, ref)
    assert not c.equal and c.first_mismatch == (1, 2)
    dev[1, 2] = np.inf
    assert not compare(dev, ref).equal
    assert not compare(ref.reshape(11, 3), ref).equal
    assert not compare(ref.astype(np.float64), ref).equal


def test_integers_are_exact():
    ref = np.arange(-128, 128, dtype=np.int8)
    assert compare(ref.copy(), ref).equal
    dev = ref.copy()
    dev[200] += 1
    c = compare(dev, ref)
    assert not c.equal and c.n_diff == 1 and c.first_mismatch == (200,) and c.max_abs_diff == 1


def test_nan_and_infinity_equal_only_themselves_in_the_same_place():
    n, inf = np.nan, np.inf
    ref = np.array([1.0, n, inf, -inf, 1000.0], np.float32)
    assert compare(ref.copy(), ref).equal
    for k, v in ((1, 2.0), (2, -inf), (3, inf), (0, n), (4, inf), (2, n)):
        dev = ref.copy()
        dev[k] = v
        c = compare(dev, ref)
        assert not c.equal and c.n_diff == 1 and c.first_mismatch == (k,) and c.max_abs_diff == inf, (k, v, c)
    # the magnitude floor is over the finite values: 9e-4 < 1e-6 * 1000, NaN and infinities aside
    assert compare(ref + np.array([9e-4, 0, 0, 0, 0], np.float32), ref).equal
