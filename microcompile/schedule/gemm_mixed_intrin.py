"""The tensor intrinsic of the mixed-operand GEMM panel kernel (runtime_c/include/mc_gemm_mixed.h,
declared in tir/intrinsics_gemm_mixed.py).

mc_gemm_p4_dsp_s16_s8 matches the GEMM nest of schedule/gemm_intrin.py with A (the rows) an
int16 constant, whole rows of it (lda == k) starting at a panel boundary, and B (the columns)
int8, read in place. A is repacked at compile time (`pack_panels4_mixed`); the call names the
packed constant instead of A.
"""

from __future__ import annotations

import numpy as np

from ..tir.intrinsics_gemm import PANEL_ROWS
from ..tir.intrinsics_gemm_mixed import MIXED_GROUP, MIXED_KERNEL, pack_panels4_mixed
from ..tir.nodes import Buffer, For
from .gemm_intrin import _emit_gemm, _match_gemm, _panel_start
from .primitives import weights_name
from .tensorize import tensor_intrin


@tensor_intrin(MIXED_KERNEL, _emit_gemm(MIXED_KERNEL),
               doc="int32 C += int16 A * int8 B^T, A packed in panels of 4 rows, pairs (k0,k2),(k1,k3) (dsp)")
def _match_mixed(loop: For) -> dict | None:
    b = _match_gemm("int16", "int8")(loop)
    if b is None:
        return None
    a = b["a"]
    if a.scope != "const" or b["lda"] != b["k"] or a.size % b["k"] or not _panel_start(b, MIXED_GROUP):
        return None
    packed = pack_panels4_mixed(np.asarray(a.data).reshape(a.size // b["k"], b["k"]), weights_name(a))
    new = Buffer(a.name, a.dtype, (packed.size,), "const", data=packed,
                 comment=f"{a.comment} (panels of {PANEL_ROWS} rows, pairs k0,k2 / k1,k3)")
    return {**b, "a": new, "rebind": {a: new}}
