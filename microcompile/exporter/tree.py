"""The library tree every export format shares, and how it is written.

    DIR/
      include/            N.h per model (what the application includes), mc_runtime.h and the
                          runtime's other headers
      models/N/           N.c, N_weights.c, N_weights.h: the model, every symbol prefixed N_
      runtime/src/        mc_runtime.c (mc_init, mc_run, the quantize helpers, a weak
                          mc_platform_cycles)
      runtime/kernels/    only the kernel sources the models call, for the board's core
      bsp/                with --bsp: startup, platform, console, linker script
      README.md           how to use it, with the models' real shapes, scales and arena
      microcompile.json   models, bytes, inputs/outputs, core, flags, version, build id, files
      + the format's own files (CMakeLists.txt, microcompile.mk, ...)

The runtime and kernel files are byte-for-byte those of the microcompile version, whatever
the models: two exports of one version link into one program, and the build files define
each runtime piece once (CMake targets and Make variables guarded by name).

A new DIR is written beside its place and renamed into it (complete or absent); an existing
DIR must be an earlier export (its microcompile.json says so) and is updated in place, with
the files the earlier export wrote and this one does not removed. No link in DIR is followed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from .. import __version__
from ..errors import UserError
from ..escape import json_text
from ..files import OutputTree, check_output_dir, read_file
from ..project.kernel_sources import FEATURE_DIRS, kernel_sources
from ..project.staging import staged
from ..resources import resource_dir
from ..target import Board

GENERATOR = "microcompile export"
MANIFEST = "microcompile.json"
_MANIFEST_BYTES_MAX = 16 << 20


@dataclass
class ModelFiles:
    """One model of an export, as written: its name, manifest and files {path: bytes}."""

    name: str
    manifest: dict
    files: dict[str, bytes]
    kernel_headers: list[str]
    test_inputs: list[bytes] = field(default_factory=list)   # one per input, as the model takes it


@dataclass
class LibraryTree:
    """Every file of an export, by path relative to DIR, and what the build files need."""

    board: Board
    models: list[ModelFiles]
    files: dict[str, bytes] = field(default_factory=dict)
    runtime_sources: list[str] = field(default_factory=list)
    kernel_groups: dict[str, list[str]] = field(default_factory=dict)   # header stem -> its sources
    bsp: dict | None = None           # {"sources", "include_dirs", "defines", "linker_script"}
    flat: str | None = None           # every source and header in this one folder (Arduino's src/)

    def add(self, rel: str, data: bytes | str) -> None:
        self.files[rel] = data.encode() if isinstance(data, str) else data

    def model_sources(self, m: ModelFiles) -> list[str]:
        if self.flat is not None:
            return [f"{self.flat}{s}" for s in m.manifest["sources"]]
        return [f"models/{m.name}/{s}" for s in m.manifest["sources"]]

    def flatten(self, folder: str) -> None:
        """Move include/, runtime/ and models/ into `folder` (file names do not collide: the
        runtime's start with mc_, which no model name may)."""
        def moved(rel: str) -> str:
            return folder + rel.rsplit("/", 1)[-1]
        for rel in [r for r in sorted(self.files) if r.startswith(("include/", "runtime/", "models/"))]:
            self.files[moved(rel)] = self.files.pop(rel)
        self.runtime_sources = [moved(r) for r in self.runtime_sources]
        self.kernel_groups = {k: [moved(r) for r in v] for k, v in self.kernel_groups.items()}
        self.flat = folder


def runtime_tree(board: Board, models: list[ModelFiles]) -> LibraryTree:
    """The shared part: headers, runtime, the kernels the models use, the models' files."""
    tree = LibraryTree(board, models)
    runtime = resource_dir("runtime_c")
    for header in sorted((runtime / "include").glob("*.h")):
        tree.add(f"include/{header.name}", header.read_bytes())
    for src in sorted((runtime / "src").glob("*.c")):
        tree.add(f"runtime/src/{src.name}", src.read_bytes())
        tree.runtime_sources.append(f"runtime/src/{src.name}")
    used = sorted({h for m in models for h in m.kernel_headers})
    for stem, sources in kernel_sources(board, used).items():
        for path, rel in sources:
            tree.add(rel, path.read_bytes())
        tree.kernel_groups[stem[3:] if stem.startswith("mc_") else stem] = [rel for _, rel in sources]
    for m in models:
        for rel, data in m.files.items():
            tree.add(rel, data)
    return tree


def build_id(files: dict[str, bytes]) -> str:
    """A digest of every file's path and bytes: equal trees, equal ids."""
    digest = hashlib.sha256()
    for rel in sorted(files):
        digest.update(rel.encode() + b"\0" + hashlib.sha256(files[rel]).digest())
    return digest.hexdigest()[:16]


def describe(tree: LibraryTree, fmt: str, extra: dict | None = None, code: dict | None = None) -> dict:
    """microcompile.json: what a build system or a person needs to know about the export.
    `code` (measure.code_bytes): the compiled code's bytes, per model and shared."""
    board = tree.board
    code = code or {}
    models = []
    for m in tree.models:
        man = m.manifest
        model_code = code.get("models", {}).get(m.name)
        models.append({"name": m.name, "model": man["model"], "symbol": f"{m.name}_model",
                       "header": f"{tree.flat or 'include/'}{m.name}.h", "arena_bytes": man["arena_bytes"],
                       "arena_macro": f"{m.name.upper()}_ARENA_BYTES", "weights_bytes": man["weights_bytes"],
                       "code_bytes": model_code,
                       "flash_bytes": man["weights_bytes"] + model_code if model_code is not None else None,
                       "state_bytes": man.get("state_bytes", 0), "kernels": len(man["kernels"]),
                       "sources": tree.model_sources(m),
                       "inputs": [_io(t) for t in man["inputs"]], "outputs": [_io(t) for t in man["outputs"]]})
    out = {"generator": GENERATOR, "microcompile": __version__, "format": fmt, "board": board.name,
           "core": board.target.core, "arch": board.target.arch, "fpu": board.target.fpu_kind,
           "cflags": list(board.target.cflags), "ldlibs": ["m"], "kernel_sets": _kernel_sets(board),
           "models": models, "runtime_sources": tree.runtime_sources,
           "kernel_sources": sorted(s for group in tree.kernel_groups.values() for s in group),
           "shared_code_bytes": code.get("shared"),
           # code_bytes: the compiled objects' text and data, before the link drops what nothing
           # calls; flash_bytes: a model's weights and code (the shared runtime and kernels apart)
           "code_measured_with": f"{board.target.toolchain} -O2 {' '.join(board.target.cflags)}" if code else None,
           "bsp": tree.bsp, **(extra or {})}
    return out


def _io(t: dict) -> dict:
    return {k: t[k] for k in ("name", "dtype", "shape", "bytes", "scale", "zero_point")}


def _kernel_sets(board: Board) -> list[str]:
    return ["c"] + [f for f, _ in FEATURE_DIRS if getattr(board.target, f)]


def finish(tree: LibraryTree, description: dict) -> dict:
    """Add microcompile.json (with the build id and the file list) and return it."""
    description = dict(description, files=sorted(set(tree.files) | {MANIFEST}))
    description["build_id"] = build_id(tree.files)
    tree.add(MANIFEST, json_text(description, indent=2, sort_keys=True) + "\n")
    return description


def check_export_dir(out_dir: str | Path) -> list[str]:
    """Before any work: refuse a DIR that is a file, cannot be created, or is a non-empty
    directory that is not an earlier export; return the files an earlier export wrote."""
    out_dir = check_output_dir(out_dir, "export directory")
    if not out_dir.exists() or not any(out_dir.iterdir()):
        return []
    marker = out_dir / MANIFEST
    try:
        previous = json.loads(read_file(marker, "export description", _MANIFEST_BYTES_MAX)) \
            if marker.is_file() and not marker.is_symlink() else {}
    except (json.JSONDecodeError, UnicodeDecodeError, UserError):
        previous = {}
    if not isinstance(previous, dict) or previous.get("generator") != GENERATOR:
        raise UserError(f"{out_dir} is not empty and is not a microcompile export; refusing to overwrite it",
                        hint="choose a new or empty output directory")
    files = previous.get("files", [])
    return [f for f in files if isinstance(f, str)] if isinstance(files, list) else []


def write_tree(tree: LibraryTree, out_dir: str | Path) -> Path:
    """Write `tree` into `out_dir` (checked by check_export_dir before the compile)."""
    out_dir = Path(out_dir)
    previous = check_export_dir(out_dir)
    if not out_dir.exists():
        with staged(out_dir) as stage:
            _write(OutputTree(stage), tree, [])
    else:
        _write(OutputTree(out_dir), tree, previous)
    return out_dir


def _write(out: OutputTree, tree: LibraryTree, previous: list[str]) -> None:
    # The description last: a DIR whose files are half written still names the earlier files.
    for rel in sorted(set(tree.files) - {MANIFEST}):
        out.write(rel, tree.files[rel])
    for rel in sorted(set(previous) - set(tree.files)):
        out.remove(rel)
    out.write(MANIFEST, tree.files[MANIFEST])
