"""Intrinsics of the elementwise family: float libm functions and the int8 log-softmax kernel."""

from __future__ import annotations

import math

import numpy as np

from ..ir import fixedpoint_log
from .intrinsics import StructType, intrinsic, requantized


# tanhf / logf as the C library computes them in float32: within an ulp of the double
# result rounded to float32, which the float32 tests' tolerance covers.
@intrinsic("tanhf", ("float32",), "float32", "math.h")
def _tanhf(x):
    return np.float32(math.tanh(float(x)))


@intrinsic("logf", ("float32",), "float32", "math.h")
def _logf(x):
    return np.float32(math.log(float(x)))


@intrinsic("sqrtf", ("float32",), "float32", "math.h")
def _sqrtf(x):     # IEEE 754 requires sqrt correctly rounded: C and numpy agree exactly
    return np.float32(math.sqrt(float(x))) if x >= 0 else np.float32("nan")


@intrinsic("erff", ("float32",), "float32", "math.h")
def _erff(x):
    return np.float32(math.erf(float(x)))


LOG_SOFTMAX_PARAMS = StructType("mc_log_softmax_params_t", (
    "rows", "depth", "input_multiplier", "input_left_shift", "reverse_multiplier", "reverse_shift", "diff_min"))


@intrinsic("mc_log_softmax_s8", ("handle", "handle", "handle", LOG_SOFTMAX_PARAMS), "void", "mc_log_softmax.h",
           extern=True, writes=(1,))
def _log_softmax_s8(x_ptr, y_ptr, table_ptr, params):
    """Python twin of runtime_c/kernels/mc_log_softmax.c."""
    (xa, xo), (ya, yo) = x_ptr, y_ptr
    rows, depth = params["rows"], params["depth"]
    x = xa[xo:xo + rows * depth].reshape(rows, depth)
    p = fixedpoint_log.LogSoftmaxParams(*(params[k] for k in LOG_SOFTMAX_PARAMS.fields[2:]))
    ya[yo:yo + rows * depth] = fixedpoint_log.log_softmax_int8(x, p).reshape(-1)


# mc_add_tables_mve_s8 (Helium): an int8 ADD whose inputs' rescales are 256-entry tables
# (schedule/tabulate.py), four elements per vector (runtime_c/include/mc_elementwise.h).
ADD_TABLES_MVE_KERNEL = "mc_add_tables_mve_s8"
ADD_TABLES_PARAMS = StructType("mc_add_tables_params_t",
                               ("n", "mult", "rshift", "out_offset", "act_min", "act_max"))


@intrinsic(ADD_TABLES_MVE_KERNEL, ("handle",) * 5 + (ADD_TABLES_PARAMS,), "void", "mc_elementwise.h",
           extern=True, writes=(0,))
def _add_tables_mve(y, a, b, ta, tb, p: dict):
    (ya, yo), (aa, ao), (ba, bo), (taa, tao), (tba, tbo) = y, a, b, ta, tb
    n = p["n"]
    va = taa[tao + aa[ao:ao + n].astype(np.int64) + 128].astype(np.int64)
    vb = tba[tbo + ba[bo:bo + n].astype(np.int64) + 128].astype(np.int64)
    ya[yo:yo + n] = requantized(va + vb, p["mult"], p["rshift"], p)
