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

The requantizing kernels (mc_gemm_rq_c_<dtype>, mc_gemm_p4_rq_dsp_<dtype>) match a whole output
block as the lowering writes it, accumulator and all, with no int32 tile:

    for <n loop>? { for oc {                         # columns (pixels), rows (channels)
        acc = bias[oc]
        for k1 { ... for kr { acc = acc + i32(A[...]) * i32(B[...]) } }
        y[Y + n*ldy + oc] = int8(clamp(mc_mul_by_qm_pos_rshift(acc, mult[oc], rshift[oc]) + off, lo, hi)) } }

The accumulation is checked by the plain GEMM matcher (on the same nest with the scalar acc
read as a tile), the store by schedule/epilogue.py.
"""

from __future__ import annotations

import numpy as np

from ..tir.intrinsics_copy import WIDEN_KERNEL
from ..tir.intrinsics_gemm import (GEMM_DTYPES, GEMM_KERNELS, GEMM_PARAMS, GEMM_RQ_PARAMS, P4_KERNELS, P4X2_KERNELS,
                                   PANEL_ROWS, RQ_AWAY_KERNEL, RQ_KERNELS, RQ_RECORD_KERNELS, WIDEN_PAIRS_KERNEL,
                                   gemm_kernel_name, pack_panels4, rq_away_records, rq_away_refusal, rq_records)
from ..tir.nodes import (Address, BinOp, Buffer, Call, Cast, Evaluate, For, IfThenElse, IntImm, LetStmt, Load,
                         ParamStruct, PrimFunc, Select, Store, Var, add, mul, rewrite, simplify, sub, substitute, walk)
from ..tir.verify import verify_primfunc
from .epilogue import away_epilogue, eval_int, requant_epilogue, unit_load
from .primitives import ScheduleError, primitive, weights_name
from .tensorize import accumulation_nest, affine, perfect_nest, tensor_intrin


def _int32_load(e):
    """The Load under i32(Load) (or a bare int32 Load)."""
    if isinstance(e, Cast) and e.dtype == "int32" and isinstance(e.value, Load):
        return e.value
    return None


def _match_gemm(dtype: str, b_dtype: str | None = None):
    """The GEMM nest's operands and shape; A (the rows) of `dtype`, B (the columns) of
    `b_dtype` (default: the same)."""
    b_dtype = b_dtype or dtype

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
        if x is None or y is None or sorted((x.buffer.dtype, y.buffer.dtype)) != sorted((dtype, b_dtype)):
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
        if a.buffer.dtype != dtype or b.buffer.dtype != b_dtype:
            return None
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


def _panel_start(b: dict, group: int) -> bool:
    """A's rows m start at row 0 of the whole constant, or (a block of its rows, e.g. one
    accumulator tile of a fully connected layer) at a panel boundary of a packing whose rows
    are not padded (k a multiple of the group), where the row-major and the packed offsets agree."""
    base = b["abase"]
    if isinstance(base, IntImm) and base.value == 0:
        return b["a"].size == b["m"] * b["k"]
    step = PANEL_ROWS * b["k"]
    terms = affine(base, {n.name for n in walk(base) if isinstance(n, Var)})
    return (b["k"] % group == 0 and b["m"] % PANEL_ROWS == 0 and terms is not None
            and isinstance(terms[1], IntImm) and terms[1].value % step == 0
            and all(c % step == 0 for c in terms[0].values()))


def _match_p4(dtype: str, group: int):
    def match(loop: For) -> dict | None:
        b = _match_gemm(dtype)(loop)
        if b is None:
            return None
        a = b["a"]
        if a.scope != "const" or b["lda"] != b["k"] or a.size % b["k"] or not _panel_start(b, group):
            return None
        packed = pack_panels4(np.asarray(a.data).reshape(a.size // b["k"], b["k"]), group, weights_name(a))
        new = Buffer(a.name, a.dtype, (packed.size,), "const", data=packed,
                     comment=f"{a.comment} (panels of {PANEL_ROWS} rows)")
        return {**b, "a": new, "rebind": {a: new}}
    return match


for _name, (_dt, _group) in P4_KERNELS.items():
    tensor_intrin(_name, _emit_gemm(_name),
                  doc=f"int32 C += {_dt} A * {_dt} B^T, A packed in panels of 4 rows (dsp)")(_match_p4(_dt, _group))


def _records(bind: dict) -> dict | None:
    """The bindings with the output stage as one records constant (RQ_RECORD_KERNELS): made from
    the constant bias, multipliers and shifts at compile time; None where one is not constant."""
    if any(bind[k].scope != "const" or bind[k].data is None for k in ("bias", "mult", "rshift")):
        return None
    m = bind["m"]
    data = rq_records(*(np.asarray(bind[k].data).reshape(-1)[:m] for k in ("bias", "mult", "rshift")))
    return _with_records(bind, data, "mult, rshift - 1")


def _with_records(bind: dict, data: np.ndarray, what: str) -> dict:
    """The bindings with the records constant `data` (named after the bias, `what` besides it
    per panel) that the call passes instead of the separate arrays."""
    tag = bind["bias"].name[len("bias"):]
    rq = Buffer(f"gemm_rq{tag}", "int32", (data.size,), "const", data=data,
                comment=f"{bind['bias'].name}, {what} per panel of {PANEL_ROWS} rows")
    return {**bind, "rq": rq, "add_buffers": (*bind.get("add_buffers", ()), rq)}


def _match_rq(dtype: str, group: int, records: bool = False):
    def match(loop: For) -> dict | None:
        bind = _match_rq_plain(dtype, group, loop)
        return _records(bind) if bind is not None and records else bind
    return match


def _match_rq_away(loop: For) -> dict | None:
    """RQ_AWAY_KERNEL: the requantizing int16 block whose output stage is the single rounding
    away from zero (a LiteRT fully connected layer), its records made from the constants; None
    where they do not fit the kernel's form (rq_away_refusal)."""
    bind = _match_rq_plain("int16", 2, loop, away=True)
    if bind is None or bind["bias"].scope != "const" or bind["bias"].data is None:
        return None
    m = bind["m"]
    if rq_away_refusal(bind["mult_v"], bind["shift_v"], bind["off"]) is not None:
        return None
    data = rq_away_records(np.asarray(bind["bias"].data).reshape(-1)[:m], bind["mult_v"], bind["shift_v"], bind["off"])
    return _with_records(bind, data, "mult, and per row the rounding with the offset and the shift,")


