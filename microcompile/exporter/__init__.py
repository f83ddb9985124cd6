"""Export compiled models as a library for the user's own firmware (`microcompile export`).

    export([ExportModel(name, compiled), ...], board, DIR, ExportOptions(format=...)) -> Exported

Every model is emitted again under its own names (codegen.Naming.exported: N.h, N_model,
N_ARENA_BYTES, every symbol prefixed N_) with its weights as C arrays (no .incbin: any build
system compiles them), into the shared tree of tree.py; each format adds its build files
(formats.py). Byte-for-byte deterministic: exporting twice gives identical trees.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

from ..codegen import emit_artifact
from ..codegen.naming import Naming, check_model_name, model_name
from ..compiler import Compiled
from ..errors import UserError
from ..target import Board
from . import formats
from .options import FORMATS, ExportOptions
from ..project.kernel_sources import kernel_headers
from .tree import ModelFiles, check_export_dir, runtime_tree, write_tree

__all__ = ["FORMATS", "ExportModel", "ExportOptions", "Exported", "export", "check_export_dir", "check_names",
           "model_name"]


@dataclass(frozen=True)
class ExportModel:
    """A compiled model, the name it is exported under (codegen.naming.check_model_name), and
    the test input the samples (Arduino, Zephyr) embed: one array per model input."""

    name: str
    compiled: Compiled
    test_inputs: tuple = ()


@dataclass(frozen=True)
class Exported:
    """What an export wrote: the directory, microcompile.json's content, and the files."""

    directory: Path
    description: dict

    @property
    def files(self) -> list[str]:
        return list(self.description["files"])


def check_names(names: list[str], given: bool = False) -> list[str]:
    """Each name valid and no two the same (also not in upper case: the macros, nor on a
    case-insensitive file system: the headers)."""
    for n in names:
        check_model_name(n, given)
    seen: dict[str, str] = {}
    for n in names:
        if n.upper() in seen:
            raise UserError(f"two models would be exported as {seen[n.upper()]!r} and {n!r}: their headers and "
                            f"macros would collide", hint="rename one of the files, or export them one at a time "
                                                          "with --name")
        seen[n.upper()] = n
    return names


def export(models: list[ExportModel], board: Board, out_dir, options: ExportOptions = ExportOptions()) -> Exported:
    """Write the library of `models` (compiled for `board`) in `options.format` into `out_dir`
    (checked first: new, empty, or an earlier export)."""
    if options.format not in FORMATS:
        raise UserError(f"unknown export format {options.format!r}", hint=f"choose one of {', '.join(FORMATS)}")
    check_names([m.name for m in models])
    check_export_dir(out_dir)
    with tempfile.TemporaryDirectory(prefix="microcompile-export-") as tmp:
        files = [_model_files(m, Path(tmp) / m.name) for m in models]
    tree = runtime_tree(board, files)
    description = formats.write_format(tree, options)
    write_tree(tree, out_dir)
    return Exported(Path(out_dir), description)


def _model_files(m: ExportModel, work: Path) -> ModelFiles:
    c = m.compiled
    naming = Naming.exported(m.name)
    manifest = emit_artifact(c.graph, [(n, f) for n, f, _ in c.kernels], c.plan, work,
                             traces=[t for _, _, t in c.kernels], naming=naming, weights_in_c=True,
                             ram_weights=c.ram_weights.banks if c.ram_weights is not None else None)
    header, weights_header = naming.headers
    files = {f"include/{header}": (work / header).read_bytes(),
             f"models/{m.name}/{weights_header}": (work / weights_header).read_bytes()}
    for src in manifest["sources"]:
        files[f"models/{m.name}/{src}"] = (work / src).read_bytes()
    return ModelFiles(m.name, manifest, files, kernel_headers(manifest.get("runtime_headers", [])),
                      [bytes(memoryview(x)) for x in m.test_inputs])
