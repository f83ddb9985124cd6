"""Loop IR: the TIR-like program a kernel is lowered to, scheduled in, and emitted from.

Plain frozen records, as TVM's TIR but much smaller:

  expressions  Var, IntImm, FloatImm, BinOp, Cast, Select, Load, Address, ParamStruct, Call
  statements   For, Store, Allocate, LetStmt, IfThenElse, SeqStmt, Evaluate
  containers   Buffer (a flat, typed region: arena view, flash constant, scratch or local), PrimFunc

Semantics (the loop-IR interpreter in `tir_interp.py` is their executable definition):
  * integers are two's-complement int32 (values wrap; the lowering keeps them in range so
    the C, where signed overflow is undefined, agrees);
  * `div`/`mod` truncate toward zero, as C; `floordiv`/`floormod` round toward -inf;
  * `Select` evaluates only the chosen arm (C's `?:`), so it may guard a Load;
  * buffers are flat: `Load(buf, index)` reads element `index` of `buf` (row-major over
    `buf.shape`); `buf.at(i, j, ...)` builds that index;
  * `For(var, extent, ...)` runs var = 0 .. extent-1.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Union

import numpy as np

from ..ir.budget import elements
from ..ir.int4 import packed_bytes

SCOPES = ("arena", "const", "scratch", "local", "state")
# int64 / float64: only as the element type of constant buffers passed to micro-kernels (16x8
# biases, and the double scales of the int16 fully connected's requantization).
SCALAR_DTYPES = ("int8", "int16", "int32", "int64", "float32", "float64", "bool", "uint32", "uint64")
FOR_KINDS = ("serial", "unrolled")

ARITH_OPS = ("add", "sub", "mul", "div", "mod", "floordiv", "floormod", "min", "max",
             "shl", "shr", "and", "or", "xor")
CMP_OPS = ("lt", "le", "gt", "ge", "eq", "ne")
LOGIC_OPS = ("land", "lor")
BIN_OPS = ARITH_OPS + CMP_OPS + LOGIC_OPS


# ---------------------------------------------------------------- expressions

class Expr:
    """Base of expressions. Operators build BinOps so lowering reads like the math."""

    dtype: str

    def __add__(self, o): return BinOp("add", self, const(o, self.dtype))
    def __radd__(self, o): return BinOp("add", const(o, self.dtype), self)
    def __sub__(self, o): return BinOp("sub", self, const(o, self.dtype))
    def __rsub__(self, o): return BinOp("sub", const(o, self.dtype), self)
    def __mul__(self, o): return BinOp("mul", self, const(o, self.dtype))
    def __rmul__(self, o): return BinOp("mul", const(o, self.dtype), self)


@dataclass(frozen=True)
class Var(Expr):
    name: str
    dtype: str = "int32"


@dataclass(frozen=True)
class IntImm(Expr):
    value: int
    dtype: str = "int32"


@dataclass(frozen=True)
class FloatImm(Expr):
    value: float
    dtype: str = "float32"


@dataclass(frozen=True)
class BinOp(Expr):
    op: str
    a: Expr
    b: Expr

    @property
    def dtype(self) -> str:
        return "bool" if self.op in CMP_OPS + LOGIC_OPS else self.a.dtype


@dataclass(frozen=True)
class Cast(Expr):
    dtype: str
    value: Expr


@dataclass(frozen=True)
class Select(Expr):
    cond: Expr
    true_value: Expr
    false_value: Expr

    @property
    def dtype(self) -> str:
        return self.true_value.dtype


@dataclass(frozen=True)
class Load(Expr):
    buffer: Buffer
    index: Expr

    @property
    def dtype(self) -> str:
        return self.buffer.dtype


@dataclass(frozen=True)
class Address(Expr):
    """Pointer to element `index` of `buffer`: an argument of an extern micro-kernel call."""

    buffer: Buffer
    index: Expr
    dtype: str = "handle"


@dataclass(frozen=True)
class ParamStruct(Expr):
    """The address of a `static const` parameter struct of compile-time integers: an
    argument of an extern micro-kernel, the way CMSIS-NN passes cmsis_nn_conv_params.
    `ctype` names the C struct (declared in the kernel's header, and as a StructType in
    tir/intrinsics.py); `fields` are its (name, value) pairs in declaration order. It lives
    in flash, so it costs no RAM, and the C names every field where it is set."""

    ctype: str
    fields: tuple[tuple[str, int], ...]

    @property
    def dtype(self) -> str:
        return f"struct {self.ctype}"

    def as_dict(self) -> dict[str, int]:
        return dict(self.fields)


@dataclass(frozen=True)
class Call(Expr):
    """A call of a named intrinsic (see `intrinsics.py`): pure helpers such as the fixed-point
    requantization, or, under `Evaluate`, an extern micro-kernel from runtime_c/kernels."""

    name: str
    args: tuple[Expr, ...]
    dtype: str


# ---------------------------------------------------------------- statements

class Stmt:
    """Base of statements."""


@dataclass(frozen=True)
class For(Stmt):
    var: Var
    extent: int
    body: Stmt
    kind: str = "serial"


@dataclass(frozen=True)
class Store(Stmt):
    buffer: Buffer
    index: Expr
    value: Expr


@dataclass(frozen=True)
class Allocate(Stmt):
    """A `local` buffer (a register scalar when its shape is ()) that lives for `body`."""

    buffer: Buffer
    body: Stmt


@dataclass(frozen=True)
class LetStmt(Stmt):
    """Binds an immutable scalar for `body`: `const T var = value;` in C."""

    var: Var
    value: Expr
    body: Stmt


@dataclass(frozen=True)
class IfThenElse(Stmt):
    cond: Expr
    then_body: Stmt
    else_body: Stmt | None = None


@dataclass(frozen=True)
class SeqStmt(Stmt):
    stmts: tuple[Stmt, ...]


@dataclass(frozen=True)
class Evaluate(Stmt):
    call: Call


# ---------------------------------------------------------------- containers

@dataclass(frozen=True, eq=False)
class Buffer:
    """A flat typed region. Identity is the buffer: two Buffers are equal only if the same object.

    scope:  "arena"   an activation in the arena; `tensor` names the graph tensor (offset from
                      the memory plan)
            "const"   a constant in flash; `data` holds its values
            "scratch" the kernel's scratch space in the arena (offset from the memory plan)
            "state"   a variable (persistent) tensor in the model's state buffer, which
                      outlives every inference; `tensor` names it (offset from the memory plan)
            "local"   a stack/register variable; shape () is a scalar
    `comment` is printed next to the declaration (e.g. "conv1 filter [8,3,3,3]").
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    scope: str
    data: np.ndarray | None = None
    tensor: str | None = None
    comment: str = ""

    @property
    def size(self) -> int:
        return elements(self.shape) if self.shape else 1

    @property
    def nbytes(self) -> int:
        if self.dtype == PACKED_INT4:
            return packed_bytes(self.size)
        return self.size * DTYPE_BYTES[self.dtype]

    def at(self, *idx) -> Expr:
        """Flat row-major index of element `idx`; constant-folds zero terms and unit strides."""
        assert len(idx) == len(self.shape), f"{self.name}: {len(idx)} indices for shape {self.shape}"
        flat: Expr | None = None
        stride = 1
        for i, dim in reversed(list(zip(idx, self.shape))):
            term = None if (isinstance(i, int) and i == 0) else mul(const(i), stride)
            if term is not None:
                flat = term if flat is None else add(term, flat)
            stride *= dim
        return flat if flat is not None else IntImm(0)

    def load(self, *idx) -> Load:
        return Load(self, self.at(*idx) if self.shape else IntImm(0))

    def store(self, value: Expr, *idx) -> Store:
        return Store(self, self.at(*idx) if self.shape else IntImm(0), value)


