"""manifest.json: what project/ needs to know about an artifact, and nothing it must parse C for."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..escape import json_text

# 2: kernels carry their schedule "trace". 3: "data" (model_weights.bin), "memory" (the plan).
SCHEMA_VERSION = 3


def tensor_entry(t, offset: int) -> dict:
    """An input/output description: shape, dtype, quantization (per-tensor) and arena place."""
    q = t.quant
    return {"name": t.name, "shape": list(t.shape), "dtype": t.dtype,
            "scale": float(q.scale[0]) if q is not None else 0.0,
            "zero_point": int(q.zero_point[0]) if q is not None else 0,
            "offset": int(offset), "bytes": int(t.nbytes)}


@dataclass(frozen=True)
class ArtifactFiles:
    """An artifact's files: C `sources` and `headers`, and `data` the sources include at build
    time (the weights' .bin), copied with them; `runtime_headers`: what they need of the runtime."""

    sources: tuple[str, ...]
    headers: tuple[str, ...]
    data: tuple[str, ...] = ()
    runtime_headers: tuple[str, ...] = ()    # the runtime's headers the sources include (its kernels')


@dataclass(frozen=True)
class Figures:
    """An artifact's bytes: the arena, the weights in flash, and the state buffer (recurrent
    state persisting between inferences, a static array of model.c next to the caller's arena)."""

    arena_bytes: int
    weights_bytes: int
    state_bytes: int = 0


def build_manifest(model: str, files: ArtifactFiles, figures: Figures, io: tuple[list[dict], list[dict]],
                   kernels: list[dict], constants: list[dict] = (), memory: dict | None = None) -> dict:
    """`io`: the input and the output descriptions (tensor_entry); `constants`: each weight
    symbol and its bytes; `memory`: the arena plan's summary."""
    inputs, outputs = io
    return {"schema_version": SCHEMA_VERSION, "model": model, "arena_bytes": int(figures.arena_bytes),
            "state_bytes": int(figures.state_bytes), "weights_bytes": int(figures.weights_bytes),
            "sources": list(files.sources), "headers": list(files.headers), "data": list(files.data),
            "runtime_headers": list(files.runtime_headers),
            "constants": [{"symbol": c["symbol"], "bytes": int(c["bytes"])} for c in constants],
            "memory": memory or {}, "inputs": inputs, "outputs": outputs, "kernels": kernels}


def write_manifest(manifest: dict, out_dir: Path) -> Path:
    path = Path(out_dir) / "manifest.json"
    path.write_text(json_text(manifest, indent=2, sort_keys=True) + "\n")
    return path
