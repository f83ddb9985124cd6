"""The import rules of DESIGN.md: lower stages never import higher ones, no two modules
import each other (directly or round a loop), and no module writes another's names."""

import pathlib

import microcompile

from import_graph import cycles, foreign_writes, imports

PKG = pathlib.Path(microcompile.__file__).parent

# package -> microcompile packages it may import (besides itself and COMMON). docs/design-departures.md
# ("Where the code departs from the design") says why frontend and transform may read `reference`.
ALLOWED = {
    "ir": set(),
    "tir": {"ir"},
    "reference": {"ir"},
    "frontend": {"ir", "reference"},
    "transform": {"ir", "reference"},
    "quantization": {"ir", "reference"},
    "lower": {"ir", "tir", "reference", "target"},
    "schedule": {"ir", "tir", "target"},
    "memory": {"ir"},
    "codegen": {"ir", "tir", "memory", "target"},
    "target": set(),
    "project": {"codegen", "target"},
    "device": set(),
    "compiler": {"ir", "tir", "reference", "frontend", "transform", "lower", "schedule", "memory", "codegen",
                 "target"},
    "report": {"ir", "reference", "frontend", "memory", "project"},
    "exporter": {"codegen", "compiler", "project", "target"},
    "deploy": {"ir", "reference", "frontend", "transform", "quantization", "memory", "codegen", "target", "project",
               "device", "compiler", "report"},
    "autotune": {"ir", "tir", "reference", "frontend", "transform", "quantization", "lower", "schedule", "memory",
             "codegen", "target", "project", "device", "compiler", "report", "deploy"},
    "api": {"ir", "tir", "reference", "frontend", "transform", "quantization", "lower", "schedule", "memory",
            "codegen", "target", "project", "device", "compiler", "report", "deploy", "autotune", "exporter"},
}
COMMON = {"errors", "files", "resources", "escape", "templating", "progress", "microcompile"}   # "microcompile": the version in __init__;
# "files": how every stage reads the files a user names (regular files only, a size limit)


# Top-level modules: the CLI parses arguments and calls the API (and the argument parsers and
# formatters its commands share with it); the common modules are stdlib-like helpers.
TOP_LEVEL = {
    "cli": {"api", "frontend", "report", "autotune", "ir", "quantization", "project"},   # project: children.kill_all
    "__main__": {"cli"},
}


def stage_violations(root: pathlib.Path) -> list[str]:
    broken = []
    for e in imports(root):
        parts = e.source.split(".")
        if len(parts) < 2:
            continue
        package = parts[1]
        if package in TOP_LEVEL and len(parts) == 2:
            imported = e.target.split(".")[1] if "." in e.target else e.target
            if imported not in TOP_LEVEL[package] | COMMON:
                broken.append(f"{e.source}:{e.line} imports {e.target}")
            continue
        if package not in ALLOWED:
            continue          # the COMMON modules: checked by test_every_module_has_a_rule
        imported = e.target.split(".")[1] if "." in e.target else e.target
        if imported not in ALLOWED[package] | COMMON | {package}:
            broken.append(f"{e.source}:{e.line} imports {e.target}")
    return broken


def test_stage_import_rules():
    broken = stage_violations(PKG)
    assert not broken, "import rules broken:\n" + "\n".join(broken)


def test_every_package_of_the_tree_has_a_rule():
    packages = {p.name for p in PKG.iterdir() if (p / "__init__.py").exists()}
    assert packages <= set(ALLOWED), f"packages without an import rule: {packages - set(ALLOWED)}"


def test_every_module_has_a_rule():
    """No loose top-level module escapes the rules: each is a common helper or has its own rule."""
    modules = {p.stem for p in PKG.glob("*.py")} - {"__init__"}
    assert modules <= COMMON | set(TOP_LEVEL), f"top-level modules without a rule: {modules - COMMON - set(TOP_LEVEL)}"


def test_common_modules_import_only_common_modules():
    """errors, files, escape, ... are imported by every stage: they import no stage."""
    broken = [f"{e.source}:{e.line} imports {e.target}" for e in imports(PKG)
              if len(e.source.split(".")) == 2 and e.source.split(".")[1] in COMMON
              and "." in e.target and e.target.split(".")[1] not in COMMON]
    assert not broken, "\n".join(broken)


def test_no_import_cycles():
    found = cycles(imports(PKG))
    assert not found, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in found)


def test_no_module_writes_another_modules_names():
    found = foreign_writes(PKG)
    assert not found, "\n".join(found)


# --- the checks themselves can fail: a fixture package with each kind of problem ------------

def _package(tmp_path, files: dict[str, str]) -> pathlib.Path:
    root = tmp_path / "microcompile"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_cycle_check_finds_a_deliberate_cycle_three_dots_deep(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "ir/__init__.py": "",
        "ir/a.py": "from .b import x\n",
        "ir/b.py": "def f():\n    pass\nfrom ..frontend.onnx.c import y\n",
        "frontend/__init__.py": "",
        "frontend/onnx/__init__.py": "",
        "frontend/onnx/c.py": "from ...ir.a import z\n",     # three dots: c -> ir.a -> ir.b -> c
    })
    assert cycles(imports(root)) == [["microcompile.frontend.onnx.c", "microcompile.ir.a", "microcompile.ir.b"]]
    # and the stage rule sees the three-dot import of a higher stage from ir/
    assert any("microcompile.ir.b" in v and "frontend" in v for v in stage_violations(root))


def test_cycle_check_passes_a_layered_package(tmp_path):
    root = _package(tmp_path, {"__init__.py": "", "ir/__init__.py": "from . import a\n",
                               "ir/a.py": "from . import b\n", "ir/b.py": "X = 1\n"})
    assert cycles(imports(root)) == []


def test_foreign_write_check_finds_private_and_table_writes(tmp_path):
    root = _package(tmp_path, {
        "__init__.py": "",
        "frontend/__init__.py": "",
        "frontend/reader.py": "_FIELDS = {}\nTABLE = {}\n",
        "frontend/family.py": ("from . import reader as r\nfrom .reader import TABLE\n"
                               "r._FIELDS.update({'A': 1})\nr._FIELDS['B'] = 2\nTABLE['C'] = 3\n"
                               "local = {}\nlocal['ok'] = 1\n"),
    })
    found = foreign_writes(root)
    assert [f.split(": ", 1)[1] for f in found] == ["writes r._FIELDS", "writes r._FIELDS", "writes TABLE"], found