DTYPE_BYTES = {"int8": 1, "int16": 2, "int32": 4, "int64": 8, "float32": 4, "float64": 8, "bool": 1, "uint32": 4,
               "uint64": 8}
# The numpy dtype of a buffer's elements (constants' data, interpreter arrays).
# A constant may be stored as packed int4 (two values per byte, ir/int4.py): `data` holds its
# values as int8, the flash holds the packed bytes, and no Load reads it: only an extern
# micro-kernel that unpacks it (mc_unpack_s4_s8, the schedule primitive store_int4).
PACKED_INT4 = "int4"
NP_BUFFER_DTYPES = {"int4": np.int8, "int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64,
                    "float32": np.float32, "float64": np.float64, "uint32": np.uint32, "uint64": np.uint64}


@dataclass(frozen=True, eq=False)
class PrimFunc:
    """One kernel. `buffers` lists every non-local buffer the body touches (arena, const,
    scratch), in a stable order. `attrs` carries what codegen prints in the comment header:
    "layer" (node name), "op", "inputs"/"outputs" (lists of "name shape dtype quant" strings),
    "macs"; and "scratch_bytes" when the kernel needs scratch space."""

    name: str
    buffers: tuple[Buffer, ...]
    body: Stmt
    attrs: dict = field(default_factory=dict)

    @property
    def scratch_bytes(self) -> int:
        """Bytes of arena scratch this kernel needs (ask the memory planner for them)."""
        return scratch_layout(self)[1]

    def with_body(self, body: Stmt) -> PrimFunc:
        return PrimFunc(self.name, self.buffers, body, dict(self.attrs))


