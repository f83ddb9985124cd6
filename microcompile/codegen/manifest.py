"""manifest.json: what project/ needs to know about an artifact, and nothing it must parse C for."""

from __future__ import annotations

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


def build_manifest(model: str, arena_bytes: int, weights_bytes: int, inputs: list[dict],
                   outputs: list[dict], kernels: list[dict], sources: list[str], headers: list[str],
                   data: list[str] = (), constants: list[dict] = (), memory: dict | None = None,
                   state_bytes: int = 0) -> dict:
    """`data`: files the sources include at build time (the weights' .bin), copied with them;
    `constants`: each weight symbol and its bytes; `memory`: the arena plan's summary;
    `state_bytes`: the model's state buffer (recurrent state persisting between inferences), a
    static array of model.c next to the caller's arena."""
    return {"schema_version": SCHEMA_VERSION, "model": model, "arena_bytes": int(arena_bytes),
            "state_bytes": int(state_bytes),
            "weights_bytes": int(weights_bytes), "sources": sources, "headers": headers, "data": list(data),
            "constants": [{"symbol": c["symbol"], "bytes": int(c["bytes"])} for c in constants],
            "memory": memory or {}, "inputs": inputs, "outputs": outputs, "kernels": kernels}


def write_manifest(manifest: dict, out_dir: Path) -> Path:
    path = Path(out_dir) / "manifest.json"
    path.write_text(json_text(manifest, indent=2, sort_keys=True) + "\n")
    return path
