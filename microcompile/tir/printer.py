"""Stable text form of the loop IR (`--dump-tir`), used by golden tests and debugging.

One construct per line, two-space indentation, infix arithmetic fully parenthesized, so a
diff of two dumps shows exactly which decision changed.
"""

from __future__ import annotations

from .nodes import (Address, ParamStruct, Allocate, BinOp, Buffer, Call, Cast, Evaluate, FloatImm, For, IfThenElse, IntImm,
                    LetStmt, Load, PrimFunc, Select, SeqStmt, Store, Var)

_INFIX = {"add": "+", "sub": "-", "mul": "*", "div": "/", "mod": "%", "shl": "<<", "shr": ">>",
          "and": "&", "or": "|", "xor": "^", "lt": "<", "le": "<=", "gt": ">", "ge": ">=",
          "eq": "==", "ne": "!=", "land": "&&", "lor": "||"}


def expr_str(e) -> str:
    if isinstance(e, Var):
        return e.name
    if isinstance(e, IntImm):
        return str(e.value)
    if isinstance(e, FloatImm):
        return repr(float(e.value)) + "f"
    if isinstance(e, BinOp):
        if e.op in _INFIX:
            return f"({expr_str(e.a)} {_INFIX[e.op]} {expr_str(e.b)})"
        return f"{e.op}({expr_str(e.a)}, {expr_str(e.b)})"
    if isinstance(e, Cast):
        return f"{e.dtype}({expr_str(e.value)})"
    if isinstance(e, Select):
        return f"select({expr_str(e.cond)}, {expr_str(e.true_value)}, {expr_str(e.false_value)})"
    if isinstance(e, Load):
        if not e.buffer.shape:
            return e.buffer.name
        return f"{e.buffer.name}[{expr_str(e.index)}]"
    if isinstance(e, Address):
        return f"&{e.buffer.name}[{expr_str(e.index)}]"
    if isinstance(e, ParamStruct):
        return f"&{e.ctype}{{{', '.join(f'{k}={v}' for k, v in e.fields)}}}"
    if isinstance(e, Call):
        return f"{e.name}({', '.join(expr_str(a) for a in e.args)})"
    raise TypeError(f"not an expression: {type(e).__name__}")


def _buffer_str(b: Buffer) -> str:
    where = f" tensor={b.tensor}" if b.tensor else ""
    return f"{b.name}: {b.dtype}{list(b.shape)} {b.scope}{where}"


def _stmt_lines(s, ind: str, out: list[str]) -> None:
    if isinstance(s, SeqStmt):
        for x in s.stmts:
            _stmt_lines(x, ind, out)
    elif isinstance(s, For):
        kind = "" if s.kind == "serial" else f" {s.kind}"
        out.append(f"{ind}for {s.var.name} in 0..{s.extent}{kind} {{")
        _stmt_lines(s.body, ind + "  ", out)
        out.append(f"{ind}}}")
    elif isinstance(s, Store):
        target = s.buffer.name if not s.buffer.shape else f"{s.buffer.name}[{expr_str(s.index)}]"
        out.append(f"{ind}{target} = {expr_str(s.value)}")
    elif isinstance(s, Allocate):
        out.append(f"{ind}alloc {_buffer_str(s.buffer)}")
        _stmt_lines(s.body, ind, out)
    elif isinstance(s, LetStmt):
        out.append(f"{ind}let {s.var.name}: {s.var.dtype} = {expr_str(s.value)}")
        _stmt_lines(s.body, ind, out)
    elif isinstance(s, IfThenElse):
        out.append(f"{ind}if {expr_str(s.cond)} {{")
        _stmt_lines(s.then_body, ind + "  ", out)
        if s.else_body is not None:
            out.append(f"{ind}}} else {{")
            _stmt_lines(s.else_body, ind + "  ", out)
        out.append(f"{ind}}}")
    elif isinstance(s, Evaluate):
        out.append(f"{ind}{expr_str(s.call)}")
    else:
        raise TypeError(f"not a statement: {type(s).__name__}")


def tir_str(f: PrimFunc) -> str:
    """The whole PrimFunc as text: signature, attributes (sorted), body."""
    lines = [f"primfunc {f.name} {{"]
    for key in sorted(f.attrs):
        lines.append(f"  # {key} = {f.attrs[key]}")
    for b in f.buffers:
        lines.append(f"  buffer {_buffer_str(b)}")
    _stmt_lines(f.body, "  ", lines)
    lines.append("}")
    return "\n".join(lines) + "\n"
