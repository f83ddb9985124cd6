"""What the CLI checks and writes besides models: output paths checked before any work, the
JSON report, output arrays."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from ..escape import json_text
from ..files import check_output_file, write_file
from ..project import check_out_dir


def check_project_dir(path) -> Path:
    """Before any work: refuse a project directory that is a file, cannot be created, or is a
    non-empty directory microcompile did not make."""
    check_out_dir(path)
    return Path(path)


def check_output(path, what: str) -> Path:
    """Before any work: `path` can be written as a file later."""
    return check_output_file(path, what)


def write_report(report: dict, path) -> Path:
    """The JSON report, written atomically (missing parent directories are created)."""
    return write_file(path, (json_text(report, indent=2, sort_keys=True) + "\n").encode(), "report")


def save_outputs(outputs: dict[str, np.ndarray], path) -> Path:
    """Arrays as .npy (one) or .npz (several, or a .npz name), written atomically."""
    buf = io.BytesIO()
    if len(outputs) == 1 and not str(path).endswith(".npz"):
        np.save(buf, next(iter(outputs.values())))
    else:
        np.savez(buf, **outputs)
    return write_file(path, buf.getvalue(), "--output file")


def write_in_project(project_dir, name: str, data: bytes) -> Path:
    """Write `name` inside a project directory: atomically, and a link there is replaced, never
    written through (files.OutputTree)."""
    from ..files import OutputTree

    OutputTree(Path(project_dir)).write(name, data)
    return Path(project_dir) / name


def read_inputs(path, what: str = "input file"):
    """Read a .npy/.npz file now (a bad file is an error before any work); the result is
    accepted wherever inputs are (its `arrays`: one array, or {name: array})."""
    from ..deploy.inputs import InputFile
    from ..files import load_arrays
    return InputFile(Path(path), load_arrays(path, what))