def _match_rq_plain(dtype: str, group: int, loop: For, away: bool = False) -> dict | None:
    """The requantizing GEMM block (bias, mult and rshift as the loops read them; `away`: the
    output stage of epilogue.away_epilogue instead)."""
    nest = accumulation_nest(loop, "int32")
    if nest is None:
        return None
    chain, acc, init, taps, out = nest
    oc = chain[-1]
    bias = unit_load(init.value, oc.var.name)
    if bias is None or bias[0].dtype != "int32" or bias[0].scope != "const" or eval_int(bias[1], {}) != 0:
        return None
    # The accumulation, with the scalar acc read as a [columns, rows] tile: the GEMM nest.
    cols = chain[0] if len(chain) == 2 else None
    tile = Buffer("acc_tile", "int32", ((cols.extent if cols else 1) * oc.extent,), "scratch")
    ti = oc.var if cols is None else BinOp("add", BinOp("mul", cols.var, IntImm(oc.extent)), oc.var)
    tloops, tap = perfect_nest(taps)
    while isinstance(tap, LetStmt):
        tap = substitute(tap.body, {tap.var: tap.value})
    v = tap.value if isinstance(tap, Store) else None
    if not (isinstance(v, BinOp) and v.op == "add" and isinstance(v.a, Load) and v.a.buffer is acc
            and tap.buffer is acc):
        return None
    nest = Store(tile, ti, BinOp("add", Load(tile, ti), v.b))
    for f in reversed([*chain, *tloops]):
        nest = For(f.var, f.extent, nest, f.kind)
    g = _match_gemm(dtype)(nest)
    if g is None or g["m"] != oc.extent or g["c"] is not tile:
        return None
    names = {f.var.name for f in chain}
    ya = affine(out.index, names)
    ep = (away_epilogue(out.value, acc, oc.var.name, oc.extent) if away else
          requant_epilogue(out.value, acc, oc.var.name))
    if ya is None or ep is None or out.buffer.dtype != "int8" or ya[0].get(oc.var.name) != 1:
        return None
    ldy = ya[0].get(cols.var.name, 0) if cols is not None else oc.extent
    if set(ya[0]) - names or (cols is not None and ldy < oc.extent):
        return None
    a = g["a"]
    bind = {**g, "y": out.buffer, "ybase": ya[1], "bias": bias[0], "ldy": ldy, **ep}
    if not group:
        return bind
    if a.scope != "const" or not (isinstance(g["abase"], IntImm) and g["abase"].value == 0) \
            or g["lda"] != g["k"] or a.size != g["m"] * g["k"]:
        return None
    packed = pack_panels4(np.asarray(a.data).reshape(g["m"], g["k"]), group, weights_name(a))
    new = Buffer(a.name, a.dtype, (packed.size,), "const", data=packed,
                 comment=f"{a.comment} (panels of {PANEL_ROWS} rows)")
    return {**bind, "a": new, "rebind": {a: new}}


