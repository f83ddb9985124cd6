"""Primitives that move data: cache_write (an accumulator tile in scratch), cache_read (a
column buffer in scratch, e.g. im2col), pack_constant (re-type a constant at compile time),
store_int4 (a constant packed two values per byte in flash, unpacked into scratch by the
kernel), and fuse (two nested loops into one).
"""

from __future__ import annotations

import numpy as np

from ..ir import budget
from ..ir.int4 import is_int4
from ..tir.intrinsics_copy import UNPACK_S4_KERNELS
from ..tir.intrinsics_gemm import S4_KERNELS, s4_panel_order
from ..tir.nodes import (PACKED_INT4, Address, Allocate, BinOp, Buffer, Call, Cast, Evaluate, IntImm, For, LetStmt,
                         Load, PrimFunc, SeqStmt, Stmt, Store, Var, rewrite, simplify, substitute, walk)
from ..tir.verify import verify_primfunc
from .primitives import primitive, ScheduleError, replace_loop, find_loop, weights_name

_WIDER = {"int8": ("int8", "int16", "int32"), "int16": ("int16", "int32"), "int32": ("int32",),
          "float32": ("float32",)}


def _names(f: PrimFunc) -> set[str]:
    return ({n.var.name for n in walk(f.body) if isinstance(n, (For, LetStmt))}
            | {b.name for b in f.buffers} | {n.buffer.name for n in walk(f.body) if isinstance(n, Allocate)})


def _fresh(base: str, taken: set[str]) -> str:
    name, i = base, 1
    while name in taken:
        name, i = f"{base}{i}", i + 1
    taken.add(name)
    return name


def _chain_to(loop: For, pred) -> tuple[list[For], Stmt] | None:
    """Loops directly nested from `loop` down to the first body satisfying `pred`."""
    chain, node = [], loop
    while isinstance(node, For):
        chain.append(node)
        node = node.body
        if pred(node):
            return chain, node
    return None


@primitive("fuse")
def fuse(f: PrimFunc, outer: str, inner: str) -> PrimFunc:
    """Fuse two directly nested loops into one over their product.

        for oh in 0..4 { for ow in 0..5 { B(oh, ow) } }   --fuse(oh, ow)-->
        for oh_ow in 0..20 { B(oh_ow / 5, oh_ow % 5) }

    An index that walks the two loops' elements consecutively, (oh_ow/5)*5k + (oh_ow%5)*k,
    becomes oh_ow*k."""
    loop = find_loop(f, outer)
    if not (isinstance(loop.body, For) and loop.body.var.name == inner):
        raise ScheduleError(f"{f.name}: {inner} is not directly nested in {outer}")
    name = _fresh(f"{outer}_{inner}", _names(f))

    def do(n: For) -> Stmt:
        v, m = Var(name), n.body.extent
        body = substitute(n.body.body, {n.var: _div(v, m), n.body.var: _mod(v, m)})
        return For(v, n.extent * m, rewrite(body, lambda e: _collapse(e, v, m)), n.kind)
    return replace_loop(f, outer, do)


def _scaled(e, v: Var, op: str, m: int):
    """k when `e` is (v op m) * k (or v op m itself: k = 1), else None."""
    if isinstance(e, BinOp) and e.op == op and e.a == v and e.b == IntImm(m):
        return 1
    if isinstance(e, BinOp) and e.op == "mul" and isinstance(e.b, IntImm):
        k = _scaled(e.a, v, op, m)
        return None if k is None else k * e.b.value
    return None


def _collapse(e, v: Var, m: int):
    """(v/m)*(m*k) + ((v%m)*k + rest) -> v*k + rest: the flat index of two fused loops that
    walk consecutive memory (an NHWC pixel) is linear in the fused loop again (v >= 0)."""
    if not (isinstance(e, BinOp) and e.op == "add"):
        return None
    hi = _scaled(e.a, v, "div", m)
    if hi is None:
        return None
    lo, rest = e.b, None
    if isinstance(lo, BinOp) and lo.op == "add" and _scaled(lo.a, v, "mod", m) is not None:
        lo, rest = lo.a, lo.b
    k = _scaled(lo, v, "mod", m)
    if k is None or hi != k * m:
        return None
    flat = v if k == 1 else BinOp("mul", v, IntImm(k))
    return flat if rest is None else BinOp("add", flat, rest)


def _div(v: Var, m: int):
    return BinOp("div", v, IntImm(m)) if m > 1 else v


