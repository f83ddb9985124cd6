"""Loop-IR interpreter: the executable definition of the loop IR's semantics.

Slow (Python scalars) and meant for small shapes: schedule tests run a PrimFunc before and
after a primitive and compare. Integers wrap as int32, division truncates as in C, float32
arithmetic rounds to float32 after every operation (as C without FMA contraction).
"""

from __future__ import annotations

import numpy as np

from . import intrinsics
from .nodes import (NP_BUFFER_DTYPES, Address, ParamStruct, Allocate, BinOp, Call, Cast, Evaluate, FloatImm, For, IfThenElse, IntImm, LetStmt,
                    Load, PrimFunc, Select, SeqStmt, Store, Var)


def wrap(v: int, bits: int = 32) -> int:
    m = 1 << bits
    v &= m - 1
    return v - m if v >= m >> 1 else v


def _cdiv(a, b):
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


_INT = {
    "add": lambda a, b: wrap(a + b), "sub": lambda a, b: wrap(a - b), "mul": lambda a, b: wrap(a * b),
    "div": _cdiv, "mod": lambda a, b: a - _cdiv(a, b) * b,
    "floordiv": lambda a, b: a // b, "floormod": lambda a, b: a % b,
    "min": min, "max": max, "shl": lambda a, b: wrap(a << b), "shr": lambda a, b: a >> b,
    "and": lambda a, b: a & b, "or": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
}
_F32 = np.float32
_FLOAT = {"add": lambda a, b: _F32(a + b), "sub": lambda a, b: _F32(a - b),
          "mul": lambda a, b: _F32(a * b), "div": lambda a, b: _F32(a / b),
          "min": lambda a, b: a if a < b else b, "max": lambda a, b: a if a > b else b}
_CMP = {"lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b,
        "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


def _cast(dtype: str, v):
    if dtype == "float32":
        return _F32(v)
    if dtype == "bool":
        return bool(v)
    if isinstance(v, (float, np.floating)):
        v = int(np.trunc(v))         # C float -> int conversion truncates
    if dtype in ("uint32", "uint64"):
        return int(v) & ((1 << (32 if dtype == "uint32" else 64)) - 1)
    return wrap(int(v), {"int8": 8, "int16": 16, "int32": 32, "int64": 64}[dtype])


def compile_expr(e):
    if isinstance(e, Var):
        name = e.name
        return lambda env, bufs: env[name]
    if isinstance(e, IntImm):
        v = e.value
        return lambda env, bufs: v
    if isinstance(e, FloatImm):
        fv = _F32(e.value)
        return lambda env, bufs: fv
    if isinstance(e, BinOp):
        a, b = compile_expr(e.a), compile_expr(e.b)
        if e.op == "land":
            return lambda env, bufs: a(env, bufs) and b(env, bufs)
        if e.op == "lor":
            return lambda env, bufs: a(env, bufs) or b(env, bufs)
        fn = _CMP.get(e.op) or (_FLOAT if e.a.dtype == "float32" else _INT)[e.op]
        return lambda env, bufs: fn(a(env, bufs), b(env, bufs))
    if isinstance(e, Cast):
        v, dt = compile_expr(e.value), e.dtype
        return lambda env, bufs: _cast(dt, v(env, bufs))
    if isinstance(e, Select):
        c, t, f = compile_expr(e.cond), compile_expr(e.true_value), compile_expr(e.false_value)
        return lambda env, bufs: t(env, bufs) if c(env, bufs) else f(env, bufs)
    if isinstance(e, Load):
        key, idx = id(e.buffer), compile_expr(e.index)
        conv = _F32 if e.buffer.dtype == "float32" else int
        return lambda env, bufs: conv(bufs[key][idx(env, bufs)])
    if isinstance(e, Address):
        key, idx = id(e.buffer), compile_expr(e.index)
        return lambda env, bufs: (bufs[key], idx(env, bufs))
    if isinstance(e, ParamStruct):
        fields = e.as_dict()
        return lambda env, bufs: fields
    if isinstance(e, Call):
        impl = intrinsics.get(e.name).impl
        args = [compile_expr(a) for a in e.args]
        return lambda env, bufs: impl(*[a(env, bufs) for a in args])
    raise TypeError(f"not an expression: {type(e).__name__}")


def _compile_stmt(s):
    if isinstance(s, SeqStmt):
        parts = [_compile_stmt(x) for x in s.stmts]

        def run_seq(env, bufs):
            for p in parts:
                p(env, bufs)
        return run_seq
    if isinstance(s, For):
        name, n, body = s.var.name, s.extent, _compile_stmt(s.body)

        def run_for(env, bufs):
            for i in range(n):
                env[name] = i
                body(env, bufs)
        return run_for
    if isinstance(s, LetStmt):
        name, val, body = s.var.name, compile_expr(s.value), _compile_stmt(s.body)

        def run_let(env, bufs):
            env[name] = val(env, bufs)
            body(env, bufs)
        return run_let
    if isinstance(s, Allocate):
        key, body, b = id(s.buffer), _compile_stmt(s.body), s.buffer

        def run_alloc(env, bufs):
            bufs[key] = np.zeros(b.size, NP_BUFFER_DTYPES[b.dtype])
            body(env, bufs)
        return run_alloc
    if isinstance(s, Store):
        key, idx, val, dt = id(s.buffer), compile_expr(s.index), compile_expr(s.value), s.buffer.dtype

        def run_store(env, bufs):
            bufs[key][idx(env, bufs)] = _cast(dt, val(env, bufs))
        return run_store
    if isinstance(s, IfThenElse):
        c, t = compile_expr(s.cond), _compile_stmt(s.then_body)
        f = _compile_stmt(s.else_body) if s.else_body is not None else (lambda env, bufs: None)
        return lambda env, bufs: t(env, bufs) if c(env, bufs) else f(env, bufs)
    if isinstance(s, Evaluate):
        return compile_expr(s.call)
    raise TypeError(f"not a statement: {type(s).__name__}")


def run_primfunc(f: PrimFunc, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Execute `f`. `arrays` maps each arena/scratch buffer name to an array of its dtype and
    size (read for inputs, written in place for outputs); constants come from the buffers.
    Returns `arrays` with every arena/scratch buffer as a flat array."""
    bufs: dict[int, np.ndarray] = {}
    for b in f.buffers:
        if b.scope == "const":
            bufs[id(b)] = b.data.reshape(-1)
        else:
            a = arrays.get(b.name)
            if a is None:
                a = np.zeros(b.size, NP_BUFFER_DTYPES[b.dtype])
            arrays[b.name] = a = np.ascontiguousarray(a, NP_BUFFER_DTYPES[b.dtype]).reshape(-1)
            bufs[id(b)] = a
    _compile_stmt(f.body)({}, bufs)
    return arrays

