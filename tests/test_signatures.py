"""No function in the package takes more than 8 parameters.

A long parameter list is a keyword relay: the same options passed down by hand through
every layer, each layer free to forget one. Options that travel together are one frozen
object (compiler.CompileOptions, deploy.BuildOptions, autotune.Plan, ...). Every positional,
keyword-only, *args and **kwargs parameter counts; self and cls do not.
"""

from __future__ import annotations

import ast
from pathlib import Path

import microcompile

MAX_PARAMETERS = 8
PACKAGE = Path(microcompile.__file__).parent


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    a = fn.args
    names = [x.arg for x in a.posonlyargs + a.args + a.kwonlyargs]
    names += ["*" + a.vararg.arg] if a.vararg else []
    names += ["**" + a.kwarg.arg] if a.kwarg else []
    return [n for n in names if n not in ("self", "cls")]


def _wide(source: str, max_parameters: int = MAX_PARAMETERS) -> list[tuple[int, str, int]]:
    tree = ast.parse(source)
    return sorted((fn.lineno, fn.name, len(_parameters(fn))) for fn in ast.walk(tree)
                  if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and len(_parameters(fn)) > max_parameters)


def test_the_counter_sees_every_kind_of_parameter():
    # Without this, a counter that missed keyword-only or *args parameters would pass anything.
    src = ("def f(a, b, /, c, *args, d, e, **kw): pass\n"
           "class C:\n    def m(self, a, b, c, d, e, f, g, h): pass\n"
           "    def n(self, a, b, c, d, e, f, g, h, i): pass\n"
           "async def g(a, b, c, d, e, f, g, h, *, i): pass\n"
           "lam = [lambda: 0]\n")
    assert _wide(src, 6) == [(1, "f", 7), (3, "m", 8), (4, "n", 9), (5, "g", 9)]
    assert _wide(src) == [(4, "n", 9), (5, "g", 9)]


def test_no_function_takes_more_than_eight_parameters():
    wide = [f"{path.relative_to(PACKAGE.parent)}:{line} {name} ({count} parameters)"
            for path in sorted(PACKAGE.rglob("*.py"))
            for line, name, count in _wide(path.read_text(encoding="utf-8"))]
    assert not wide, "take one frozen options object instead:\n" + "\n".join(wide)