def _mod(v: Var, m: int):
    return BinOp("mod", v, IntImm(m)) if m > 1 else IntImm(0)


LOCAL_TILE_MAX = 16     # elements: a local tile the C compiler can keep in registers


@primitive("cache_write")
def cache_write(f: PrimFunc, local: str, at: str, scope: str = "scratch") -> PrimFunc:
    """Expand the local scalar `local`, allocated inside the perfect loop chain starting at
    `at`, into a tile indexed by those loops, and distribute the loops over the
    statements of the Allocate body (init, reduction, epilogue become separate nests).
    `scope`: "scratch" (the kernel's scratch in the arena) or "local" (a C array around the
    nests, at most LOCAL_TILE_MAX elements: once its loops are unrolled the compiler keeps
    it in registers, and it costs no arena).

        for t { for oc { acc = b[oc]; for k { acc += x*w }; y[t,oc] = E(acc) } }
        --cache_write(acc, t)-->
        for t { for oc { acc_tile[t,oc] = b[oc] } }
        for t_1 { for oc_1 { for k_1 { acc_tile[t_1,oc_1] += x*w } } }
        for t_2 { for oc_2 { y[t_2,oc_2] = E(acc_tile[t_2,oc_2]) } }

    Requires: the statements communicate only through `local` (no statement reads a buffer
    another one writes)."""
    loop = find_loop(f, at)
    found = _chain_to(loop, lambda s: isinstance(s, Allocate) and s.buffer.name == local)
    if found is None:
        raise ScheduleError(f"{f.name}: no Allocate of {local} directly inside the loops from {at}")
    chain, alloc = found
    acc = alloc.buffer
    if acc.shape != ():
        raise ScheduleError(f"cache_write needs a scalar local, {local} has shape {acc.shape}")
    if scope not in ("scratch", "local"):
        raise ScheduleError(f"cache_write scope {scope!r} is neither scratch nor local")
    extents = tuple(c.extent for c in chain)
    if scope == "local" and int(np.prod(extents)) > LOCAL_TILE_MAX:
        raise ScheduleError(f"cache_write: a local tile of {int(np.prod(extents))} elements is over "
                            f"{LOCAL_TILE_MAX}; place it in scratch")
    stmts = list(alloc.body.stmts) if isinstance(alloc.body, SeqStmt) else [alloc.body]
    reads = [{id(n.buffer) for n in walk(s) if isinstance(n, Load)} for s in stmts]
    writes = [{id(n.buffer) for n in walk(s) if isinstance(n, Store)} - {id(acc)} for s in stmts]
    for i, w in enumerate(writes):
        if any(w & r for j, r in enumerate(reads) if j != i):
            raise ScheduleError(f"{f.name}: statements under {local} communicate through memory")
    tile = Buffer(_fresh(f"{local}_tile", _names(f)), acc.dtype, extents, scope,
                  comment=f"{local} per ({', '.join(c.var.name for c in chain)})")
    taken = _names(f) | {tile.name}
    nests = []
    for i, s in enumerate(stmts):
        new_vars = [c.var if i == 0 else Var(_fresh(f"{c.var.name}_{i}", taken)) for c in chain]
        idx = tile.at(*new_vars)
        s = substitute(s, dict(zip([c.var for c in chain], new_vars))) if i else s
        s = rewrite(s, lambda n: (Load(tile, idx) if isinstance(n, Load) and n.buffer is acc else
                                  Store(tile, idx, n.value) if isinstance(n, Store) and n.buffer is acc else None))
        for c, v in reversed(list(zip(chain, new_vars))):
            s = For(v, c.extent, s, c.kind)
        nests.append(s)
    if scope == "local":
        body = _loop_rewritten(f, at, Allocate(tile, SeqStmt(tuple(nests))))
        return verify_primfunc(PrimFunc(f.name, f.buffers, body, dict(f.attrs)))
    body = _loop_rewritten(f, at, SeqStmt(tuple(nests)))
    return verify_primfunc(PrimFunc(f.name, (*f.buffers, tile), body, dict(f.attrs)))