def _emit_rq(kernel: str):
    def emit(b: dict):
        params = GEMM_RQ_PARAMS(m=b["m"], n=b["n"], k=b["k"], lda=b["lda"], ldb=b["ldb"], ldy=b["ldy"],
                                out_offset=b["off"], act_min=b["lo"], act_max=b["hi"])
        stage = ((Address(b["rq"], IntImm(0)),) if "rq" in b else
                 (Address(b["bias"], IntImm(0)), Address(b["mult"], IntImm(0)), Address(b["rshift"], IntImm(0))))
        args = (Address(b["y"], b["ybase"]), Address(b["a"], b["abase"]), Address(b["b"], b["bbase"]), *stage, params)
        return Evaluate(Call(kernel, args, "void"))
    return emit


for _name, (_dt, _group) in RQ_KERNELS.items():
    tensor_intrin(_name, _emit_rq(_name), doc=f"int8 y = requantize(bias + {_dt} A * {_dt} B^T)")(
        _match_rq(_dt, _group, _name in RQ_RECORD_KERNELS))
tensor_intrin(RQ_AWAY_KERNEL, _emit_rq(RQ_AWAY_KERNEL),
              doc="int8 y = requantize_away(bias + int16 A * int16 B^T) (LiteRT fully connected rounding)")(
    _match_rq_away)
# The 4x2 tile matches the same nest; the call reads B pair-interleaved, so interleave_columns
# must follow it (the schedule applies both).
for _name, (_dt, _group) in P4X2_KERNELS.items():
    tensor_intrin(_name, _emit_rq(_name), doc=f"int8 y = requantize(bias + {_dt} A * {_dt} B^T), B pair-interleaved "
                                              "(follow with interleave_columns)")(_match_rq(_dt, _group, True))


