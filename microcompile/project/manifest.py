"""Reading the artifact's manifest.json (written by codegen.manifest, SCHEMA_VERSION).

project/ reads nothing else of the artifact but the C files the manifest lists.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from microcompile.errors import UserError

from ..codegen.manifest import SCHEMA_VERSION
MANIFEST_NAME = "manifest.json"
DTYPES = {"int8": np.dtype("int8"), "float32": np.dtype("<f4"), "int32": np.dtype("<i4"), "int16": np.dtype("<i2")}


def load_manifest(artifact_dir: str | Path) -> dict:
    """Parse and sanity-check `artifact_dir/manifest.json`."""
    path = Path(artifact_dir) / MANIFEST_NAME
    if not path.is_file():
        raise UserError(f"{path} not found", hint="point at a directory produced by `microcompile compile`")
    try:
        m = json.loads(path.read_text())
    except json.JSONDecodeError as e:
        raise UserError(f"{path} is not valid JSON: {e}") from e
    if m.get("schema_version") != SCHEMA_VERSION:
        raise UserError(f"{path} has schema_version {m.get('schema_version')!r}; this microcompile reads {SCHEMA_VERSION}",
                        hint="recompile the model with this version of microcompile")
    for key in ("model", "arena_bytes", "weights_bytes", "sources", "headers", "inputs", "outputs"):
        if key not in m:
            raise UserError(f"{path} lacks {key!r}")
    for t in m["inputs"] + m["outputs"]:
        if t["dtype"] not in DTYPES:
            raise UserError(f"{path}: tensor {t['name']!r} has unsupported dtype {t['dtype']!r}")
    for name in m["sources"] + m["headers"]:
        if Path(name).is_absolute() or ".." in Path(name).parts:
            raise UserError(f"{path}: file {name!r} must be a plain path inside the artifact")
    return m


def tensor_array(spec: dict, data: bytes) -> np.ndarray:
    """Bytes of one manifest tensor as a numpy array of its dtype and shape."""
    dtype = DTYPES[spec["dtype"]]
    return np.frombuffer(data, dtype=dtype).reshape(spec["shape"]).copy()
