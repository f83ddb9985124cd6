"""The matmul micro-kernels of runtime_c/include/mc_matmul.h (BATCH_MATMUL of two run-time
operands, one batch element): declarations and Python semantics.

    mc_matmul_s8(y, a, b, scratch, &mc_matmul_params_t)
    mc_matmul_s16(y, a, b, &mc_matmul_params_t)
    mc_matmul_s8_pack_b(scratch, b, &mc_matmul_params_t)      mc_matmul_s8's two steps, for a b
    mc_matmul_s8_packed(y, a, scratch, &mc_matmul_params_t)   shared by several calls
"""

from __future__ import annotations

import numpy as np

from ..ir import fixedpoint as fp
from .intrinsics import StructType, intrinsic, pointer_store

MATMUL_PARAMS = StructType("mc_matmul_params_t", (
    "rows", "cols", "depth", "a_row_stride", "a_col_stride", "b_row_stride", "b_col_stride", "lhs_offset",
    "rhs_offset", "output_offset", "output_multiplier", "output_shift", "act_min", "act_max", "rounding"))
# mc_matmul_params_t.rounding: the requantization's rounding (reference/qparams.py's names).
ROUNDING_CODES = {"double": 0, "single": 1, "single_away": 2, "single_even": 3, "int64": 0}   # int64: mc_matmul_s16
_REQUANTIZE = (fp.multiply_by_quantized_multiplier, fp.multiply_by_quantized_multiplier_single_round,
               fp.multiply_by_quantized_multiplier_single_round_away,
               fp.multiply_by_quantized_multiplier_single_round_even)


def scratch_elements(cols: int, depth: int) -> int:
    """int16 elements of mc_matmul_s8's scratch (MC_MATMUL_SCRATCH_BYTES / 2)."""
    return cols * ((depth + 3) & ~3)


def _strided(ptr, rows: int, cols: int, row_stride: int, col_stride: int) -> np.ndarray:
    a, o = ptr
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    return a[o + r * row_stride + c * col_stride]


@intrinsic("mc_matmul_s8", ("handle",) * 4 + (MATMUL_PARAMS,), "void", "mc_matmul.h", extern=True, writes=(0, 3))
def _matmul_s8(y, a, b, scratch, p):
    m, n, k = p["rows"], p["cols"], p["depth"]
    av = _strided(a, m, k, p["a_row_stride"], p["a_col_stride"]).astype(np.int64) + p["lhs_offset"]
    bv = _strided(b, k, n, p["b_row_stride"], p["b_col_stride"]).astype(np.int64) + p["rhs_offset"]
    acc = _REQUANTIZE[p["rounding"]](av @ bv, np.array(p["output_multiplier"]), np.array(p["output_shift"]))
    ya, yo = y
    ya[yo:yo + m * n] = np.clip(acc + p["output_offset"], p["act_min"], p["act_max"]).reshape(-1).astype(np.int8)


def _slots(depth: int) -> np.ndarray:
    """Where k sits in a packed column (mc_matmul.c's slot(): groups of four k, k0 k2 k1 k3)."""
    k = np.arange(depth)
    return (k & ~3) + np.array([0, 2, 1, 3])[k & 3]


@intrinsic("mc_matmul_s8_pack_b", ("handle", "handle", MATMUL_PARAMS), "void", "mc_matmul.h", extern=True,
           writes=(0,))
def _matmul_s8_pack_b(scratch, b, p):
    n, k = p["cols"], p["depth"]
    kp = (k + 3) & ~3
    bv = _strided(b, k, n, p["b_row_stride"], p["b_col_stride"]).astype(np.int64) + p["rhs_offset"]
    packed = np.zeros((n, kp), np.int16)
    packed[:, _slots(k)] = bv.T
    pointer_store(scratch, packed)


@intrinsic("mc_matmul_s8_packed", ("handle",) * 3 + (MATMUL_PARAMS,), "void", "mc_matmul.h", extern=True,
           writes=(0,))
def _matmul_s8_packed(y, a, packed_b, p):
    m, n, k = p["rows"], p["cols"], p["depth"]
    kp = (k + 3) & ~3
    pa, po = packed_b
    bv = pa[po:po + n * kp].reshape(n, kp)[:, _slots(k)].T.astype(np.int64)
    av = _strided(a, m, k, p["a_row_stride"], p["a_col_stride"]).astype(np.int64) + p["lhs_offset"]
    acc = _REQUANTIZE[p["rounding"]](av @ bv, np.array(p["output_multiplier"]), np.array(p["output_shift"]))
    ya, yo = y
    ya[yo:yo + m * n] = np.clip(acc + p["output_offset"], p["act_min"], p["act_max"]).reshape(-1).astype(np.int8)


@intrinsic("mc_matmul_s16", ("handle",) * 3 + (MATMUL_PARAMS,), "void", "mc_matmul.h", extern=True, writes=(0,))
def _matmul_s16(y, a, b, p):
    m, n, k = p["rows"], p["cols"], p["depth"]
    acc = (_strided(a, m, k, p["a_row_stride"], p["a_col_stride"]).astype(np.int64)
           @ _strided(b, k, n, p["b_row_stride"], p["b_col_stride"]).astype(np.int64))
    out = fp.multiply_by_quantized_multiplier_int64(acc, np.array(p["output_multiplier"]), np.array(p["output_shift"]))
    ya, yo = y
    ya[yo:yo + m * n] = np.clip(out, p["act_min"], p["act_max"]).reshape(-1).astype(np.int16)