@primitive("interleave_columns")
def interleave_columns(f: PrimFunc, kernel: str) -> PrimFunc:
    """Lay out the scratch B operand of the one call of `kernel` (P4X2_KERNELS) as the call
    reads it, pair-interleaved (tir/intrinsics_gemm.pair_interleaved_index): every store into
    it, and every widening copy run (mc_widen_dsp_s8_s16) into it, writes column j's element p
    where the kernel reads it. Each access must be affine in the loops, base + J*ldb + p with
    0 <= p < ldb; a widened run must start at an even p (it becomes mc_widen_pairs_dsp_s8_s16).

        xv_cache[j*64 + ic] = v     -->   xv_cache[(j/2)*128 + (j%2)*2 + 2*ic - ic%2] = v
    """
    calls = [c for c in walk(f.body) if isinstance(c, Call) and c.name == kernel]
    if kernel not in P4X2_KERNELS or len(calls) != 1:
        raise ScheduleError(f"{f.name}: interleave_columns needs one call of a pair-interleaved GEMM kernel, "
                            f"found {len(calls)} of {kernel}")
    baddr, params = calls[0].args[2], calls[0].args[-1]
    buf = baddr.buffer
    if not (isinstance(params, ParamStruct) and buf.scope == "scratch" and baddr.index == IntImm(0)):
        raise ScheduleError(f"{f.name}: interleave_columns needs B as a whole scratch buffer")
    n, ldb = params.as_dict()["n"], params.as_dict()["ldb"]
    ne = n - n % 2
    if n < 2:
        raise ScheduleError(f"{f.name}: interleave_columns needs two columns or more per block (the block has {n}; "
                            "knob cols)")
    extents = {x.var.name: x.extent for x in walk(f.body) if isinstance(x, For)}

    def place(index, run: int = 1):
        """(pair-interleaved index, J: its column, or None where it is always in a pair) of the access
        at `index` of `run` elements."""
        form = affine(index, set(extents))
        if form is None or not isinstance(form[1], IntImm):
            raise ScheduleError(f"{f.name}: interleave_columns: an access of {buf.name} is not affine in the loops")
        coeffs, base = form[0], form[1].value
        jterms = {v: c // ldb for v, c in coeffs.items() if c % ldb == 0}
        pterms = {v: c for v, c in coeffs.items() if c % ldb}
        lo = base % ldb + sum(min(0, c * (extents[v] - 1)) for v, c in pterms.items())
        hi = base % ldb + sum(max(0, c * (extents[v] - 1)) for v, c in pterms.items()) + run - 1
        jhi = base // ldb + sum(c * (extents[v] - 1) for v, c in jterms.items())
        if lo < 0 or hi >= ldb or any(c < 0 for c in (*pterms.values(), *jterms.values())) or jhi >= n:
            raise ScheduleError(f"{f.name}: interleave_columns: an access of {buf.name} is not inside one column")
        J = _linear(jterms, base // ldb)
        P = _linear(pterms, base % ldb)
        odd = _linear({v: c for v, c in pterms.items() if c % 2}, base % 2)
        if run > 1 and not (isinstance(odd, IntImm) and odd.value == 0):
            raise ScheduleError(f"{f.name}: interleave_columns: a widened run of {buf.name} starts at an odd k")
        paired = simplify(add(add(mul(BinOp("div", J, IntImm(2)), IntImm(2 * ldb)), mul(BinOp("mod", J, IntImm(2)),
                                                                                         IntImm(2))),
                              sub(mul(P, IntImm(2)), odd if isinstance(odd, IntImm) else BinOp("mod", odd, IntImm(2)))))
        return paired, (None if jhi < ne else J)      # None: every access is in a pair

    def fn(node):
        if isinstance(node, Store) and node.buffer is buf:
            paired, J = place(node.index)
            index = paired if J is None else Select(BinOp("lt", J, IntImm(ne)), paired, node.index)
            return Store(buf, index, node.value)
        if isinstance(node, Evaluate) and node.call.name == WIDEN_KERNEL and node.call.args[0].buffer is buf:
            dst, src, count = node.call.args
            if not isinstance(count, IntImm):
                raise ScheduleError(f"{f.name}: interleave_columns: a widened run of unknown length")
            paired, J = place(dst.index, count.value)
            pairs = Evaluate(Call(WIDEN_PAIRS_KERNEL, (Address(buf, paired), src, count), "void"))
            return pairs if J is None else IfThenElse(BinOp("lt", J, IntImm(ne)), pairs, node)
        return None

    others = [x for x in walk(f.body) if isinstance(x, (Load, Address)) and x.buffer is buf]
    widened = [x.args[0] for x in walk(f.body) if isinstance(x, Call) and x.name == WIDEN_KERNEL]
    if any(x is not baddr and not any(x is w for w in widened) for x in others):
        raise ScheduleError(f"{f.name}: interleave_columns: {buf.name} is read or passed elsewhere")
    body = rewrite(f.body, lambda x: fn(x) if isinstance(x, (Store, Evaluate)) else None, pre=True)
    return verify_primfunc(PrimFunc(f.name, f.buffers, body, dict(f.attrs)))


def _linear(terms: dict[str, int], const: int):
    e = IntImm(const)
    for v, c in sorted(terms.items()):
        e = add(e, mul(Var(v), IntImm(c)))
    return simplify(e)


def uses_var(e, name: str) -> bool:
    return any(isinstance(n, Var) and n.name == name for n in walk(e))
