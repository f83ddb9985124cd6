"""tensorize: replace a matched loop nest with a call of a micro-kernel from runtime_c/kernels.

A `TensorIntrin` says which loop nests a micro-kernel computes and how to call it:

    match(loop: For) -> dict | None     bindings (buffers, base indices, extents, strides) when
                                        `loop` and everything below it is exactly what the
                                        kernel computes; None otherwise
    emit(bindings) -> Stmt              the replacement, normally Evaluate(Call(kernel, ...))
                                        with Address arguments (never text)

Register it with `@tensor_intrin(name, emit)` on its match function; `tensorize(f, loop, intrin_name)` then rewrites
the nest, verifies the result, and is recorded in traces like any primitive. The kernel's
Python implementation (ir/intrinsics.py, `extern=True`) is what the loop-IR interpreter
runs, so "tensorized == untensorized" is tested like every other primitive.

Example (the GEMM intrinsic of gemm_intrin.py):

    for t in 0..5:                      # columns (pixels)
      for oc in 0..8:                   # rows (output channels)
        for k in 0..27:                 # reduction, contiguous in both operands
          acc[t*8 + oc] = acc[t*8 + oc] + i32(col[t*27 + k]) * i32(w[oc*27 + k])
    --tensorize(t, "gemm_nt_s16_dsp")-->
    mc_gemm_nt_dsp_s16(acc, w, col, 8, 5, 27, 27, 27, 8);

A matcher may return bindings["add_buffers"]: new constants the call reads (e.g. a region's
requantization records); `drop_unused_constants` removes the ones no code reads any more.
A matcher may also return bindings["rebind"] = {old: new}: constant operands the kernel reads
in a layout packed at compile time (e.g. weights in panels of four rows). The call then
names `new`, which replaces `old` in the PrimFunc's buffers; `old` must be read nowhere
else, and the kernel's Python implementation reads the packed layout too.

Matchers are written with the helpers below: `perfect_nest` (the chain of directly nested
loops and the innermost body) and `affine` (an index as constant-stride terms of loop vars
plus a base that holds no nest var).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ..tir.nodes import (Address, Allocate, BinOp, Expr, For, IntImm, Load, PrimFunc, SeqStmt, Stmt, Store, Var, add,
                         mul, rewrite, simplify, sub, walk)
from ..tir.verify import verify_primfunc
from .primitives import primitive, ScheduleError, replace_loop, find_loop


@dataclass(frozen=True)
class TensorIntrin:
    name: str
    match: Callable[[For], dict | None]
    emit: Callable[[dict], Stmt]
    doc: str = ""


TENSOR_INTRINS: dict[str, TensorIntrin] = {}


def tensor_intrin(name: str, emit, doc: str = ""):
    """Register the decorated match function, with `emit`, as the tensor intrinsic `name`."""
    def register(match):
        assert name not in TENSOR_INTRINS, f"tensor intrinsic {name} registered twice"
        TENSOR_INTRINS[name] = TensorIntrin(name, match, emit, doc=doc)
        return match
    return register


@primitive("tensorize")
def tensorize(f: PrimFunc, loop: str, intrin: str) -> PrimFunc:
    """Replace loop `loop` (and its whole body) with the micro-kernel call of `intrin`.
    Raises ScheduleError when the nest is not what the kernel computes."""
    ti = TENSOR_INTRINS.get(intrin)
    if ti is None:
        raise ScheduleError(f"unknown tensor intrinsic {intrin!r} (known: {', '.join(sorted(TENSOR_INTRINS))})")
    bindings = ti.match(find_loop(f, loop))
    if bindings is None:
        raise ScheduleError(f"{f.name}: loop {loop} does not match tensor intrinsic {intrin}")
    rebind = bindings.get("rebind")
    added = tuple(bindings.get("add_buffers", ()))
    taken = {b.name for b in f.buffers}
    if any(b.name in taken for b in added):
        raise ScheduleError(f"{f.name}: {intrin} adds a buffer whose name is taken")
    if added:
        f = PrimFunc(f.name, (*f.buffers, *added), f.body, dict(f.attrs))
    if not rebind:
        return replace_loop(f, loop, lambda _: ti.emit(bindings))
    body = rewrite(f.body, lambda n: ti.emit(bindings) if isinstance(n, For) and n.var.name == loop else None)
    for n in walk(body):
        if isinstance(n, (Load, Address)) and n.buffer in rebind:
            raise ScheduleError(f"{f.name}: {n.buffer.name} is read outside loop {loop}; it cannot be repacked")
    return verify_primfunc(PrimFunc(f.name, tuple(rebind.get(b, b) for b in f.buffers), body, dict(f.attrs)))


@primitive("drop_unused_constants")
def drop_unused_constants(f: PrimFunc) -> PrimFunc:
    """Remove the constant buffers nothing in the body reads (after tensorize replaced their
    loads with a packed copy).

        bias: int32[8] const (read nowhere)   --drop_unused_constants-->   (gone)"""
    used = {id(n.buffer) for n in walk(f.body) if hasattr(n, "buffer")}
    keep = tuple(b for b in f.buffers if b.scope != "const" or id(b) in used)
    return verify_primfunc(PrimFunc(f.name, keep, f.body, dict(f.attrs)))


# ---------------------------------------------------------------- matcher helpers

def perfect_nest(loop: For) -> tuple[list[For], Stmt]:
    """The chain of directly nested loops starting at `loop`, and the body inside the last."""
    chain: list[For] = []
    node: Stmt = loop
    while isinstance(node, For):
        chain.append(node)
        node = node.body
    return chain, node


def accumulated_product(tap, acc) -> tuple[Expr, Expr] | None:
    """(a, b) of a tap `acc = acc + a * b` (a Store into the accumulator `acc`), or None."""
    v = tap.value if isinstance(tap, Store) and tap.buffer is acc else None
    if not (isinstance(v, BinOp) and v.op == "add" and isinstance(v.a, Load) and v.a.buffer is acc
            and isinstance(v.b, BinOp) and v.b.op == "mul"):
        return None
    return v.b.a, v.b.b


def accumulation_nest(loop: For, dtype: str):
    """The GEMM kernels' lowered form, one or two loops (columns, output channels) around one
    scalar accumulator of `dtype`: acc = init; for k ... { acc += ... }; store(out). Returns
    (the loops, acc, the init Store, the tap loop, the output Store), or None."""
    chain, body = perfect_nest(loop)
    if len(chain) not in (1, 2) or not isinstance(body, Allocate) or not isinstance(body.body, SeqStmt):
        return None
    acc, stmts = body.buffer, body.body.stmts
    if acc.dtype != dtype or acc.shape != () or len(stmts) != 3:
        return None
    init, taps, out = stmts
    if not (isinstance(init, Store) and init.buffer is acc and isinstance(taps, For) and isinstance(out, Store)):
        return None
    return chain, acc, init, taps, out


def affine(e: Expr, nest_vars: set[str]) -> tuple[dict[str, int], Expr] | None:
    """Decompose integer expression `e` as base + sum(coeff[v] * v) over the vars named in
    `nest_vars`, where `base` mentions none of them. None when `e` is not affine in them
    (e.g. a nest var under div/mod, or multiplied by a non-constant)."""
    if not any(isinstance(n, Var) and n.name in nest_vars for n in walk(e)):
        return {}, e
    if isinstance(e, Var):
        return {e.name: 1}, IntImm(0)
    if isinstance(e, BinOp) and e.op in ("add", "sub"):
        a, b = affine(e.a, nest_vars), affine(e.b, nest_vars)
        if a is None or b is None:
            return None
        sign = 1 if e.op == "add" else -1
        coeffs = dict(a[0])
        for v, c in b[0].items():
            coeffs[v] = coeffs.get(v, 0) + sign * c
        return {v: c for v, c in coeffs.items() if c}, simplify((add if sign > 0 else sub)(a[1], b[1]))
    if isinstance(e, BinOp) and e.op == "mul":
        for x, y in ((e.a, e.b), (e.b, e.a)):
            if isinstance(y, IntImm):
                inner = affine(x, nest_vars)
                if inner is None:
                    return None
                return {v: c * y.value for v, c in inner[0].items()}, simplify(mul(inner[1], y))
    return None
