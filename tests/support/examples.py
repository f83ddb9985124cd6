"""The project's example and benchmark scripts as modules, loaded from their files (they are
scripts, not packages), so that no test edits sys.path to import them."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def load(relative: str):
    """The script at REPO/`relative` as a module (loaded once, kept in sys.modules)."""
    path = REPO / relative
    name = f"_mc_script_{path.stem}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def make_model():
    """examples/digits/make_model.py: the demo's digits MLP."""
    return load("examples/digits/make_model.py")


def benchmark(name: str):
    """benchmarks/<name>.py as a module."""
    return load(f"benchmarks/{name}.py")
