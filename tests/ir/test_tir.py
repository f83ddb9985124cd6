"""Loop IR: builders, printer, verifier and the interpreter's C semantics."""

from __future__ import annotations

import numpy as np
import pytest

from microcompile.tir.nodes import (Allocate, BinOp, Buffer, Cast, For, IfThenElse, IntImm, Load, PrimFunc, Select,
                                    Store, Var, binop, loops, seq, simplify, substitute)
from microcompile.tir.interp import run_primfunc
from microcompile.tir.printer import tir_str
from microcompile.tir.verify import TirVerifyError, verify_primfunc


def _row_sum() -> PrimFunc:
    """y[i] = sum_j x[i, j] over a 3x4 int8 input, accumulated in int32."""
    x = Buffer("x", "int8", (3, 4), "arena", tensor="x")
    y = Buffer("y", "int32", (3,), "arena", tensor="y")
    acc = Buffer("acc", "int32", (), "local")
    i, j = Var("i"), Var("j")
    body = loops([(i, 3)], Allocate(acc, seq(acc.store(IntImm(0)),
                                             loops([(j, 4)], acc.store(acc.load() + Cast("int32", x.load(i, j)))),
                                             y.store(acc.load(), i))))
    return verify_primfunc(PrimFunc("row_sum", (x, y), body, {"layer": "t"}))


def test_printer_is_stable():
    assert tir_str(_row_sum()) == """\
primfunc row_sum {
  # layer = t
  buffer x: int8[3, 4] arena tensor=x
  buffer y: int32[3] arena tensor=y
  for i in 0..3 {
    alloc acc: int32[] local
    acc = 0
    for j in 0..4 {
      acc = (acc + int32(x[((i * 4) + j)]))
    }
    y[i] = acc
  }
}
"""


def test_interpreter_runs_row_sum():
    x = np.arange(-6, 6, dtype=np.int8).reshape(3, 4)
    out = run_primfunc(_row_sum(), {"x": x})["y"]
    assert out.tolist() == x.astype(np.int32).sum(axis=1).tolist()


@pytest.mark.parametrize("op,a,b,expected", [
    ("div", -7, 2, -3), ("mod", -7, 2, -1), ("floordiv", -7, 2, -4), ("floormod", -7, 2, 1),
    ("add", 2**31 - 1, 1, -2**31), ("mul", 65536, 65536, 0), ("shr", -8, 1, -4), ("min", 3, -2, -2),
])
def test_integer_semantics_are_c(op, a, b, expected):
    y = Buffer("y", "int32", (1,), "arena", tensor="y")
    f = verify_primfunc(PrimFunc("f", (y,), Store(y, IntImm(0), BinOp(op, IntImm(a), IntImm(b)))))
    assert run_primfunc(f, {})["y"][0] == expected


def test_select_evaluates_only_the_chosen_arm():
    # x[i - 1] would read x[-1] (numpy wraps silently), so the guard must short-circuit.
    x = Buffer("x", "int32", (4,), "arena", tensor="x")
    y = Buffer("y", "int32", (4,), "arena", tensor="y")
    i = Var("i")
    guarded = Select(binop("ge", i - 1, 0), Load(x, i - 1), IntImm(-100))
    f = verify_primfunc(PrimFunc("f", (x, y), loops([(i, 4)], y.store(guarded, i))))
    out = run_primfunc(f, {"x": np.array([5, 6, 7, 8], np.int32)})["y"]
    assert out.tolist() == [-100, 5, 6, 7]


def test_loops_elide_extent_one_and_simplify():
    y = Buffer("y", "int32", (1, 4), "arena", tensor="y")
    i, j = Var("i"), Var("j")
    s = loops([(i, 1), (j, 4)], y.store(j, i, j))
    assert isinstance(s, For) and s.var == j and s.body.index == j
    assert simplify(substitute(BinOp("mul", i, IntImm(3)) + j, {i: IntImm(0)})) == j


_x = Buffer("x", "int8", (4,), "arena", tensor="x")
_c = Buffer("c", "int8", (4,), "const", data=np.zeros(4, np.int8))
_i = Var("i")

BROKEN = {
    "used out of scope": Store(_x, _i, IntImm(0, "int8")),
    "store to constant": For(_i, 4, Store(_c, _i, IntImm(0, "int8"))),
    "store of int32 into int8": For(_i, 4, Store(_x, _i, IntImm(1))),
    "bound twice": For(_i, 4, For(_i, 2, Store(_x, _i, IntImm(0, "int8")))),
    "if condition is not bool": IfThenElse(IntImm(1), Store(_x, IntImm(0), IntImm(0, "int8"))),
    "undeclared buffer": For(_i, 4, Store(Buffer("z", "int8", (4,), "arena", tensor="z"), _i, IntImm(0, "int8"))),
}


@pytest.mark.parametrize("message", sorted(BROKEN))
def test_verifier_rejects(message):
    with pytest.raises(TirVerifyError, match=message):
        verify_primfunc(PrimFunc("bad", (_x, _c), BROKEN[message]))
