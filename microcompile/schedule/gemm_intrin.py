"""The tensor intrinsics that reach the GEMM micro-kernels of runtime_c/include/mc_gemm.h
(declared, with their semantics, in tir/intrinsics_gemm.py).

The tensor intrinsic mc_gemm_nt_<variant>_<dtype> matches the reduction nest

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

from ..tir.intrinsics_gemm import (GEMM_DTYPES, GEMM_KERNELS, GEMM_PARAMS, P4_KERNELS, PANEL_ROWS, gemm_kernel_name,
                                   pack_panels4)
from ..tir.nodes import (Address, BinOp, Buffer, Call, Cast, Evaluate, For, IntImm, LetStmt, Load, Store, Var,
                         substitute, walk)
from .tensorize import affine, perfect_nest, tensor_intrin


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
        params = GEMM_PARAMS(**{key: b[key] for key in GEMM_PARAMS.fields})
        args = (Address(b["c"], b["cbase"]), Address(b["a"], b["abase"]), Address(b["b"], b["bbase"]), params)
        return Evaluate(Call(kernel, args, "void"))
    return emit


for _v, _d in GEMM_KERNELS:
    _name, _dt = gemm_kernel_name(_v, _d), GEMM_DTYPES[_d]
    tensor_intrin(_name, _emit_gemm(_name), doc=f"int32 C += {_dt} A * {_dt} B^T ({_v})")(_match_gemm(_dt))


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
    tensor_intrin(_name, _emit_gemm(_name),
                  doc=f"int32 C += {_dt} A * {_dt} B^T, A packed in panels of 4 rows (dsp)")(_match_p4(_dt, _group))


def uses_var(e, name: str) -> bool:
    return any(isinstance(n, Var) and n.name == name for n in walk(e))
