"""Intrinsics of the elementwise family: float libm functions and the int8 log-softmax kernel."""

from __future__ import annotations

import math

import numpy as np

from .intrinsics import Intrinsic, register

# tanhf / logf as the C library computes them in float32: within an ulp of the double
# result rounded to float32, which the float32 tests' tolerance covers.
register(Intrinsic("tanhf", ("float32",), "float32", "math.h", lambda x: np.float32(math.tanh(float(x)))))
register(Intrinsic("logf", ("float32",), "float32", "math.h", lambda x: np.float32(math.log(float(x)))))


def _log_softmax_s8(x_ptr, y_ptr, rows, depth, table_ptr, mult, left_shift, rmult, rshift, diff_min):
    """Python twin of runtime_c/kernels/mc_log_softmax.c."""
    from . import fixedpoint_log
    from .qparams_elementwise import LogSoftmaxParams
    (xa, xo), (ya, yo) = x_ptr, y_ptr
    x = xa[xo:xo + rows * depth].reshape(rows, depth)
    p = LogSoftmaxParams(mult, left_shift, rmult, rshift, diff_min)
    ya[yo:yo + rows * depth] = fixedpoint_log.log_softmax_int8(x, p).reshape(-1)


register(Intrinsic("mc_log_softmax_s8", ("handle", "handle", "int32", "int32", "handle", "int32", "int32",
                                         "int32", "int32", "int32"),
                   "void", "mc_log_softmax.h", _log_softmax_s8, extern=True, writes=(1,)))
