"""Plain-integer arithmetic: TFLite's int32 ADD, SUB, MUL, DIV, MAXIMUM and MINIMUM (no
quantization parameters: the int32 tail of TFLM's audio front end), and CAST.

int32 results wrap modulo 2^32 as on the device (TFLite computes them in int32 C++; C leaves
overflow undefined, our kernels compute in uint32 and convert). DIV truncates toward zero; a
zero divisor gives 0 and INT32_MIN / -1 gives INT32_MIN, what a Cortex-M's SDIV returns
(TFLite does not guard either case). The fused activation clamps the wrapped result.

CAST: integer to a narrower integer keeps the low bits (C's conversion), integer to float32
rounds to nearest even, float32 to an integer truncates toward zero and saturates to the
target's range, as LiteRT and TFLM do; NaN gives the target's largest value, as LiteRT
(TFLM gives 0; C leaves all of these undefined, the kernels test them first).
"""

from __future__ import annotations

import numpy as np

from ..ir.graph import NP_DTYPES, Graph, Node

INT32_MIN, INT32_MAX = -2**31, 2**31 - 1
# TFLite's CalculateActivationRange for int32.
ACTIVATION_RANGE = {"NONE": (INT32_MIN, INT32_MAX), "RELU": (0, INT32_MAX), "RELU6": (0, 6),
                    "RELU_N1_TO_1": (-1, 1)}


def is_int32(g: Graph, n: Node) -> bool:
    return g.tensors[n.outputs[0]].dtype == "int32"


def _wrap32(v: np.ndarray) -> np.ndarray:
    return v.astype(np.int64).astype(np.uint32).astype(np.int32)


def truncating_div(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a, b = np.broadcast_arrays(a.astype(np.int64), b.astype(np.int64))
    safe = np.where(b == 0, 1, b)
    q = np.abs(a) // np.abs(safe) * np.sign(a) * np.sign(safe)
    return _wrap32(np.where(b == 0, 0, q))


def binary_int32(op: str, a: np.ndarray, b: np.ndarray, activation: str = "NONE") -> np.ndarray:
    a64, b64 = a.astype(np.int64), b.astype(np.int64)
    out = {"add": lambda: _wrap32(a64 + b64), "sub": lambda: _wrap32(a64 - b64),
           "mul": lambda: _wrap32(a64 * b64), "div": lambda: truncating_div(a, b),
           "maximum": lambda: np.maximum(a64, b64), "minimum": lambda: np.minimum(a64, b64)}[op]()
    lo, hi = ACTIVATION_RANGE[activation]
    return np.clip(out, lo, hi).astype(np.int32)


def cast(x: np.ndarray, dtype: str) -> np.ndarray:
    target = NP_DTYPES[dtype]
    if dtype == "float32":
        return x.astype(np.float64).astype(np.float32) if x.dtype != np.float32 else x.copy()
    if x.dtype == np.float32:
        info = np.iinfo(target)
        x = np.clip(np.nan_to_num(np.trunc(x.astype(np.float64)), nan=float(info.max)), info.min, info.max)
    return x.astype(np.int64).astype(np.uint64).astype(target)
