"""tabulate: replace a function of one int8 value by a 256-entry table computed at compile time.

    y[i] = ... mc_mul_by_qm_smaller_than_one_exp((i32(a[i]) + 3) << 20, 1518500250, -2) ...
    --tabulate(a, rescale_a)-->
    y[i] = ... rescale_a[i32(a[i]) + 128] ...      rescale_a: int32[256] const, entry v + 128
                                                   holds the expression at a[i] = v

The expression replaced is the largest int32 one that reads nothing but that one element of
`a` (and immediates); the loop-IR interpreter evaluates it for every int8 value, so the
table is exactly what the code computed. One load from flash then replaces the arithmetic
(two multiplies and roundings per element for an int8 ADD), at 1 KiB of flash per table.
"""

from __future__ import annotations

import numpy as np

from ..tir import intrinsics
from ..tir.interp import compile_expr
from ..tir.intrinsics_elementwise import ADD_TABLES_MVE_KERNEL, ADD_TABLES_PARAMS
from ..tir.nodes import (Address, BinOp, Buffer, Call, Cast, Evaluate, For, IntImm, Load, PrimFunc, Select, Store, Var,
                         rewrite, walk)
from ..tir.verify import verify_primfunc
from .knobs import declare_knob
from .primitives import ScheduleError, primitive
from .epilogue import output_stage
from .tensorize import affine, tensor_intrin
from .trace import Schedule
from .variants import kernel_set


@primitive("tabulate")
def tabulate(f: PrimFunc, operand: str, table: str) -> PrimFunc:
    """Replace every largest int32 expression of one int8 element of buffer `operand` by a
    load from a new 256-entry constant `table` (see the module docstring)."""
    buf = next((b for b in f.buffers if b.name == operand), None)
    if buf is None or buf.dtype != "int8":
        raise ScheduleError(f"{f.name}: no int8 buffer named {operand}")
    if any(b.name == table for b in f.buffers):
        raise ScheduleError(f"{f.name}: a buffer named {table} exists already")
    found: dict = {}

    def fn(n):
        if not isinstance(n, (BinOp, Call, Cast, Select)) or n.dtype != "int32":
            return None
        loads = [m for m in walk(n) if isinstance(m, Load) and m.buffer is buf]
        if not loads or any(m != loads[0] for m in loads) or not _pure(n, loads[0]):
            return None
        key = _shape_key(n, loads[0])
        found.setdefault(key, (n, loads[0]))
        return Load(_table_buffer(found, key, table, buf), BinOp("add", Cast("int32", loads[0]), IntImm(128)))

    tables: dict = {}

    def _table_buffer(found, key, name, buf):
        if key not in tables:
            expr, load = found[key]
            values = _evaluate(expr, load)
            if values.min() < -2**31 or values.max() >= 2**31:
                raise ScheduleError(f"{f.name}: tabulated values overflow int32")
            tables[key] = Buffer(name if not tables else f"{name}{len(tables)}", "int32", (256,), "const",
                                 data=values.astype(np.int32), comment=f"{f.name}: {operand}-dependent term for "
                                                                         f"{operand} = -128..127")
        return tables[key]

    body = rewrite(f.body, fn, pre=True)
    if not tables:
        raise ScheduleError(f"{f.name}: no int32 expression of one element of {operand} to tabulate")
    return verify_primfunc(PrimFunc(f.name, (*f.buffers, *tables.values()), body, dict(f.attrs)))


def _pure(e, load: Load) -> bool:
    """`e` varies only through `load`: every Var it mentions is inside that load's index."""
    inside = {id(n) for n in walk(load)}
    return all(not isinstance(n, (Var, Load, Address)) or id(n) in inside for n in walk(e))


def _shape_key(e, load: Load):
    """The expression with the load abstracted: equal keys compute equal tables."""
    return rewrite(e, lambda n: IntImm(0, "int8") if n is load or n == load else None)


def _evaluate(e, load: Load) -> np.ndarray:
    """`e` at load = -128..127: compiled once, with the load as a variable."""
    v = Var("__tabulated", "int8")
    run = compile_expr(rewrite(e, lambda n: v if n == load else None))
    return np.array([run({v.name: x}, {}) for x in range(-128, 128)], np.int64)


TABLES_DOMAIN = declare_knob("tables", (0, 1), "int8 ADD/SUB: input rescales as 256-entry tables (2 KiB of flash); "
                             "int8 softmax: exps as a 256-entry table (1 KiB)")


def schedule_add_tables(func: PrimFunc, target=None, wide: bool | None = None) -> Schedule | None:
    """An int8 ADD or SUB (ADD's rescaling with a difference) with each input's rescale
    tabulated (2 KiB of flash, two multiplies and roundings fewer per element), unless `wide`
    is False (no flash to spare)."""
    if func.attrs.get("op") not in ("add", "sub") or wide is False:
        return None
    if not any(isinstance(n, Call) and n.name == "mc_mul_by_qm_smaller_than_one_exp" for n in walk(func.body)):
        return None
    sch = Schedule(func)
    try:
        sch.knob("tables", 1)
        for operand in ("a", "b"):
            sch.apply("tabulate", operand, f"rescale_{operand}")
    except ScheduleError:
        return None
    if kernel_set(target) == "mve":
        # Helium: an ADD's element loop as one call of the vector kernel, where the nest is one
        # loop over both inputs' elements alike (no broadcast)
        loops = [n for n in walk(sch.func.body) if isinstance(n, For)]
        if len(loops) == 1:
            try:
                sch.tensorize(loops[0].var.name, ADD_TABLES_MVE_KERNEL)
            except ScheduleError:
                pass
    return sch


