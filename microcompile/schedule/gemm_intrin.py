"""The GEMM micro-kernels of runtime_c/kernels/mc_gemm.h as intrinsics and tensor intrinsics.

    mc_gemm_nt_<variant>_<dtype>(c, a, b, m, n, k, lda, ldb, ldc):
        for j < n, i < m:  c[j*ldc + i] += sum_{p < k} a[i*lda + p] * b[j*ldb + p]

variant "c" (portable) or "dsp" (SMLAD/SXTB16), dtype s8 (both operands int8) or s16 (both
int16). The tensor intrinsic of the same name matches the reduction nest

    for <n loop>? { for <m loop>? { for k1 { ... for kr {
        C[...] = C[...] + i32(A[...]) * i32(B[...]) } } } }

where the k loops are innermost and walk a contiguous run of both operands (so several
loops such as kh, kw, ic collapse into one k), the m loop has C stride 1 and the n loop
is in C and B only. Operand roles are found from which loop vars index what.

mc_gemm_p4_dsp_<dtype> match the same nest when A is a whole constant matrix, and repack A at
compile time in panels of four rows (`pack_panels4`, layout in mc_gemm.h) so one LDM feeds
four rows; the call then names the packed constant instead of A.
"""

from __future__ import annotations

import numpy as np

from ..ir import intrinsics
from ..ir.intrinsics import Intrinsic
from ..ir.tir import Address, BinOp, Buffer, Call, Cast, Evaluate, For, IntImm, LetStmt, Load, Store, Var, substitute, walk
from .tensorize import TensorIntrin, affine, perfect_nest, register_tensor_intrin

GEMM_DTYPES = {"s8": "int8", "s16": "int16"}
GEMM_VARIANTS = ("c", "dsp")


def gemm_kernel_name(variant: str, dtype: str) -> str:
    return f"mc_gemm_nt_{variant}_{dtype}"


def _gemm_impl(c_ptr, a_ptr, b_ptr, m, n, k, lda, ldb, ldc):
    """Python semantics of every variant (they differ only in speed)."""
    (ca, co), (aa, ao), (ba, bo) = c_ptr, a_ptr, b_ptr
    ai = ao + np.arange(m)[:, None] * lda + np.arange(k)[None, :]
    bi = bo + np.arange(n)[:, None] * ldb + np.arange(k)[None, :]
    prod = ba[bi].astype(np.int64) @ aa[ai].astype(np.int64).T          # [n, m]
    ci = co + np.arange(n)[:, None] * ldc + np.arange(m)[None, :]
    ca[ci] = ((ca[ci].astype(np.int64) + prod + 2**31) % 2**32 - 2**31).astype(np.int32)


for _v in GEMM_VARIANTS:
    for _d in GEMM_DTYPES:
        intrinsics.register(Intrinsic(gemm_kernel_name(_v, _d), ("handle",) * 3 + ("int32",) * 6, "void",
                                      "mc_gemm.h", _gemm_impl, extern=True, writes=(0,)))


PANEL_ROWS = 4
# kernel -> (operand dtype, k elements per row group in the packed layout)
P4_KERNELS = {"mc_gemm_p4_dsp_s16": ("int16", 2), "mc_gemm_p4_dsp_s8": ("int8", 4)}


