"""Loop IR -> C99 text. A table from IR node kind to C, and nothing else: no
simplification, no reordering; what the PrimFunc says is what the C says.

Expressions are fully parenthesized (so -Wparentheses never fires and precedence never
matters) except at the top of a statement, an index or an argument.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from ..escape import c_comment
from ..tir import intrinsics
from ..tir.nodes import (PACKED_INT4, Address, ParamStruct, Allocate, BinOp, Call, Cast, Evaluate, FloatImm, For, IfThenElse, IntImm,
                         LetStmt, Load, PrimFunc, Select, SeqStmt, Store, Var, scratch_layout, walk)

C_TYPES = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t", "float32": "float",
           "float64": "double", "bool": "int", "uint32": "uint32_t", "uint64": "uint64_t"}
_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "shl": "<<", "shr": ">>",
          "and": "&", "or": "|", "xor": "^", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
          "eq": "==", "ne": "!=", "land": "&&", "lor": "||"}
# Non-infix binary ops are helpers from mc_fixedpoint.h, chosen by operand dtype.
_HELPERS = {("min", "int32"): "mc_min_i32", ("max", "int32"): "mc_max_i32",
            ("min", "float32"): "mc_min_f32", ("max", "float32"): "mc_max_f32",
            ("floordiv", "int32"): "mc_floordiv_i32", ("floormod", "int32"): "mc_floormod_i32"}


# The model's state buffer (variable tensors), a static array of model.c.


def float_literal(v: float) -> str:
    """A float32 value as a C literal that reads back to the same float ("%.9g" + f)."""
    v = float(np.float32(v))
    assert np.isfinite(v), f"non-finite float constant {v}"
    s = format(v, ".9g")
    if not any(ch in s for ch in ".e"):
        s += ".0"
    return s + "f"


def int_literal(v: int) -> str:
    # -2^31 is not a C literal (2147483648 does not fit int): write it as an expression.
    return "(-2147483647 - 1)" if v == -2**31 else str(int(v))


def double_literal(v: float) -> str:
    """A double as a C literal that reads back to the same double (17 significant digits)."""
    v = float(v)
    assert np.isfinite(v), f"non-finite double constant {v}"
    s = format(v, ".17g")
    return s if any(ch in s for ch in ".e") else s + ".0"


def int64_literal(v: int) -> str:
    """An int64_t value: LL beyond the int32 range (-2^63 as an expression)."""
    v = int(v)
    if -2**31 < v < 2**31:
        return str(v)
    return "(-9223372036854775807LL - 1)" if v == -2**63 else f"{v}LL"


def _strip(s: str) -> str:
    """Drop one pair of enclosing parentheses, if they enclose the whole expression."""
    if not (s.startswith("(") and s.endswith(")")):
        return s
    depth = 0
    for i, ch in enumerate(s):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and i < len(s) - 1:
            return s
    return s[1:-1]


@dataclass
class _Ctx:
    names: dict[int, str]      # id(Buffer) -> C identifier
    structs: dict = None       # ParamStruct -> the name of its static const definition


class CEmitter:
    """Emits one kernel function. `const_symbols` maps id(const Buffer) -> global array name;
    `state_buffer` is the model's state buffer (model.c's <prefix>_state)."""

    def __init__(self, const_symbols: dict[int, str], state_buffer: str = "mc_state"):
        self.const_symbols = const_symbols
        self.state_buffer = state_buffer

    # -- expressions: one entry per node kind
    def expr(self, e, ctx: _Ctx) -> str:
        return getattr(self, "_e_" + type(e).__name__)(e, ctx)

    def _e_Var(self, e: Var, ctx):
        return e.name

    def _e_IntImm(self, e: IntImm, ctx):
        if e.dtype in ("uint32", "uint64"):
            return f"{e.value}{'u' if e.dtype == 'uint32' else 'ull'}"
        return int_literal(e.value)

    def _e_FloatImm(self, e: FloatImm, ctx):
        return float_literal(e.value)

    def _e_BinOp(self, e: BinOp, ctx):
        a, b = self.expr(e.a, ctx), self.expr(e.b, ctx)
        if e.op in _INFIX:
            return f"({a} {_INFIX[e.op]} {b})"
        return f"{_HELPERS[(e.op, e.a.dtype)]}({_strip(a)}, {_strip(b)})"

    def _e_Cast(self, e: Cast, ctx):
        return f"({C_TYPES[e.dtype]}){self.expr(e.value, ctx)}"

    def _e_Select(self, e: Select, ctx):
        return f"({self.expr(e.cond, ctx)} ? {self.expr(e.true_value, ctx)} : {self.expr(e.false_value, ctx)})"

    def _e_Load(self, e: Load, ctx):
        name = ctx.names[id(e.buffer)]
        return name if not e.buffer.shape else f"{name}[{_strip(self.expr(e.index, ctx))}]"

    def _e_Address(self, e: Address, ctx):
        name = ctx.names[id(e.buffer)]
        if isinstance(e.index, IntImm) and e.index.value == 0:
            return name
        if e.buffer.dtype == PACKED_INT4:   # two values per byte; store_int4 keeps the index even
            if isinstance(e.index, IntImm):
                return f"({name} + {e.index.value // 2})"
            return f"({name} + ({self.expr(e.index, ctx)}) / 2)"
        return f"({name} + {self.expr(e.index, ctx)})"

    def _e_ParamStruct(self, e: ParamStruct, ctx):
        return f"&{ctx.structs[e]}"

    def _e_Call(self, e: Call, ctx):
        return f"{e.name}({', '.join(_strip(self.expr(a, ctx)) for a in e.args)})"

    # -- statements: one entry per node kind, each appends lines
    def stmt(self, s, ctx: _Ctx, ind: str, out: list[str]) -> None:
        getattr(self, "_s_" + type(s).__name__)(s, ctx, ind, out)

    def _s_SeqStmt(self, s: SeqStmt, ctx, ind, out):
        for x in s.stmts:
            self.stmt(x, ctx, ind, out)

    def _s_For(self, s: For, ctx, ind, out):
        if s.kind == "unrolled":
            out.append(f"{ind}#pragma GCC unroll {s.extent}")
        v = s.var.name
        out.append(f"{ind}for (int32_t {v} = 0; {v} < {s.extent}; ++{v}) {{")
        self.stmt(s.body, ctx, ind + "    ", out)
        out.append(f"{ind}}}")

    def _s_Store(self, s: Store, ctx, ind, out):
        name = ctx.names[id(s.buffer)]
        target = name if not s.buffer.shape else f"{name}[{_strip(self.expr(s.index, ctx))}]"
        out.append(f"{ind}{target} = {_strip(self.expr(s.value, ctx))};")

    def _s_Allocate(self, s: Allocate, ctx, ind, out):
        b = s.buffer
        ctx.names[id(b)] = b.name
        dims = "".join(f"[{d}]" for d in b.shape)
        out.append(f"{ind}{C_TYPES[b.dtype]} {b.name}{dims};")
        self.stmt(s.body, ctx, ind, out)

    def _s_LetStmt(self, s: LetStmt, ctx, ind, out):
        out.append(f"{ind}const {C_TYPES[s.var.dtype]} {s.var.name} = {_strip(self.expr(s.value, ctx))};")
        self.stmt(s.body, ctx, ind, out)

    def _s_IfThenElse(self, s: IfThenElse, ctx, ind, out):
        out.append(f"{ind}if ({_strip(self.expr(s.cond, ctx))}) {{")
        self.stmt(s.then_body, ctx, ind + "    ", out)
        if s.else_body is not None:
            out.append(f"{ind}}} else {{")
            self.stmt(s.else_body, ctx, ind + "    ", out)
        out.append(f"{ind}}}")

    def _s_Evaluate(self, s: Evaluate, ctx, ind, out):
        out.append(f"{ind}{self.expr(s.call, ctx)};")

    # -- the function
    def function(self, f: PrimFunc, c_name: str, arena_offsets: dict[str, int], header: list[str],
                 bases: dict[str, str] | None = None) -> str:
        """`static void c_name(uint8_t *arena)`. `arena_offsets` gives the arena offset of every
        arena/scratch buffer by buffer name; `header` lines go in the leading comment. `bases`
        names the array of a buffer placed in another bank's arena (model.c's <prefix>_arena_<bank>),
        which its offset is then into."""
        bases = bases or {}
        written = {id(n.buffer) for n in walk(f.body) if isinstance(n, Store)}
        # An extern kernel writes through the pointer arguments its intrinsic declares written.
        written |= {id(n.call.args[k].buffer) for n in walk(f.body) if isinstance(n, Evaluate)
                    for k in intrinsics.get(n.call.name).writes}
        used = {id(n.buffer) for n in walk(f.body) if isinstance(n, (Load, Store, Address))}
        # Each distinct parameter struct of a micro-kernel call is a static const in flash.
        structs = list(dict.fromkeys(n for n in walk(f.body) if isinstance(n, ParamStruct)))
        ctx = _Ctx(dict(self.const_symbols), {s: f"{c_name}_params{i}" for i, s in enumerate(structs)})
        lines = ["/*"] + [f" * {c_comment(h)}".rstrip() for h in header] + [" */"]
        for s in structs:
            fields = ", ".join(f".{k} = {int_literal(v)}" for k, v in s.fields)
            lines.append(f"static const {s.ctype} {ctx.structs[s]} = {{{fields}}};")
        lines += [f"static void {c_name}(uint8_t *arena)", "{"]
        decls = []
        for b in f.buffers:
            if b.scope == "const" or id(b) not in used:
                continue
            ctx.names[id(b)] = b.name
            qual = "" if id(b) in written else "const "
            ctype = C_TYPES[b.dtype]
            note = f"  /* {c_comment(b.comment)} */" if b.comment else ""
            # State lives in the model's state buffer (model.c's <prefix>_state), not the arena.
            base = self.state_buffer if b.scope == "state" else bases.get(b.name, "arena")
            decls.append(f"    {qual}{ctype} *{b.name} = ({qual}{ctype} *)({base} + {arena_offsets[b.name]}u);{note}")
        if not any("(arena + " in d for d in decls):
            decls.append("    (void)arena;")
        lines += decls
        self.stmt(f.body, ctx, "    ", lines)
        lines.append("}")
        return "\n".join(lines) + "\n"


def kernel_arena_offsets(f: PrimFunc, plan, node_name: str) -> dict[str, int]:
    """Offset of each arena/scratch buffer of `f` in the arena, and of each state buffer in
    the state buffer, under `plan` (see codegen.plan)."""
    scratch, _ = scratch_layout(f)
    out = {}
    for b in f.buffers:
        if b.scope == "arena":
            out[b.name] = plan.offset(b.tensor)
        elif b.scope == "scratch":
            out[b.name] = plan.scratch_offset(node_name) + scratch[b.name]
        elif b.scope == "state":
            out[b.name] = plan.state_offset(b.tensor)
    return out


def kernel_arena_banks(f: PrimFunc, plan, node_name: str) -> dict[str, str]:
    """The bank of each arena/scratch buffer of `f` that `plan` places outside the primary
    arena (memory/banks.py); empty for a one-arena plan."""
    out = {}
    if not getattr(plan, "banks", None):
        return out
    for b in f.buffers:
        if b.scope not in ("arena", "scratch"):
            continue
        bank = plan.bank(b.tensor) if b.scope == "arena" else plan.scratch_bank(node_name)
        if bank:
            out[b.name] = bank
    return out


def schedule_comment(trace) -> list[str]:
    """The kernel comment's schedule lines: one per decision of its trace, in order."""
    decisions = trace.to_json() if trace is not None else []
    if not decisions:
        return ["  schedule: none (the lowering's loop nest as it is)"]
    return ["  schedule:"] + [line for d in decisions for line in _decision_lines(d, "    ")]


def _decision_lines(d: dict, indent: str) -> list[str]:
    if d["primitive"] == "schedule_parts":
        # a fused row group: each part's (op's) own schedule, in the order of the `fused:` line
        return [line for k, part in enumerate(d["args"][0])
                for line in [f"{indent}part {k + 1}:" + ("" if part else " none")]
                + [x for p in part for x in _decision_lines(p, indent + "  ")]]
    return [f"{indent}{d['primitive']}({', '.join(json.dumps(a) for a in d['args'])})"]

