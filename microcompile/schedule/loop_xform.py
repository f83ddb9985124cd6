"""Primitives that regroup loops without moving data: vectorize (a loop over packed int8/int16
lanes of a 32-bit word), compute_at (a producer nest moved into its consumer's loop) and
unswitch (a test that does not change inside a loop taken out of it).
"""

from __future__ import annotations

from ..tir.nodes import (BinOp, Expr, For, IfThenElse, IntImm, LetStmt, Load, PrimFunc, Select, SeqStmt, Stmt,
                         Store, Var, rewrite, simplify, substitute, walk)
from ..tir.verify import verify_primfunc
from .primitives import primitive, ScheduleError, find_loop, split, unroll
from .tensorize import affine

_BITS = {"int8": 8, "uint8": 8, "int16": 16, "uint16": 16}
VECTOR_LANES_DOMAIN = (2, 4)


@primitive("vectorize")
def vectorize(f: PrimFunc, loop: str, lanes: int) -> PrimFunc:
    """Group the innermost `loop` into runs of `lanes` adjacent int8/int16 elements (one 32-bit
    word) that are emitted as one straight-line group, so the C compiler sees whole words:

        for c in 0..8 { y[c] = i8(x[c] + 1) }   --vectorize(c, 4)-->
        for c_o in 0..2 { unrolled c_i in 0..4 { y[c_o*4 + c_i] = i8(x[c_o*4 + c_i] + 1) } }

    Requires: `loop` holds no loop, its extent is a multiple of `lanes`, and every access it
    indexes is to an 8- or 16-bit buffer at stride 1 (so the lanes fill one word)."""
    if lanes not in VECTOR_LANES_DOMAIN:
        raise ScheduleError(f"vectorize lanes {lanes} not in {VECTOR_LANES_DOMAIN}")
    node = find_loop(f, loop)
    if any(isinstance(n, For) for n in walk(node.body)):
        raise ScheduleError(f"{f.name}: vectorize needs an innermost loop, {loop} holds loops")
    if node.extent % lanes:
        raise ScheduleError(f"{f.name}: extent {node.extent} of {loop} is not a multiple of {lanes} lanes")
    touched = 0
    for n in walk(node.body):
        if not isinstance(n, (Load, Store)):
            continue
        dec = affine(n.index, {loop})
        if dec is None or not dec[0]:
            if dec is None:
                raise ScheduleError(f"{f.name}: {n.buffer.name} is not indexed affinely by {loop}")
            continue
        bits = _BITS.get(n.buffer.dtype)
        if bits is None or bits * lanes > 32 or dec[0].get(loop) != 1:
            raise ScheduleError(f"{f.name}: {n.buffer.name} ({n.buffer.dtype}) is not {lanes} packed lanes along {loop}")
        touched += 1
    if not touched:
        raise ScheduleError(f"{f.name}: loop {loop} indexes no packed buffer")
    return unroll(split(f, loop, lanes), f"{loop}_i")


def _rows(stmt: Stmt, var: Var, inner: dict[str, int], buffers: set[int], what: str, f: PrimFunc) -> None:
    """Check every access to `buffers` in `stmt` stays in row `var` (first dimension) of its buffer."""
    for n in walk(stmt):
        if not (isinstance(n, (Load, Store)) and id(n.buffer) in buffers):
            continue
        row = n.buffer.size // n.buffer.shape[0]
        dec = affine(n.index, {var.name, *inner})
        base = simplify(dec[1]) if dec is not None else None
        if dec is None or not isinstance(base, IntImm) or dec[0].get(var.name, 0) != row:
            raise ScheduleError(f"{f.name}: {what} access to {n.buffer.name} is not confined to row {var.name}")
        rest = {v: c for v, c in dec[0].items() if v != var.name}
        lo = base.value + sum(min(0, c * (inner[v] - 1)) for v, c in rest.items())
        hi = base.value + sum(max(0, c * (inner[v] - 1)) for v, c in rest.items())
        if lo < 0 or hi >= row:
            raise ScheduleError(f"{f.name}: {what} access to {n.buffer.name} leaves row {var.name}")