def let_and_deps(f: PrimFunc, top: Stmt, at: str | None, let_var: str) -> tuple[LetStmt, list[Stmt]]:
    """The let `let_var` under `top` (loop `at`, or the body when at is None) and the loops and
    lets on its path that its value depends on, outermost first; ScheduleError where there is
    no such let or its value reads memory written under `at` (or a local)."""
    path: list[Stmt] = []

    def search(n: Stmt) -> bool:
        path.append(n)
        if isinstance(n, LetStmt) and n.var.name == let_var:
            return True
        kids = n.stmts if isinstance(n, SeqStmt) else [getattr(n, a) for a in ("body", "then_body", "else_body")
                                                        if isinstance(getattr(n, a, None), Stmt)]
        if any(search(k) for k in kids):
            return True
        path.pop()
        return False

    if not search(top.body if at is not None else top):
        raise ScheduleError(f"{f.name}: no let {let_var} under loop {at}")
    let = path[-1]
    written = {id(n.buffer) for n in walk(top) if isinstance(n, Store)}
    if any(isinstance(n, Load) and (id(n.buffer) in written or n.buffer.scope == "local") for n in walk(let.value)):
        raise ScheduleError(f"{f.name}: {let_var} reads memory written under {at}")
    needed = {n.name for n in walk(let.value) if isinstance(n, Var)}
    deps: list[Stmt] = []
    for n in reversed(path[:-1]):
        if isinstance(n, (For, LetStmt)) and n.var.name in needed:
            deps.insert(0, n)
            if isinstance(n, LetStmt):
                needed |= {v.name for v in walk(n.value) if isinstance(v, Var)}
    return let, deps


@primitive("cache_read")
def cache_read(f: PrimFunc, let_var: str, at: str, dtype: str | None = None, even_rows: str | None = None) -> PrimFunc:
    """Compute the let-bound value `let_var` for every iteration of the loops between `at`
    and the let that it depends on, into a scratch buffer filled at the start of `at`'s body
    (at=None: at the start of the function),
    and read it from there (an im2col column buffer when the value is a padded input tap).
    `dtype` may widen the buffer (int8 -> int16) so a micro-kernel can load it as pairs.
    `even_rows` (a loop name): when the buffer's first loop is that loop, its rows (everything
    under it: an im2col column of a pixel loop) start an even number of elements apart, one
    unwritten element after an odd row, so that a kernel can read each column by words (the
    int16 DSP GEMM's LDM); otherwise nothing changes.

        for p { for oc { for k { let v = X(p, k); acc += i32(v) * w[oc, k] } } }
        --cache_read(v, p... at the loop above p)-->
        for p_c { for k_c { v_cache[p_c, k_c] = X(p_c, k_c) } }
        for p { for oc { for k { acc += i32(v_cache[p, k]) * w[oc, k] } } }

    Requires: the value reads no buffer written under `at`, and no local."""
    top = find_loop(f, at) if at is not None else f.body
    let, deps = let_and_deps(f, top, at, let_var)
    dtype = dtype or let.value.dtype
    if dtype not in _WIDER.get(let.value.dtype, ()):
        raise ScheduleError(f"cache_read of {let.value.dtype} into {dtype} would change values")
    loops_ = [n for n in deps if isinstance(n, For)]
    taken = _names(f)
    shape = tuple(lp.extent for lp in loops_) or (1,)
    row = Buffer("row", dtype, shape[1:], "scratch")          # only for its row-major index
    padded = bool(even_rows) and len(shape) > 1 and loops_[0].var.name == even_rows and row.size % 2 == 1
    cache = Buffer(_fresh(f"{let_var}_cache", taken), dtype, (shape[0], row.size + 1) if padded else shape, "scratch",
                   comment=f"{let_var} for each ({', '.join(lp.var.name for lp in loops_)})"
                           + (f", rows of {row.size} padded to {row.size + 1}" if padded else ""))

    def cache_index(idx):
        return cache.at(idx[0], row.at(*idx[1:])) if padded else cache.at(*idx)
    rename = {n.var: Var(_fresh(f"{n.var.name}_c", taken), n.var.dtype) for n in deps}
    stage: Stmt = Store(cache, cache_index([rename[lp.var] for lp in loops_]) if loops_ else cache.at(0),
                        Cast(dtype, let.value) if dtype != let.value.dtype else let.value)
    for n in reversed(deps):
        stage = (For(rename[n.var], n.extent, stage, n.kind) if isinstance(n, For)
                 else LetStmt(rename[n.var], n.value, stage))
    stage = substitute(stage, rename)
    load = Load(cache, cache_index([lp.var for lp in loops_]) if loops_ else cache.at(0))
    return read_from_cache(f, top, at, let, stage, load)


