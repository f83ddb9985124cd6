"""The mixed-operand GEMM panel kernel of runtime_c/include/mc_gemm_mixed.h: its declaration,
Python semantics and the panel layout it reads.

    mc_gemm_p4_dsp_s16_s8(c, a_packed, b, &{m, n, k, lda, ldb, ldc}):
        for j < n, i < m:  c[j*ldc + i] += sum_{p < k} a[i][p] * b[j*ldb + p]

a: int16 weights packed by `pack_panels4_mixed` (lda ignored); b: int8 columns read in place.
The layout pre-permutes each row's group of four k to (k0, k2), (k1, k3) so that SXTB16 of one
int8 column word meets ready-made int16 weight pairs (13 instructions per 16 MACs on DSP cores).
The tensor intrinsic that reaches it is in schedule/gemm_mixed_intrin.py.
"""

from __future__ import annotations

import numpy as np

from ..ir import budget
from .intrinsics import intrinsic
from .intrinsics_gemm import GEMM_PARAMS, PANEL_ROWS, _gemm_impl, _rup

MIXED_KERNEL = "mc_gemm_p4_dsp_s16_s8"
MIXED_GROUP = 4         # k per group of the packed layout (one int8 column word)


def pack_panels4_mixed(a: np.ndarray, what: str = "a weight") -> np.ndarray:
    """[m, k] int16 -> the flat layout of mc_gemm_mixed.h: panels of four rows; per group of
    four k, the (k0, k2) pair of each row, then the (k1, k3) pair of each row; zeros pad m to
    a multiple of 4 and k to a multiple of 4. The padded copy is checked against the budget
    first; `what` names the weight in that message."""
    m, k = a.shape
    mp, kp = _rup(m, PANEL_ROWS), _rup(k, MIXED_GROUP)
    budget.check_tensor(f"{what}, packed in panels of {PANEL_ROWS} rows", (mp, kp), 2)
    pad = np.zeros((mp, kp), np.int16)
    pad[:m, :k] = a
    # [panel, row, group, q//2, q%2] -> [panel, group, q%2, row, q//2]
    return pad.reshape(mp // PANEL_ROWS, PANEL_ROWS, kp // MIXED_GROUP, 2, 2).transpose(0, 2, 4, 1, 3).reshape(-1)


def unpack_panels4_mixed(flat: np.ndarray, m: int, k: int) -> np.ndarray:
    mp, kp = _rup(m, PANEL_ROWS), _rup(k, MIXED_GROUP)
    return flat[:mp * kp].reshape(mp // PANEL_ROWS, kp // MIXED_GROUP, 2, PANEL_ROWS, 2) \
        .transpose(0, 3, 1, 4, 2).reshape(mp, kp)[:m, :k]


@intrinsic(MIXED_KERNEL, ("handle", "handle", "handle", GEMM_PARAMS), "void", "mc_gemm_mixed.h", extern=True,
           writes=(0,))
def _gemm_mixed(c_ptr, a_ptr, b_ptr, p: dict):
    m, k = p["m"], p["k"]
    (aa, ao) = a_ptr
    a = np.ascontiguousarray(unpack_panels4_mixed(aa[ao:], m, k)).reshape(-1)
    _gemm_impl(c_ptr, (a, 0), b_ptr, dict(p, lda=k))      # unpacked: rows of k
