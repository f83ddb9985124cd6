"""Edge cases of the TFLite fixed-point helpers and the int8 parameter records."""

import numpy as np
import pytest

from microcompile.ir import QuantParams
from microcompile.ir import fixedpoint as fp


@pytest.mark.parametrize("real, expected", [
    (0.0, (0, 0)),
    (0.5, (1 << 30, 0)),
    (1.0, (1 << 30, 1)),
    (0.75, (3 << 29, 0)),
    (1 - 2.0 ** -40, (1 << 30, 1)),      # q rounds up to 2^31: halve it and bump the shift
    (2.0 ** -40, (0, 0)),                # shift < -31 flushes to zero
])
def test_quantize_multiplier(real, expected):
    assert fp.quantize_multiplier(real) == expected


def test_srdhm_saturates_and_nudges_as_gemmlowp():
    m = fp.INT32_MIN
    assert fp.saturating_rounding_doubling_high_mul(m, m) == fp.INT32_MAX
    # 3 * 2^30 / 2^31 = 1.5 -> 2; gemmlowp's negative nudge (1 - 2^30) takes -1.5 to -1.
    np.testing.assert_array_equal(fp.saturating_rounding_doubling_high_mul([3, -3], 1 << 30), [2, -1])


def test_rounding_divide_by_pot():
    np.testing.assert_array_equal(fp.rounding_divide_by_pot([5, -5, 6, -6, 7, -7], 2), [1, -1, 2, -2, 2, -2])


def test_rounding_schemes_differ_where_expected():
    x = np.array([10, -10, 6, -6])          # x * 0.25: 2.5, -2.5, 1.5, -1.5
    m, s = fp.quantize_multiplier(0.25)
    np.testing.assert_array_equal(fp.multiply_by_quantized_multiplier(x, m, s), [3, -3, 2, -2])
    np.testing.assert_array_equal(fp.multiply_by_quantized_multiplier_single_round(x, m, s), [3, -2, 2, -1])
    np.testing.assert_array_equal(fp.multiply_by_quantized_multiplier_single_round_away(x, m, s), [3, -3, 2, -2])
    # x * 0.25 with 5: 1.25. Double rounding: round(2.5)=3, then 3/2 -> 2. Single: 1.
    m, s = fp.quantize_multiplier(0.25)
    assert fp.multiply_by_quantized_multiplier(5, m, s) == 2
    assert fp.multiply_by_quantized_multiplier_single_round_away(5, m, s) == 1


def test_per_channel_shift_arrays():
    mult, shift = fp.quantize_multipliers([0.5, 0.001, 3.0])
    out = fp.multiply_by_quantized_multiplier(np.array([[1000, 1000, 1000]]), mult, shift)
    np.testing.assert_array_equal(out, [[500, 1, 3000]])


@pytest.mark.parametrize("act, expected", [
    ("NONE", (-128, 127)), ("RELU", (-10, 127)), ("RELU6", (-10, 110)), ("RELU_N1_TO_1", (-30, 10)),
])
def test_activation_range_int8(act, expected):
    assert fp.activation_range(act, QuantParams((0.05,), (-10,)), "int8") == expected


def test_activation_range_float():
    assert fp.activation_range("RELU6", dtype="float32") == (0.0, 6.0)
    assert fp.activation_range("NONE", dtype="float32") == (-np.inf, np.inf)


def test_softmax_exp_and_reciprocal():
    a = np.array([0, -(1 << 26), -(1 << 24)])      # Q5.26: 0, -1, -1/4
    np.testing.assert_allclose(fp.exp_on_negative_values(a, 5) / 2 ** 31, np.exp([0, -1, -0.25]), atol=1e-6)
    x = np.array([0, 1 << 30])                     # Q0.31: 0, 0.5
    np.testing.assert_allclose(fp.one_over_one_plus_x_for_x_in_0_1(x) / 2 ** 31, [1, 2 / 3], atol=1e-6)