def _match_add_tables(loop: For) -> dict | None:
    """for i { y[Y + i] = int8(clamp(mc_mul_by_qm_pos_rshift(ta[a[A + i] + 128] + tb[b[B + i] + 128],
    M, S) + off, lo, hi)) }, M and S immediates, ta and tb 256-entry int32 constants. (A SUB's
    lowering never proves the cheap form's domain, so only ADD reaches it.)"""
    body, v = loop.body, loop.var.name
    if not isinstance(body, Store) or body.buffer.dtype != "int8":
        return None
    call = next((n for n in walk(body.value) if isinstance(n, Call) and n.name == "mc_mul_by_qm_pos_rshift"), None)
    if call is None or not all(isinstance(x, IntImm) for x in call.args[1:]) \
            or not (isinstance(call.args[0], BinOp) and call.args[0].op == "add"):
        return None
    sides = []
    for t in (call.args[0].a, call.args[0].b):
        if not (isinstance(t, Load) and t.buffer.dtype == "int32" and t.buffer.scope == "const"
                and t.buffer.shape == (256,) and isinstance(t.index, BinOp) and t.index.op == "add"
                and t.index.b == IntImm(128) and isinstance(t.index.a, Cast) and isinstance(t.index.a.value, Load)):
            return None
        x = t.index.a.value
        at = affine(x.index, {v})
        if x.buffer.dtype != "int8" or at is None or at[0] != {v: 1}:
            return None
        sides.append((t.buffer, x.buffer, at[1]))
    yt = affine(body.index, {v})
    if yt is None or yt[0] != {v: 1}:
        return None
    out = output_stage(body.value, call)
    if out is None:
        return None
    (ta, a, abase), (tb, b, bbase) = sides
    return {"y": body.buffer, "ybase": yt[1], "a": a, "abase": abase, "b": b, "bbase": bbase, "ta": ta, "tb": tb,
            "n": loop.extent, "mult": call.args[1].value,
            "rshift": call.args[2].value, **out}


def _emit_add_tables(b: dict):
    params = ADD_TABLES_PARAMS(n=b["n"], mult=b["mult"], rshift=b["rshift"], out_offset=b["off"],
                               act_min=b["lo"], act_max=b["hi"])
    args = (Address(b["y"], b["ybase"]), Address(b["a"], b["abase"]), Address(b["b"], b["bbase"]),
            Address(b["ta"], IntImm(0)), Address(b["tb"], IntImm(0)), params)
    return Evaluate(Call(ADD_TABLES_MVE_KERNEL, args, "void"))


tensor_intrin(ADD_TABLES_MVE_KERNEL, _emit_add_tables,
              doc="int8 y = requantize(ta[a] + tb[b]), four elements per vector (mve)")(_match_add_tables)


# The int8 softmax kernels and their exp-table twins (runtime_c/include/mc_softmax.h).
_SOFTMAX_TABLE_KERNELS = {"mc_softmax_s8": "mc_softmax_s8_table", "mc_softmax_s8_s16": "mc_softmax_s8_s16_table"}


@primitive("softmax_exp_table")
def softmax_exp_table(f: PrimFunc, table: str) -> PrimFunc:
    """Swap an int8 softmax's micro-kernel for its twin that looks the exp of each difference
    up in a 256-entry constant `table` (1 KiB: every difference two int8 values can have)
    instead of computing gemmlowp's fixed-point exp twice per element."""
    calls = [n for n in walk(f.body) if isinstance(n, Call) and n.name in _SOFTMAX_TABLE_KERNELS]
    if len(calls) != 1:
        raise ScheduleError(f"{f.name}: no int8 softmax kernel call to give an exp table")
    call = calls[0]
    params = dict(call.args[-1].fields)
    data = intrinsics.softmax_exp_table(params["input_multiplier"], params["input_left_shift"])
    buf = Buffer(table, "int32", (256,), "const", data=data,
                 comment=f"{f.name}: Q0.31 exp of the scaled difference -0..-255")
    new = Call(_SOFTMAX_TABLE_KERNELS[call.name], (*call.args[:2], Address(buf, IntImm(0)), call.args[-1]), "void")
    body = rewrite(f.body, lambda n: new if n is call else None)
    return verify_primfunc(PrimFunc(f.name, (*f.buffers, buf), body, dict(f.attrs)))


def schedule_softmax_table(func: PrimFunc, target=None, wide: bool | None = None) -> Schedule | None:
    """An int8 softmax with its exps looked up (1 KiB of flash, about 400 instructions fewer per
    element), unless `wide` is False (no flash to spare)."""
    if func.attrs.get("op") != "softmax" or wide is False:
        return None
    if not any(isinstance(n, Call) and n.name in _SOFTMAX_TABLE_KERNELS for n in walk(func.body)):
        return None
    sch = Schedule(func)
    sch.knob("tables", 1)
    sch.apply("softmax_exp_table", "exp_table")
    return sch


TABLE_SCHEDULES = (schedule_add_tables, schedule_softmax_table)