def read_from_cache(f: PrimFunc, top: Stmt, at: str | None, let: LetStmt, stage: Stmt, load: Load) -> PrimFunc:
    """The end of a cache primitive (cache_read, window.cache_window): `stage` (which fills
    load.buffer) first in `top` (loop `at`, or the body when at is None), and every use of the
    let-bound value read by `load` (narrowed back to the value's type) instead."""
    cache = load.buffer
    narrow = Cast(let.value.dtype, load) if cache.dtype != let.value.dtype else load

    def replace_let(n):
        if isinstance(n, LetStmt) and n.var.name == let.var.name:
            return _drop_dead_lets(_unwrap_cast(substitute(n.body, {n.var: narrow}), cache))
        return None
    if at is None:
        body = _drop_dead_lets(SeqStmt((stage, rewrite(top, replace_let))))
    else:
        new_top = For(top.var, top.extent, SeqStmt((stage, rewrite(top.body, replace_let))), top.kind)
        body = _drop_dead_lets(_loop_rewritten(f, at, new_top))
    return verify_primfunc(PrimFunc(f.name, (*f.buffers, cache), body, dict(f.attrs)))


def _loop_rewritten(f: PrimFunc, name: str, new: Stmt) -> Stmt:
    """f's body with loop `name` replaced by `new` (verified later, with the new buffers)."""
    return rewrite(f.body, lambda n: new if isinstance(n, For) and n.var.name == name else None)


def _unwrap_cast(s: Stmt, cache: Buffer) -> Stmt:
    """i32(i8(cache[...])) -> i32(cache[...]): the cache holds values of the narrow type."""
    def fn(n):
        if (isinstance(n, Cast) and isinstance(n.value, Cast) and isinstance(n.value.value, Load)
                and n.value.value.buffer is cache and n.dtype in _WIDER[cache.dtype]):
            return Cast(n.dtype, n.value.value)
        return None
    return rewrite(s, fn)


def _drop_dead_lets(s: Stmt) -> Stmt:
    def fn(n):
        if isinstance(n, LetStmt) and not any(isinstance(v, Var) and v.name == n.var.name for v in walk(n.body)):
            return n.body
        return None
    return rewrite(s, fn)


@primitive("pack_constant")
def pack_constant(f: PrimFunc, buffer: str, dtype: str) -> PrimFunc:
    """Store constant `buffer` as `dtype` (computed now, on the host): a wider type lets a
    micro-kernel load operand pairs directly. Every read is rewritten so values are unchanged.

        w: int8[8,27] = {...};  acc += i32(w[i])   --pack_constant(w, int16)-->
        w: int16[8,27] = {...}; acc += i32(w[i])"""
    old = next((b for b in f.buffers if b.name == buffer and b.scope == "const"), None)
    if old is None:
        raise ScheduleError(f"{f.name}: no constant named {buffer}")
    if dtype not in _WIDER.get(old.dtype, ()):
        raise ScheduleError(f"pack_constant {old.dtype} -> {dtype} would change values")
    from ..ir.graph import NP_DTYPES
    budget.check_tensor(f"{weights_name(old)}, as {dtype}", old.shape, np.dtype(NP_DTYPES[dtype]).itemsize)
    new = Buffer(old.name, dtype, old.shape, "const", data=np.asarray(old.data).astype(NP_DTYPES[dtype]),
                 comment=f"{old.comment} (as {dtype})")

    def fn(n):
        if isinstance(n, Load) and n.buffer is old:
            ld = Load(new, n.index)
            return Cast(old.dtype, ld) if dtype != old.dtype else ld
        if isinstance(n, Cast) and isinstance(n.value, Cast) and isinstance(n.value.value, Load) \
                and n.value.value.buffer is new and n.dtype in _WIDER[dtype]:
            return Cast(n.dtype, n.value.value)
        return None
    body = rewrite(f.body, fn)
    return verify_primfunc(PrimFunc(f.name, tuple(new if b is old else b for b in f.buffers), simplify(body),
                                    dict(f.attrs)))


STORE_INT4_MODES = ("unpack", "in_place")