# ---------------------------------------------------------------- builders

def const(v, dtype: str = "int32") -> Expr:
    """Wrap a Python number as an immediate; expressions pass through."""
    if isinstance(v, Expr):
        return v
    if isinstance(v, (float, np.floating)) or dtype == "float32":
        return FloatImm(float(v))
    return IntImm(int(v), dtype)


def _imm(e: Expr):
    return e.value if isinstance(e, (IntImm, FloatImm)) else None


def add(a, b) -> Expr:
    a, b = const(a), const(b)
    if _imm(a) == 0 and isinstance(a, IntImm):
        return b
    if _imm(b) == 0 and isinstance(b, IntImm):
        return a
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return IntImm(a.value + b.value)
    if isinstance(b, IntImm) and b.value < 0:
        return BinOp("sub", a, IntImm(-b.value, b.dtype))
    return BinOp("add", a, b)


def sub(a, b) -> Expr:
    a, b = const(a), const(b)
    if isinstance(b, IntImm) and b.value == 0:
        return a
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return IntImm(a.value - b.value)
    return BinOp("sub", a, b)


def mul(a, b) -> Expr:
    a, b = const(a), const(b)
    if isinstance(a, IntImm) and isinstance(b, IntImm):
        return IntImm(a.value * b.value)
    if isinstance(a, IntImm) and a.value == 1:
        return b
    if isinstance(b, IntImm) and b.value == 1:
        return a
    return BinOp("mul", a, b)


def binop(op: str, a, b) -> BinOp:
    return BinOp(op, const(a), const(b))


def cast(dtype: str, e: Expr) -> Expr:
    return e if e.dtype == dtype else Cast(dtype, e)


def seq(*stmts: Stmt | None) -> Stmt:
    """SeqStmt of the non-None statements, flattened; a single statement stands alone."""
    flat: list[Stmt] = []
    for s in stmts:
        if s is None:
            continue
        flat.extend(s.stmts if isinstance(s, SeqStmt) else [s])
    return flat[0] if len(flat) == 1 else SeqStmt(tuple(flat))


def loops(vars_extents: list[tuple[Var, int]], body: Stmt) -> Stmt:
    """Nest serial For loops, outermost first. A loop of extent 1 is not made: its variable
    is replaced by 0 and the indices simplified."""
    for v, n in reversed(vars_extents):
        body = For(v, n, body) if n > 1 else simplify(substitute(body, {v: IntImm(0)}))
    return body


def all_of(conds: list[Expr]) -> Expr | None:
    """Conjunction of `conds` (None when empty: no condition)."""
    out: Expr | None = None
    for c in conds:
        out = c if out is None else BinOp("land", out, c)
    return out


Node = Union[Expr, Stmt]


# ---------------------------------------------------------------- traversal

_FIELD_NAMES: dict[type, tuple[str, ...]] = {}
_NODE = (Expr, Stmt)


def _field_names(n: Node) -> tuple[str, ...]:
    """The dataclass field names of `n`'s class, looked up once per class (dataclasses.fields
    per node was a tenth of a compile)."""
    names = _FIELD_NAMES.get(type(n))
    if names is None:
        names = _FIELD_NAMES[type(n)] = tuple(f.name for f in fields(n))
    return names


def children(n: Node) -> list[Node]:
    """Direct sub-expressions/statements of `n`, in field order (Buffers are leaves)."""
    out: list[Node] = []
    for name in _field_names(n):
        v = getattr(n, name)
        if isinstance(v, _NODE):
            out.append(v)
        elif isinstance(v, tuple):
            out.extend(x for x in v if isinstance(x, _NODE))
    return out


def walk(n: Node):
    """Pre-order iterator over `n` and all nodes below it (a stack, not nested generators,
    whose cost grows with the depth)."""
    stack = [n]
    while stack:
        n = stack.pop()
        yield n
        stack.extend(reversed(children(n)))


