"""Structural verifier of the loop IR. Every lowering and every schedule primitive leaves a
PrimFunc that passes `verify_primfunc`."""

from __future__ import annotations

from . import intrinsics
from .nodes import (NP_BUFFER_DTYPES, PACKED_INT4, SCALAR_DTYPES, SCOPES, FOR_KINDS, BIN_OPS, Address, ParamStruct, Allocate, BinOp, Buffer, Call, Cast,
                    Evaluate, FloatImm, For, IfThenElse, IntImm, LetStmt, Load, PrimFunc, Select, SeqStmt, Store,
                    Var)


# An immediate's range by dtype (int32 by default: the loop IR's integer arithmetic).
_IMM_RANGE = {"uint32": (0, 2**32), "uint64": (0, 2**64), "int64": (-2**63, 2**63)}


class TirVerifyError(AssertionError):
    """The PrimFunc breaks a loop-IR invariant: always a bug in microcompile."""


def verify_primfunc(f: PrimFunc) -> PrimFunc:
    """Check scoping (vars bound once, buffers declared), dtypes and intrinsic calls; return `f`."""

    def fail(msg):
        raise TirVerifyError(f"primfunc {f.name}: {msg}")

    names = [b.name for b in f.buffers]
    if len(set(names)) != len(names):
        fail(f"duplicate buffer names {names}")
    for b in f.buffers:
        _check_buffer(b, fail)
        if b.scope == "local":
            fail(f"local buffer {b.name} must be introduced by Allocate, not a parameter")
    bound: set[str] = set()   # every Var name ever bound: names are unique in a PrimFunc

    def bind(v: Var):
        if v.name in bound or v.name in names:
            fail(f"name {v.name} bound twice")
        bound.add(v.name)

    def expr(e, scope: set[str], bufs: set[int]):
        if isinstance(e, Var):
            if e.name not in scope:
                fail(f"var {e.name} used out of scope")
        elif isinstance(e, IntImm):
            lo, hi = _IMM_RANGE.get(e.dtype, (-2**31, 2**31))
            if not lo <= e.value < hi:
                fail(f"immediate {e.value} out of {e.dtype} range")
        elif isinstance(e, FloatImm):
            pass
        elif isinstance(e, BinOp):
            if e.op not in BIN_OPS:
                fail(f"unknown binary op {e.op}")
            expr(e.a, scope, bufs)
            expr(e.b, scope, bufs)
            if e.a.dtype != e.b.dtype:
                fail(f"{e.op} of {e.a.dtype} and {e.b.dtype}")
        elif isinstance(e, Cast):
            if e.dtype not in SCALAR_DTYPES:
                fail(f"cast to {e.dtype}")
            expr(e.value, scope, bufs)
        elif isinstance(e, Select):
            for x in (e.cond, e.true_value, e.false_value):
                expr(x, scope, bufs)
            if e.cond.dtype != "bool" or e.true_value.dtype != e.false_value.dtype:
                fail("select needs a bool condition and arms of one dtype")
        elif isinstance(e, (Load, Address)):
            if id(e.buffer) not in bufs:
                fail(f"buffer {e.buffer.name} is not declared here")
            if isinstance(e, Load) and e.buffer.dtype == PACKED_INT4:
                fail(f"packed int4 constant {e.buffer.name} is loaded: only an unpacking micro-kernel reads it")
            expr(e.index, scope, bufs)
            if e.index.dtype != "int32":
                fail(f"index of {e.buffer.name} is {e.index.dtype}")
        elif isinstance(e, Call):
            call(e, scope, bufs)
        elif isinstance(e, ParamStruct):
            if any(not -2**31 <= v < 2**31 for _, v in e.fields):
                fail(f"{e.ctype}: a field is out of int32 range")
        else:
            fail(f"not an expression: {type(e).__name__}")

    def call(c: Call, scope, bufs):
        if c.name not in intrinsics.REGISTRY:
            fail(f"unknown intrinsic {c.name}")
        intr = intrinsics.get(c.name)
        if len(c.args) != len(intr.arg_dtypes):
            fail(f"{c.name} takes {len(intr.arg_dtypes)} args, got {len(c.args)}")
        for a, dt in zip(c.args, intr.arg_dtypes):
            expr(a, scope, bufs)
            if isinstance(dt, intrinsics.StructType):
                if not isinstance(a, ParamStruct) or a.ctype != dt.ctype \
                        or tuple(name for name, _ in a.fields) != dt.fields:
                    fail(f"{c.name} takes a {dt.ctype} with fields {dt.fields}, got {a}")
            elif a.dtype != dt:
                fail(f"{c.name} argument of dtype {a.dtype}, expected {dt}")
        if c.dtype != intr.dtype:
            fail(f"{c.name} returns {intr.dtype}, call says {c.dtype}")

    def stmt(s, scope: set[str], bufs: set[int]):
        if isinstance(s, SeqStmt):
            for x in s.stmts:
                stmt(x, scope, bufs)
        elif isinstance(s, For):
            if s.extent < 1 or s.kind not in FOR_KINDS or s.var.dtype != "int32":
                fail(f"bad loop {s.var.name}: extent {s.extent}, kind {s.kind}")
            bind(s.var)
            stmt(s.body, scope | {s.var.name}, bufs)
        elif isinstance(s, LetStmt):
            expr(s.value, scope, bufs)
            if s.value.dtype != s.var.dtype:
                fail(f"let {s.var.name}: {s.var.dtype} = {s.value.dtype} value")
            bind(s.var)
            stmt(s.body, scope | {s.var.name}, bufs)
        elif isinstance(s, Allocate):
            _check_buffer(s.buffer, fail)
            if s.buffer.scope != "local":
                fail(f"Allocate of non-local buffer {s.buffer.name}")
            bind(Var(s.buffer.name))
            stmt(s.body, scope, bufs | {id(s.buffer)})
        elif isinstance(s, Store):
            if id(s.buffer) not in bufs:
                fail(f"store to undeclared buffer {s.buffer.name}")
            if s.buffer.scope == "const":
                fail(f"store to constant {s.buffer.name}")
            expr(s.index, scope, bufs)
            expr(s.value, scope, bufs)
            if s.value.dtype != s.buffer.dtype:
                fail(f"store of {s.value.dtype} into {s.buffer.dtype} buffer {s.buffer.name}")
        elif isinstance(s, IfThenElse):
            expr(s.cond, scope, bufs)
            if s.cond.dtype != "bool":
                fail("if condition is not bool")
            stmt(s.then_body, scope, bufs)
            if s.else_body is not None:
                stmt(s.else_body, scope, bufs)
        elif isinstance(s, Evaluate):
            call(s.call, scope, bufs)
            if not intrinsics.get(s.call.name).extern:
                fail(f"Evaluate of pure intrinsic {s.call.name} has no effect")
        else:
            fail(f"not a statement: {type(s).__name__}")

    stmt(f.body, set(), {id(b) for b in f.buffers})
    return f


def _check_buffer(b: Buffer, fail) -> None:
    if b.scope not in SCOPES or (b.dtype not in SCALAR_DTYPES and not (b.dtype == PACKED_INT4 and b.scope == "const")):
        fail(f"buffer {b.name}: scope {b.scope} dtype {b.dtype}")
    if b.scope == "const":
        if b.data is None or b.data.size != b.size or b.data.dtype != NP_BUFFER_DTYPES[b.dtype]:
            fail(f"constant {b.name} data does not match {b.dtype}{list(b.shape)}")
    elif b.data is not None:
        fail(f"non-constant buffer {b.name} carries data")
    if b.scope == "arena" and not b.tensor:
        fail(f"arena buffer {b.name} names no tensor")
