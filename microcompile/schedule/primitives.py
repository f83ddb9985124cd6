"""Schedule primitives: PrimFunc -> PrimFunc rewrites that keep the computation the same.

Loops are named by their loop variable (names are unique in a PrimFunc). Each primitive
checks what it requires and raises ScheduleError otherwise.
"""

from __future__ import annotations

from ..errors import shown
from ..tir.nodes import (Buffer, For, IfThenElse, IntImm, LetStmt, PrimFunc, Stmt, Var, add, binop, mul, replace_unique,
                         rewrite, substitute,
                         walk)
from ..tir.verify import verify_primfunc
from .knobs import KNOBS

# primitive name -> fn(PrimFunc, *args) -> PrimFunc. Filled with @primitive here and by the
# other modules of this package; a Trace replays its decisions through this table.
PRIMITIVES: dict = {}


def primitive(name: str):
    """Register the decorated function as the schedule primitive `name`."""
    def register(fn):
        assert name not in PRIMITIVES, f"schedule primitive {name} registered twice"
        PRIMITIVES[name] = fn
        return fn
    return register



class ScheduleError(ValueError):
    """A primitive was applied where its requirements do not hold."""


def weights_name(buffer: Buffer) -> str:
    """How a budget message names a constant being repacked: its comment names the layer
    ("conv1 filter [8, 3, 3, 3] int8")."""
    return f"the weights {shown(buffer.comment or buffer.name)!r}"


def find_loop(f: PrimFunc, name: str) -> For:
    for n in walk(f.body):
        if isinstance(n, For) and n.var.name == name:
            return n
    raise ScheduleError(f"{f.name}: no loop named {name}")


def replace_loop(f: PrimFunc, name: str, fn) -> PrimFunc:
    def named(n) -> bool:
        return isinstance(n, For) and n.var.name == name

    body = replace_unique(f.body, named, fn, nested=False)     # names are bound once (tir/verify.py)
    if body is None:                 # no such loop (find_loop says so) or several of that name
        find_loop(f, name)
        body = rewrite(f.body, lambda n: fn(n) if named(n) else None)
    return verify_primfunc(f.with_body(body))


@primitive("knob")
def knob(f: PrimFunc, name: str, value) -> PrimFunc:
    """Record the value a schedule chose for one of its knobs (a named decision with a declared
    domain, e.g. knob("col_bytes_max", 1024)). The function is unchanged: the primitives that
    follow carry out the choice, and the trace keeps it for the report and the tuner.

        B   --knob(col_bytes_max, 1024)-->   B"""
    if not isinstance(name, str) or not isinstance(value, (int, str)):
        raise ScheduleError(f"knob needs a name and an int or string value, got {name!r}={value!r}")
    if name not in KNOBS:
        raise ScheduleError(f"knob {name!r} is not declared (schedule/knobs.py's declare_knob)")
    if value not in KNOBS[name].domain:
        raise ScheduleError(f"knob {name}={value!r} outside its domain {KNOBS[name].domain}")
    return f


@primitive("split")
def split(f: PrimFunc, loop: str, factor: int) -> PrimFunc:
    """Split `loop` (extent n) into `loop_o` (ceil(n/factor)) and `loop_i` (factor).

        for i in 0..10 { B(i) }   --split(i, 4)-->
        for i_o in 0..3 { for i_i in 0..4 { if (i_o*4 + i_i) < 10 { B(i_o*4 + i_i) } } }

    The guard is only emitted when factor does not divide n."""
    if factor < 1:
        raise ScheduleError(f"split factor {factor} < 1")
    names = {n.var.name for n in walk(f.body) if isinstance(n, (For, LetStmt))}
    if f"{loop}_o" in names or f"{loop}_i" in names:
        raise ScheduleError(f"{f.name}: split of {loop}: the names {loop}_o, {loop}_i are taken")

    def do(loop_node: For) -> Stmt:
        n = loop_node.extent
        outer, inner = Var(f"{loop}_o"), Var(f"{loop}_i")
        fused = add(mul(outer, factor), inner)
        body = substitute(loop_node.body, {loop_node.var: fused})
        if n % factor:
            body = IfThenElse(binop("lt", fused, IntImm(n)), body)
        return For(outer, -(-n // factor), For(inner, factor, body, loop_node.kind))

    return replace_loop(f, loop, do)


@primitive("reorder")
def reorder(f: PrimFunc, *order: str) -> PrimFunc:
    """Permute perfectly nested loops: the named loops take the positions they occupy in the
    nest, in the given order; loops of the nest that are not named stay where they are.

        for i { for j { B } }   --reorder(j, i)-->   for j { for i { B } }

    Requires the named loops to lie on one chain of directly nested For statements."""
    if len(set(order)) != len(order) or not order:
        raise ScheduleError(f"reorder needs distinct loop names, got {order}")
    top = next((n for n in walk(f.body) if isinstance(n, For) and n.var.name in order), None)
    if top is None:
        raise ScheduleError(f"{f.name}: none of {order} is a loop")
    chain: list[For] = []
    node: Stmt = top
    while isinstance(node, For) and not set(order) <= {c.var.name for c in chain}:
        chain.append(node)
        node = node.body
    names = [c.var.name for c in chain]
    if not set(order) <= set(names):
        raise ScheduleError(f"{f.name}: loops {order} are not perfectly nested (nest: {names})")
    by_name = {c.var.name: c for c in chain}
    slots = iter(order)
    new_chain = [by_name[next(slots)] if c.var.name in order else c for c in chain]
    body = chain[-1].body
    for c in reversed(new_chain):
        body = For(c.var, c.extent, body, c.kind)
    return replace_loop(f, top.var.name, lambda _: body)


@primitive("unroll")
def unroll(f: PrimFunc, loop: str) -> PrimFunc:
    """Mark `loop` unrolled: the emitter asks the C compiler to unroll it fully
    (`#pragma GCC unroll <extent>`). Semantics are unchanged."""
    return replace_loop(f, loop, lambda n: For(n.var, n.extent, n.body, "unrolled"))