def replace_unique(n: Node, match, fn, nested: bool = True) -> Node | None:
    """`n` with its one node for which `match` holds replaced by `fn(node)` (None from fn: kept),
    rebuilding only the nodes on the path to it (rewrite rebuilds and visits every node: most of a
    schedule's time went there). None when no node or more than one matches (the caller then
    rewrites). `nested=False`: the caller knows no match lies inside another (a loop's name is
    bound once in a verified PrimFunc), so a match's subtree is not searched."""
    seen: list = [(n, -1, "", None)]         # (node, its parent's entry, field, index in a tuple field)
    stack, found = [0], None
    while stack:
        at = stack.pop()
        node = seen[at][0]
        if match(node):
            if found is not None:
                return None
            found = at
            if not nested:
                continue
        for name in _field_names(node):
            v = getattr(node, name)
            if isinstance(v, _NODE):
                stack.append(len(seen))
                seen.append((v, at, name, None))
            elif isinstance(v, tuple):
                for i, x in enumerate(v):
                    if isinstance(x, _NODE):
                        stack.append(len(seen))
                        seen.append((x, at, name, i))
    if found is None:
        return None
    node, up, name, index = seen[found]
    new = fn(node)
    if new is None or new is node:
        return n
    while up >= 0:
        parent = seen[up][0]
        if index is None:
            new = replace(parent, **{name: new})
        else:
            items = getattr(parent, name)
            new = replace(parent, **{name: items[:index] + (new,) + items[index + 1:]})
        _, up, name, index = seen[up]
    return new


def rewrite(n: Node, fn, pre: bool = False) -> Node:
    """Post-order rebuild: children first, then `fn(node)` returns a replacement or None (keep).
    `pre`: `fn` sees each node before its children, and a replacement is not descended into
    (the largest matching subtree is replaced)."""
    if pre:
        out = fn(n)
        if out is not None:
            return out
    changes = {}
    for name in _field_names(n):
        v = getattr(n, name)
        if isinstance(v, _NODE):
            nv = rewrite(v, fn, pre)
            if nv is not v:
                changes[name] = nv
        elif isinstance(v, tuple) and any(isinstance(x, _NODE) for x in v):
            nv = tuple(rewrite(x, fn, pre) if isinstance(x, _NODE) else x for x in v)
            if any(a is not b for a, b in zip(nv, v)):
                changes[name] = nv
    if changes:
        n = replace(n, **changes)
    if pre:
        return n
    out = fn(n)
    return n if out is None else out


def substitute(n: Node, mapping: dict[Var, Expr]) -> Node:
    """Replace free uses of the Vars in `mapping` (loop vars are unique, so no capture)."""
    return rewrite(n, lambda x: mapping.get(x) if isinstance(x, Var) else None)


SCRATCH_ALIGN = 16


def scratch_layout(f: PrimFunc) -> tuple[dict[str, int], int]:
    """Offsets of `f`'s scratch buffers inside its one scratch region (16-byte aligned, in
    buffer order) and the region's size: the bytes to request from the memory planner for
    this kernel, and where codegen places each buffer. The groups of the attribute
    `scratch_union` (the parts of a patch stage, which run one after another) share one
    region after the other buffers, each group laid out in order from its start."""
    def size(b: Buffer) -> int:
        return -(-b.nbytes // SCRATCH_ALIGN) * SCRATCH_ALIGN

    groups = f.attrs.get("scratch_union", ())
    grouped = {name for g in groups for name in g}
    offsets, end = {}, 0
    for b in f.buffers:
        if b.scope == "scratch" and b.name not in grouped:
            offsets[b.name] = end
            end += size(b)
    by_name = {b.name: b for b in f.buffers if b.scope == "scratch"}
    union = 0
    for g in groups:
        at = end
        for name in g:
            offsets[name] = at
            at += size(by_name[name])
        union = max(union, at - end)
    return offsets, end + union


def _fold(n: Node) -> Node | None:
    if not isinstance(n, BinOp) or n.op not in ("add", "sub", "mul") or n.dtype != "int32":
        return None
    a, b = _imm(n.a) if isinstance(n.a, IntImm) else None, _imm(n.b) if isinstance(n.b, IntImm) else None
    if a is not None and b is not None:
        return IntImm({"add": a + b, "sub": a - b, "mul": a * b}[n.op])
    if n.op == "mul" and 0 in (a, b):
        return IntImm(0)
    if (n.op == "mul" and a == 1) or (n.op == "add" and a == 0):
        return n.b
    if (n.op in ("mul",) and b == 1) or (n.op in ("add", "sub") and b == 0):
        return n.a
    return None


def simplify(n: Node) -> Node:
    """Fold int32 add/sub/mul of immediates and drop x+0, x-0, x*1; x*0 becomes 0."""
    return rewrite(n, _fold)
