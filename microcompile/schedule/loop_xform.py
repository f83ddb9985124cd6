"""Primitives that regroup loops without moving data: vectorize (a loop over packed int8/int16
lanes of a 32-bit word), compute_at (a producer nest moved into its consumer's loop),
unswitch (a test that does not change inside a loop taken out of it), partition (a loop cut
into consecutive parts at constant bounds, each without the tests its range decides) and
inline_let (a let-bound index replaced by its value).
"""

from __future__ import annotations

from ..tir.nodes import (Allocate, BinOp, Buffer, Expr, For, IfThenElse, IntImm, LetStmt, Load, PrimFunc, Select, SeqStmt, Stmt,
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


# ---------------------------------------------------------------- partition

def value_range(e: Expr, env: dict[str, tuple[int, int]]) -> tuple[int, int] | None:
    """The closed interval [lo, hi] an int32 expression takes when each var named in `env` ranges
    over its interval; None when that is not known (a load, an unknown var, a division by a
    non-constant). C's truncating div is monotone for a positive divisor, so bounds map to bounds."""
    if isinstance(e, IntImm):
        return e.value, e.value
    if isinstance(e, Var):
        return env.get(e.name)
    if not isinstance(e, BinOp):
        return None
    a = value_range(e.a, env)
    b = value_range(e.b, env)
    if a is None or b is None:
        return None
    if e.op == "add":
        return a[0] + b[0], a[1] + b[1]
    if e.op == "sub":
        return a[0] - b[1], a[1] - b[0]
    if e.op == "mul":
        ends = [x * y for x in a for y in b]
        return min(ends), max(ends)
    if e.op in ("div", "floordiv") and b[0] == b[1] and b[0] > 0:
        d = b[0]
        q = (lambda x: int(x / d)) if e.op == "div" else (lambda x: x // d)
        return q(a[0]), q(a[1])
    if e.op in ("mod", "floormod") and b[0] == b[1] and b[0] > 0 and a[0] >= 0:
        d = b[0]
        if a[0] // d == a[1] // d:
            return a[0] % d, a[1] % d
        return 0, d - 1
    if e.op in ("min", "max"):
        fn = min if e.op == "min" else max
        return fn(a[0], b[0]), fn(a[1], b[1])
    return None


def proven(cond: Expr, env: dict[str, tuple[int, int]]) -> bool | None:
    """True (False) when the comparison `cond` holds (fails) for every value in `env`'s ranges;
    None when the ranges do not decide it."""
    if not (isinstance(cond, BinOp) and cond.op in ("lt", "le", "gt", "ge")):
        return None
    a, b = value_range(cond.a, env), value_range(cond.b, env)
    if a is None or b is None:
        return None
    lo, hi = a[0] - b[1], a[1] - b[0]          # the range of a - b
    holds = {"lt": hi < 0, "le": hi <= 0, "gt": lo > 0, "ge": lo >= 0}[cond.op]
    fails = {"lt": lo >= 0, "le": lo > 0, "gt": hi <= 0, "ge": hi < 0}[cond.op]
    return True if holds else (False if fails else None)


def _conj(ts: list[Expr]) -> Expr:
    out = ts[0]
    for t in ts[1:]:
        out = BinOp("land", out, t)
    return out


def prune_selects(s: Stmt, env: dict[str, tuple[int, int]]) -> Stmt:
    """`s` with the terms of every Select's condition that the ranges of the enclosing loops
    (and of `env`) decide taken out: a Select whose terms all hold becomes its true value, one
    with a term that fails its false value."""
    if isinstance(s, For):
        return For(s.var, s.extent, prune_selects(s.body, {**env, s.var.name: (0, s.extent - 1)}), s.kind)
    if isinstance(s, LetStmt):
        r = value_range(s.value, env)
        inner = {**env, s.var.name: r} if r is not None else env
        return LetStmt(s.var, _prune_expr(s.value, env), prune_selects(s.body, inner))
    if isinstance(s, SeqStmt):
        return SeqStmt(tuple(prune_selects(c, env) for c in s.stmts))
    if isinstance(s, IfThenElse):
        return IfThenElse(s.cond, prune_selects(s.then_body, env),
                          prune_selects(s.else_body, env) if s.else_body is not None else None)
    if isinstance(s, Store):
        return Store(s.buffer, _prune_expr(s.index, env), _prune_expr(s.value, env))
    if isinstance(s, Allocate):
        return Allocate(s.buffer, prune_selects(s.body, env))
    return s


def _prune_expr(e: Expr, env) -> Expr:
    def fn(n):
        if not isinstance(n, Select):
            return None
        terms = _conjuncts(n.cond)
        verdicts = [proven(t, env) for t in terms]
        if False in verdicts:
            return n.false_value
        kept = [t for t, v in zip(terms, verdicts) if v is not True]
        if not kept:
            return n.true_value
        return Select(_conj(kept), n.true_value, n.false_value) if len(kept) < len(terms) else None
    return rewrite(e, fn)


def _renamed(s: Stmt, suffix: str, taken: set[str]) -> Stmt:
    """`s` with every name bound inside it (loops, lets, local buffers) given `suffix`."""
    bound = {n.var.name for n in walk(s) if isinstance(n, (For, LetStmt))}
    local = {id(n.buffer): n.buffer for n in walk(s) if isinstance(n, Allocate)}
    clash = sorted(n + suffix for n in bound | {b.name for b in local.values()} if n + suffix in taken)
    if clash:
        raise ScheduleError(f"partition: the names {', '.join(clash)} are taken")
    bufs = {k: Buffer(b.name + suffix, b.dtype, b.shape, b.scope, comment=b.comment) for k, b in local.items()}

    def fn(n):
        if isinstance(n, Var) and n.name in bound:
            return Var(n.name + suffix, n.dtype)
        if isinstance(n, Load) and id(n.buffer) in bufs:
            return Load(bufs[id(n.buffer)], n.index)
        if isinstance(n, Store) and id(n.buffer) in bufs:
            return Store(bufs[id(n.buffer)], n.index, n.value)
        if isinstance(n, Allocate) and id(n.buffer) in bufs:
            return Allocate(bufs[id(n.buffer)], n.body)
        return None
    return rewrite(s, fn)


# Suffixes of a partition's parts: _p1, _p2, ... unless a name is taken (a loop partitioned
# again inside a part of an earlier partition), then _q1, ... (traces made before the others
# existed only ever took _p).
_PART_TAGS = ("p", "q", "r", "s", "t", "u")


def _clashes(node: For, tag: str, n_parts: int, taken: set[str]) -> bool:
    bound = {n.var.name for n in walk(node) if isinstance(n, (For, LetStmt))} | \
        {n.buffer.name for n in walk(node) if isinstance(n, Allocate)}
    return any(f"{name}_{tag}{i}" in taken for i in range(1, n_parts) for name in bound)


@primitive("partition")
def partition(f: PrimFunc, loop: str, *bounds: int) -> PrimFunc:
    """Cut the range of `loop` at the constant `bounds` into consecutive loops, each a copy of
    the body over its part, and take out of each copy the Select terms its part's range decides
    (e.g. the padding test of an im2col copy in the output rows whose taps are all inside the
    input):

        for b in 0..6 { let ih = b - 1 + kh; col[...] = select(0 <= ih && ih < 4, x[ih], -128) }
        --partition(b, 1, 5)-->
        for b in 0..1 { ... select(0 <= ih && ih < 4, ...) }          (kept: the border)
        for b_p1 in 0..4 { let ih_p1 = (b_p1 + 1) - 1 + kh_p1; col[...] = x[ih_p1] }
        for b_p2 in 0..1 { ... }

    The first part keeps the names; names bound in part i > 0 get the suffix `_p<i>` (or `_q<i>`,
    ... where a name with `_p<i>` is taken).
    Requires: 0 < bounds[0] < bounds[1] < ... < the loop's extent."""
    node = find_loop(f, loop)
    cuts = [0, *bounds, node.extent]
    if any(not isinstance(b, int) for b in bounds) or not bounds \
            or any(a >= b for a, b in zip(cuts, cuts[1:])):
        raise ScheduleError(f"{f.name}: partition bounds {list(bounds)} are not increasing inside 0..{node.extent}")
    taken = {n.var.name for n in walk(f.body) if isinstance(n, (For, LetStmt))} | {b.name for b in f.buffers}
    taken |= {n.buffer.name for n in walk(f.body) if isinstance(n, Allocate)}
    tag = next((t for t in _PART_TAGS if not _clashes(node, t, len(cuts) - 1, taken)), None)
    if tag is None:
        raise ScheduleError(f"partition: the names of {loop}'s parts are taken")
    parts = []
    for i, (lo, hi) in enumerate(zip(cuts, cuts[1:])):
        var = node.var if i == 0 else Var(f"{node.var.name}_{tag}{i}", node.var.dtype)
        body = node.body if i == 0 else _renamed(node.body, f"_{tag}{i}", taken)
        if i:
            body = simplify(substitute(body, {node.var: BinOp("add", var, IntImm(lo))}))
        parts.append(prune_selects(For(var, hi - lo, body, node.kind), {}))
    new = SeqStmt(tuple(parts))
    return verify_primfunc(f.with_body(rewrite(f.body, lambda n: new if isinstance(n, For) and n.var.name == loop
                                               else None)))


@primitive("inline_let")
def inline_let(f: PrimFunc, let_var: str) -> PrimFunc:
    """Replace the let-bound index `let_var` by its value where it is read, so a primitive that
    works on index expressions sees through it (fuse then collapses an input index of the fused
    loops to one linear term):

        let ih = oh; let xv = x[ih*56 + ow*8 + ic]   --inline_let(ih)-->   let xv = x[oh*56 + ow*8 + ic]

    Requires: the value reads no memory (it is the same wherever it is evaluated)."""
    lets = [n for n in walk(f.body) if isinstance(n, LetStmt) and n.var.name == let_var]
    if not lets:
        raise ScheduleError(f"{f.name}: no let {let_var}")
    if any(isinstance(n, Load) for n in walk(lets[0].value)):
        raise ScheduleError(f"{f.name}: let {let_var} reads memory")
    body = rewrite(f.body, lambda n: substitute(n.body, {n.var: n.value})
                   if isinstance(n, LetStmt) and n.var.name == let_var else None, pre=True)
    return verify_primfunc(f.with_body(body))
