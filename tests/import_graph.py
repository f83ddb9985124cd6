"""The package's import graph, read from the source with `ast` (nothing is imported).

Used by test_import_rules.py: the stage rules of DESIGN.md, import cycles, and writes into
another module's private names. Works on any directory laid out as a package, so the
tests can show each check failing on a small fixture package.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Import:
    source: str      # importing module, dotted ("microcompile.lower.conv2d")
    target: str      # imported module, dotted (a package means its __init__)
    line: int
    lazy: bool       # inside a function body (runs on call, not at import time)


def modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for the package at `root` (its directory name is the top)."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    """The absolute module an ImportFrom reads from, for relative imports of any depth."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    if node.level > 1:
        base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _function_nodes(tree: ast.AST) -> set[int]:
    """ids of every node inside a function body."""
    inside = set()
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            inside |= {id(n) for n in ast.walk(fn)} - {id(fn)}
    return inside


def _type_checking_nodes(tree: ast.AST) -> set[int]:
    """ids of every node under `if TYPE_CHECKING:`, which never runs (names for type checkers)."""
    inside = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and (getattr(node.test, "id", None) == "TYPE_CHECKING"
                                         or getattr(node.test, "attr", None) == "TYPE_CHECKING"):
            inside |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    return inside


def imports(root: Path) -> list[Import]:
    """Every import of a module of the package by a module of the package (those under
    `if TYPE_CHECKING:` do not run, and are left out)."""
    mods = modules(root)
    top = root.name
    out = []
    for module, path in mods.items():
        tree = ast.parse(path.read_text())
        lazy_ids = _function_nodes(tree)
        never = _type_checking_nodes(tree)
        is_package = path.name == "__init__.py"
        for node in ast.walk(tree):
            if id(node) in never:
                continue
            lazy = id(node) in lazy_ids
            if isinstance(node, ast.ImportFrom):
                base = _resolve(node, module, is_package)
                if base != top and not base.startswith(top + "."):
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    target = sub if sub in mods else base
                    out.append(Import(module, target, node.lineno, lazy))
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name == top or alias.name.startswith(top + "."):
                        out.append(Import(module, alias.name, node.lineno, lazy))
    return out


def cycles(edges: list[Import]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    graph: dict[str, set[str]] = {}
    for e in edges:
        if e.source != e.target:
            graph.setdefault(e.source, set()).add(e.target)
            graph.setdefault(e.target, set())
    index, low, stack, on_stack, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


_MUTATORS = {"update", "setdefault", "append", "extend", "insert", "pop", "clear", "__setitem__"}


def foreign_writes(root: Path) -> list[str]:
    """Writes into names that belong to another module of the package:

    - `mod._name = ...`, `mod._name[k] = ...`, `mod._name.update(...)` (any private name
      reached through an imported module);
    - `TABLE[k] = ...` / `TABLE.update(...)` on a name imported from another module
      (`from .interp import KERNELS`): tables are filled by their owner's decorator.
    Returns "path:line: what" strings."""
    mods = modules(root)
    top = root.name
    problems = []
    for module, path in mods.items():
        tree = ast.parse(path.read_text())
        is_package = path.name == "__init__.py"
        imported_modules, imported_names = set(), set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                base = _resolve(node, module, is_package)
                if base != top and not base.startswith(top + "."):
                    continue
                for alias in node.names:
                    local = alias.asname or alias.name
                    (imported_modules if f"{base}.{alias.name}" in mods else imported_names).add(local)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith(top):
                        imported_modules.add(alias.asname or alias.name.split(".")[0])

        def owner_of(expr) -> str | None:
            """The foreign name an expression writes into, or None."""
            while isinstance(expr, ast.Subscript):
                expr = expr.value
            if isinstance(expr, ast.Attribute) and isinstance(expr.value, ast.Name):
                if expr.value.id in imported_modules and expr.attr.startswith("_"):
                    return f"{expr.value.id}.{expr.attr}"
            if isinstance(expr, ast.Name) and expr.id in imported_names:
                return expr.id
            return None

        for node in ast.walk(tree):
            targets = []
            if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                # A plain rebinding of an imported name is local; only item/attribute writes count.
                targets = [t for t in targets if not isinstance(t, ast.Name)]
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                  and node.func.attr in _MUTATORS):
                targets = [node.func.value]
            for t in targets:
                name = owner_of(t)
                if name is not None:
                    problems.append(f"{path.relative_to(root.parent)}:{node.lineno}: writes {name}")
    return sorted(problems, key=lambda p: (p.split(":")[0], int(p.split(":")[1])))
