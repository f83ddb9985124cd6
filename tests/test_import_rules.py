"""The stage import rules of DESIGN.md: lower stages never import higher ones."""

import ast
import pathlib

import microcompile

PKG = pathlib.Path(microcompile.__file__).parent

# package -> microcompile packages it may import (besides itself and errors/resources).
ALLOWED = {
    "ir": set(),
    "frontend": {"ir"},
    "transform": {"ir"},
    "quantize": {"ir"},
    "lower": {"ir", "target"},
    "schedule": {"ir", "target"},
    "memory": {"ir"},
    "codegen": {"ir", "memory", "target"},
    "target": set(),
    "project": {"codegen", "target"},
    "device": set(),
    "tune": {"ir", "frontend", "transform", "quantize", "lower", "schedule", "memory", "codegen",
             "target", "project", "device"},
}
COMMON = {"errors", "resources", "__version__"}


def _imported_packages(path: pathlib.Path, package: str):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0 and node.module and node.module.startswith("microcompile."):
                yield node.module.split(".")[1], node.lineno
            elif node.level == 2 and node.module:        # from ..ir import x
                yield node.module.split(".")[0], node.lineno
            elif node.level == 2:                         # from .. import x
                for alias in node.names:
                    yield alias.name, node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("microcompile."):
                    yield alias.name.split(".")[1], node.lineno


def test_stage_import_rules():
    broken = []
    for package, allowed in ALLOWED.items():
        for path in sorted((PKG / package).rglob("*.py")):
            for imported, line in _imported_packages(path, package):
                if imported not in allowed | COMMON | {package}:
                    broken.append(f"{path.relative_to(PKG)}:{line} imports {imported}")
    assert not broken, "import rules broken:\n" + "\n".join(broken)


def test_device_uses_only_stdlib_and_pyserial():
    for path in (PKG / "device").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else [])
            for name in names:
                assert name.split(".")[0] not in {"numpy", "jinja2", "onnx", "tflite"}, f"{path}: {name}"