@primitive("compute_at")
def compute_at(f: PrimFunc, producer: str, consumer: str) -> PrimFunc:
    """Move the producer loop nest into the consumer loop that directly follows it, so each
    iteration produces the row of scratch it then consumes (smaller live data, one loop):

        for t in 0..5 { for c in 0..8 { tile[t*8 + c] = b[c] } }
        for t_1 in 0..5 { for c_1 in 0..8 { y[t_1*8 + c_1] = f(tile[t_1*8 + c_1]) } }
        --compute_at(t, t_1)-->
        for t_1 in 0..5 { for c in 0..8 { tile[t_1*8 + c] = b[c] }
                          for c_1 in 0..8 { y[t_1*8 + c_1] = f(tile[t_1*8 + c_1]) } }

    Requires: the two loops are adjacent statements with equal extents; iteration i of either
    touches only row i of every buffer the producer writes; the consumer writes nothing the
    producer reads."""
    p, c = find_loop(f, producer), find_loop(f, consumer)
    seqs = [n for n in walk(f.body) if isinstance(n, SeqStmt)
            and any(a is p and b is c for a, b in zip(n.stmts, n.stmts[1:]))]
    if not seqs:
        raise ScheduleError(f"{f.name}: {consumer} does not directly follow {producer}")
    if p.extent != c.extent:
        raise ScheduleError(f"{f.name}: extents differ ({producer} {p.extent}, {consumer} {c.extent})")
    written = {id(n.buffer) for n in walk(p.body) if isinstance(n, Store)}
    p_reads = {id(n.buffer) for n in walk(p.body) if isinstance(n, Load)} - written
    if p_reads & {id(n.buffer) for n in walk(c.body) if isinstance(n, Store)}:
        raise ScheduleError(f"{f.name}: {consumer} writes memory that {producer} reads")
    _rows(p.body, p.var, {n.var.name: n.extent for n in walk(p.body) if isinstance(n, For)}, written, "producer", f)
    _rows(c.body, c.var, {n.var.name: n.extent for n in walk(c.body) if isinstance(n, For)}, written, "consumer", f)
    fused = For(c.var, c.extent, SeqStmt((substitute(p.body, {p.var: c.var}), c.body)), c.kind)

    def fn(n):
        if isinstance(n, SeqStmt) and n is seqs[0]:
            out, i = [], 0
            while i < len(n.stmts):
                if n.stmts[i] is p and i + 1 < len(n.stmts) and n.stmts[i + 1] is c:
                    out.append(fused)
                    i += 2
                else:
                    out.append(n.stmts[i])
                    i += 1
            return out[0] if len(out) == 1 else SeqStmt(tuple(out))
        return None
    return verify_primfunc(f.with_body(rewrite(f.body, fn)))


def _conjuncts(e: Expr) -> list[Expr]:
    if isinstance(e, BinOp) and e.op == "land":
        return _conjuncts(e.a) + _conjuncts(e.b)
    return [e]


def _uses(e, names: set[str]) -> bool:
    return any(isinstance(n, Var) and n.name in names for n in walk(e))


@primitive("unswitch")
def unswitch(f: PrimFunc, loop: str) -> PrimFunc:
    """Take the terms of a Select's condition that do not change inside `loop` out of it, so
    the loop runs without them (e.g. the padding test of an im2col copy, once per run of
    channels instead of once per element):

        for ic in 0..16 { let ih = oh + kh - 1;
                          col[ic] = i16(select(0 <= ih && ih < 8 && iw < 8, x[ih*128 + iw*16 + ic], -128)) }
        --unswitch(ic)-->
        let ih = oh + kh - 1;
        if (0 <= ih && ih < 8 && iw < 8) { for ic in 0..16 { col[ic] = i16(x[ih*128 + iw*16 + ic]) } }
        else { for ic_u in 0..16 { col[ic_u] = i16(-128) } }

    Terms that do change stay in the Select of the first copy. Requires: the loop body is lets
    then one Store whose value holds exactly one Select, and some term of its condition reads
    neither the loop var nor a let that does."""
    node = find_loop(f, loop)
    lets, body = [], node.body
    while isinstance(body, LetStmt):
        lets.append(body)
        body = body.body
    selects = [n for n in walk(body.value) if isinstance(n, Select)] if isinstance(body, Store) else []
    if len(selects) != 1 or any(isinstance(n, Select) for n in walk(body.index)):
        raise ScheduleError(f"{f.name}: the body of {loop} is not one store of one select")
    sel = selects[0]
    variant, hoisted, kept = {node.var.name}, [], []
    for let in lets:
        if _uses(let.value, variant):
            variant.add(let.var.name)
            kept.append(let)
        else:
            hoisted.append(let)
    terms = _conjuncts(sel.cond)
    fixed = [t for t in terms if not _uses(t, variant) and not any(isinstance(n, Load) for n in walk(t))]
    if not fixed:
        raise ScheduleError(f"{f.name}: every term of the condition changes inside {loop}")
    rest = [t for t in terms if t not in fixed]

    def conj(ts):
        out = ts[0]
        for t in ts[1:]:
            out = BinOp("land", out, t)
        return out

    def copy(value: Expr, suffix: str) -> Stmt:
        """One copy of the loop with the select replaced by `value`; names bound inside it
        get `suffix` (names are unique in a PrimFunc); lets it no longer reads are dropped."""
        st = rewrite(body, lambda n: value if isinstance(n, Select) and n == sel else None)
        for let in reversed(kept):
            if _uses(st, {let.var.name}):
                st = LetStmt(let.var, let.value, st)
        st = For(node.var, node.extent, st, node.kind)
        if suffix:
            bound = [n.var for n in walk(st) if isinstance(n, (For, LetStmt))]
            st = rewrite(st, lambda n: (Var(n.name + suffix, n.dtype) if isinstance(n, Var) and n in bound else
                                        None))
        return st

    then = copy(Select(conj(rest), sel.true_value, sel.false_value) if rest else sel.true_value, "")
    new: Stmt = IfThenElse(conj(fixed), then, copy(sel.false_value, "_u"))
    for let in reversed(hoisted):
        new = LetStmt(let.var, let.value, new)
    return verify_primfunc(f.with_body(rewrite(f.body, lambda n: new if isinstance(n, For) and n.var.name == loop
                                               else None)))