def _rup(v: int, q: int) -> int:
    return -(-v // q) * q


def pack_panels4(a: np.ndarray, group: int = 2) -> np.ndarray:
    """[m, k] -> the flat panel layout of mc_gemm_p4_dsp_* (mc_gemm.h): panels of four rows,
    inside a panel groups of `group` k of each row in turn; zeros pad m to a multiple of 4
    and k to a multiple of `group`."""
    m, k = a.shape
    mp, kp = _rup(m, PANEL_ROWS), _rup(k, group)
    pad = np.zeros((mp, kp), a.dtype)
    pad[:m, :k] = a
    # [panel, row, group, g] -> [panel, group, row, g]
    return pad.reshape(mp // PANEL_ROWS, PANEL_ROWS, kp // group, group).transpose(0, 2, 1, 3).reshape(-1)


def unpack_panels4(flat: np.ndarray, m: int, k: int, group: int = 2) -> np.ndarray:
    mp, kp = _rup(m, PANEL_ROWS), _rup(k, group)
    return flat[:mp * kp].reshape(mp // PANEL_ROWS, kp // group, PANEL_ROWS, group) \
        .transpose(0, 2, 1, 3).reshape(mp, kp)[:m, :k]


def _gemm_p4_impl(group: int):
    def impl(c_ptr, a_ptr, b_ptr, m, n, k, lda, ldb, ldc):
        (aa, ao) = a_ptr
        a = np.ascontiguousarray(unpack_panels4(aa[ao:], m, k, group)).reshape(-1)
        _gemm_impl(c_ptr, (a, 0), b_ptr, m, n, k, k, ldb, ldc)
    return impl


for _name, (_dt, _group) in P4_KERNELS.items():
    intrinsics.register(Intrinsic(_name, ("handle",) * 3 + ("int32",) * 6, "void", "mc_gemm.h",
                                  _gemm_p4_impl(_group), extern=True, writes=(0,)))


def _int32_load(e):
    """The Load under i32(Load) (or a bare int32 Load)."""
    if isinstance(e, Cast) and e.dtype == "int32" and isinstance(e.value, Load):
        return e.value
    return None


def _match_gemm(dtype: str):
    def match(loop: For) -> dict | None:
        chain, body = perfect_nest(loop)
        while isinstance(body, LetStmt):          # a named operand (let xv = x[...]) is read in place
            body = substitute(body.body, {body.var: body.value})
        if not (isinstance(body, Store) and isinstance(body.value, BinOp) and body.value.op == "add"):
            return None
        c, ci = body.buffer, body.index
        old, prod = body.value.a, body.value.b
        if not (isinstance(old, Load) and old.buffer is c and old.index == ci and c.dtype == "int32"):
            return None
        if not (isinstance(prod, BinOp) and prod.op == "mul"):
            return None
        x, y = _int32_load(prod.a), _int32_load(prod.b)
        if x is None or y is None or x.buffer.dtype != dtype or y.buffer.dtype != dtype:
            return None
        names = {f.var.name for f in chain}
        parts = [affine(e, names) for e in (ci, x.index, y.index)]
        if any(p is None for p in parts):
            return None
        (cc, cbase), (xc, xbase), (yc, ybase) = parts
        roles: dict[str, str] = {}
        for f in chain:
            v = f.var.name
            where = (v in cc, v in xc, v in yc)
            roles[v] = {(True, True, False): "cx", (True, False, True): "cy",
                        (False, True, True): "k"}.get(where, "bad")
        if "bad" in roles.values() or list(roles.values()).count("cx") > 1 or list(roles.values()).count("cy") > 1:
            return None
        kloops = [f for f in chain if roles[f.var.name] == "k"]
        if not kloops or chain[-len(kloops):] != kloops:
            return None                      # reduction loops must be the innermost ones
        stride = 1                            # the k loops must cover one contiguous run
        for f in reversed(kloops):
            v = f.var.name
            if xc[v] != stride or yc[v] != stride:
                return None
            stride *= f.extent
        k = stride
        # m: the C-stride-1 side (rows of a); n: the other (columns of b), possibly absent.
        side = {r: next((f for f in chain if roles[f.var.name] == r), None) for r in ("cx", "cy")}
        m_role = next((r for r in ("cx", "cy") if side[r] is not None and cc[side[r].var.name] == 1), None)
        if m_role is None:
            return None
        n_role = "cy" if m_role == "cx" else "cx"
        a, abase, ac = (x, xbase, xc) if m_role == "cx" else (y, ybase, yc)
        b, bbase, bc = (y, ybase, yc) if m_role == "cx" else (x, xbase, xc)
        mloop, nloop = side[m_role], side[n_role]
        return {"c": c, "cbase": cbase, "a": a.buffer, "abase": abase, "b": b.buffer, "bbase": bbase,
                "m": mloop.extent, "n": nloop.extent if nloop else 1, "k": k,
                "lda": ac[mloop.var.name], "ldb": bc[nloop.var.name] if nloop else k,
                "ldc": cc[nloop.var.name] if nloop else mloop.extent}
    return match


def _emit_gemm(kernel: str):
    def emit(b: dict):
        args = (Address(b["c"], b["cbase"]), Address(b["a"], b["abase"]), Address(b["b"], b["bbase"]),
                *(IntImm(int(b[key])) for key in ("m", "n", "k", "lda", "ldb", "ldc")))
        return Evaluate(Call(kernel, args, "void"))
    return emit


for _v in GEMM_VARIANTS:
    for _d, _dt in GEMM_DTYPES.items():
        _name = gemm_kernel_name(_v, _d)
        register_tensor_intrin(TensorIntrin(_name, _match_gemm(_dt), _emit_gemm(_name),
                                            doc=f"int32 C += {_dt} A * {_dt} B^T ({_v})"))


def _match_p4(dtype: str, group: int):
    def match(loop: For) -> dict | None:
        b = _match_gemm(dtype)(loop)
        if b is None:
            return None
        a = b["a"]
        if a.scope != "const" or not (isinstance(b["abase"], IntImm) and b["abase"].value == 0) \
                or b["lda"] != b["k"] or a.size != b["m"] * b["k"]:
            return None
        packed = pack_panels4(np.asarray(a.data).reshape(b["m"], b["k"]), group)
        new = Buffer(a.name, a.dtype, (packed.size,), "const", data=packed,
                     comment=f"{a.comment} (panels of {PANEL_ROWS} rows)")
        return {**b, "a": new, "rebind": {a: new}}
    return match


for _name, (_dt, _group) in P4_KERNELS.items():
    register_tensor_intrin(TensorIntrin(_name, _match_p4(_dt, _group), _emit_gemm(_name),
                                        doc=f"int32 C += {_dt} A * {_dt} B^T, A packed in panels of 4 rows (dsp)"))


def uses_var(e, name: str) -> bool:
    return any(isinstance(n, Var) and n.name == name for n in walk(e))
