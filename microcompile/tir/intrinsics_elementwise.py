"""Intrinsics of the elementwise family: float libm functions and the int8 log-softmax kernel."""

from __future__ import annotations

import math

import numpy as np

from ..ir import fixedpoint_log
from .intrinsics import intrinsic


# tanhf / logf as the C library computes them in float32: within an ulp of the double
# result rounded to float32, which the float32 tests' tolerance covers.
@intrinsic("tanhf", ("float32",), "float32", "math.h")
def _tanhf(x):
    return np.float32(math.tanh(float(x)))


@intrinsic("logf", ("float32",), "float32", "math.h")
def _logf(x):
    return np.float32(math.log(float(x)))


@intrinsic("mc_log_softmax_s8", ("handle", "handle", "int32", "int32", "handle", "int32", "int32", "int32", "int32",
                                 "int32"), "void", "mc_log_softmax.h", extern=True, writes=(1,))
def _log_softmax_s8(x_ptr, y_ptr, rows, depth, table_ptr, mult, left_shift, rmult, rshift, diff_min):
    """Python twin of runtime_c/kernels/mc_log_softmax.c."""
    (xa, xo), (ya, yo) = x_ptr, y_ptr
    x = xa[xo:xo + rows * depth].reshape(rows, depth)
    p = fixedpoint_log.LogSoftmaxParams(mult, left_shift, rmult, rshift, diff_min)
    ya[yo:yo + rows * depth] = fixedpoint_log.log_softmax_int8(x, p).reshape(-1)