@primitive("store_int4")
def store_int4(f: PrimFunc, buffer: str, mode: str = "unpack") -> PrimFunc:
    """Keep constant `buffer` (int8 or int16, every value in -8..7) in flash as packed int4,
    half a byte per value, and expand it into scratch when the kernel starts:

        w: int8[64,64] = {...};  body(w)   --store_int4(w)-->
        w_s4: int4[64,64] = {...};  mc_unpack_s4_s8(w, w_s4, 4096);  body(w)   (w in scratch)

    The kernel computes on the same values in the same layout (any packing pack_constant or
    a micro-kernel's panels made stays), so the output is unchanged; the price is the scratch
    and about three instructions per weight each inference.

    mode "in_place", where the weights' only readers are mc_gemm_p4_dsp_s8 or
    mc_gemm_p4_rq_dsp_s8 (DSP cores' fully connected and convolution kernels), makes them their
    int4 twins (mc_gemm_p4_dsp_s4, mc_gemm_p4_rq_dsp_s4), which read the packed panels
    themselves: no scratch, at about 8 more instructions per 16 MACs (where a weight is used
    once, as in a fully connected layer, cheaper than unpacking it too)."""
    if mode not in STORE_INT4_MODES:
        raise ScheduleError(f"store_int4 mode {mode!r}: one of {', '.join(STORE_INT4_MODES)}")
    old = next((b for b in f.buffers if b.name == buffer and b.scope == "const"), None)
    if old is None:
        raise ScheduleError(f"{f.name}: no constant named {buffer}")
    if old.dtype not in UNPACK_S4_KERNELS:
        raise ScheduleError(f"store_int4 of {old.dtype} {buffer}: int8 or int16 weights only")
    values = np.asarray(old.data)
    if not is_int4(values):
        raise ScheduleError(f"store_int4 of {buffer}: values {int(values.min())}..{int(values.max())} are not int4")
    if mode == "in_place":
        fused = _fused_s4(f, old)
        if fused is None:
            raise ScheduleError(f"store_int4 in place: {buffer} is not read only by a kernel with an int4 twin "
                                f"({', '.join(S4_KERNELS)}) at panel boundaries")
        return fused
    packed = Buffer(_fresh(f"{buffer}_s4", _names(f)), PACKED_INT4, old.shape, "const", data=values.astype(np.int8),
                    comment=f"{old.comment} (packed int4)")
    unpacked = Buffer(old.name, old.dtype, old.shape, "scratch", comment=f"{old.comment}, unpacked from int4")

    def fn(n):
        if isinstance(n, Load) and n.buffer is old:
            return Load(unpacked, n.index)
        if isinstance(n, Address) and n.buffer is old:
            return Address(unpacked, n.index)
        return None
    unpack = Evaluate(Call(UNPACK_S4_KERNELS[old.dtype],
                           (Address(unpacked, IntImm(0)), Address(packed, IntImm(0)), IntImm(old.size)), "void"))
    body = SeqStmt((unpack, rewrite(f.body, fn)))
    buffers = tuple(unpacked if b is old else b for b in f.buffers) + (packed,)
    return verify_primfunc(PrimFunc(f.name, buffers, body, dict(f.attrs)))


def _fused_s4(f: PrimFunc, old: Buffer) -> PrimFunc | None:
    """store_int4 of weights read only by kernels with an int4 twin (S4_KERNELS), at panel
    boundaries: the calls read the packed panels themselves. None where that does not hold."""
    reads = [n for n in walk(f.body) if isinstance(n, (Load, Address)) and n.buffer is old]
    calls = [n for n in walk(f.body) if isinstance(n, Call) and any(a is r for a in n.args for r in reads)]
    if (old.dtype != "int8" or not calls or old.size % 16 or len(reads) != len(calls)
            or any(c.name not in S4_KERNELS or c.args[1] not in reads or not _multiple_of(c.args[1].index, 16)
                   for c in calls)):
        return None
    packed = Buffer(_fresh(f"{old.name}_s4", _names(f)), PACKED_INT4, old.shape, "const",
                    data=s4_panel_order(np.asarray(old.data).reshape(-1)).reshape(old.shape),
                    comment=f"{old.comment} (packed int4, read in place)")

    def fn(n):
        if isinstance(n, Call) and n.name in S4_KERNELS and isinstance(n.args[1], Address) and n.args[1].buffer is old:
            return Call(S4_KERNELS[n.name], (n.args[0], Address(packed, n.args[1].index), *n.args[2:]), n.dtype)
        return None
    return verify_primfunc(PrimFunc(f.name, tuple(packed if b is old else b for b in f.buffers), rewrite(f.body, fn),
                                    dict(f.attrs)))


def _multiple_of(e, q: int) -> bool:
    """Whether index expression `e` is provably a multiple of `q`."""
    if isinstance(e, IntImm):
        return e.value % q == 0
    if isinstance(e, BinOp) and e.op in ("add", "sub"):
        return _multiple_of(e.a, q) and _multiple_of(e.b, q)
    if isinstance(e, BinOp) and e.op == "mul":
        return _multiple_of(e.a, q) or _multiple_of(e.b, q)
    return False
