"""Agent builds: the firmware serves the model over the console UART (runtime_c/agent/).

`build_id` names the generated model C; the firmware reports it (INFO, BOOT) and the
host compares it with the project's, so a board running another model's firmware is
found before any data is sent. `template_values` fills templates/project/agent_main.c.j2:
the static frame buffers, sized from the largest tensor, and the table of planned
tensors that GET_TENSOR reads.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from microcompile.codegen.c_emitter import float_literal
from microcompile.project.trace import trace_entries
from microcompile.templating import generated

CHUNK_MIN = 256     # info pages and profile pages fit, whatever the model
CHUNK_MAX = 1024    # RAM: two frames of this; larger tensors go in chunks
FRAME_EXTRA = 16    # header 4 + CRC 4 + the largest command header (status + u32) and slack
_C_DTYPES = {"int8": "MC_INT8", "float32": "MC_FLOAT32", "int32": "MC_INT32", "int16": "MC_INT16",
             "uint32": "MC_UINT32", "uint64": "MC_UINT64"}


def build_id(artifact_dir: str | Path, manifest: dict, placement: dict | None = None) -> str:
    """16 hex digits: SHA-256 over the names and bytes of the generated model C files and, when
    given, the memory placement (the same model with its weights in another bank is another
    firmware: a board running the one must be flashed with the other)."""
    h = hashlib.sha256()
    for name in manifest["sources"] + manifest["headers"]:
        data = (Path(artifact_dir) / name).read_bytes()
        h.update(f"{name}\0{len(data)}\0".encode())
        h.update(data)
    if placement:
        h.update(json.dumps(placement, sort_keys=True).encode())
    return h.hexdigest()[:16]


def chunk_bytes(manifest: dict) -> int:
    """The most data bytes one frame carries: the largest tensor, within [CHUNK_MIN, CHUNK_MAX]."""
    largest = largest_tensor(manifest)
    return max(CHUNK_MIN, min(CHUNK_MAX, (largest + 3) // 4 * 4))


def largest_tensor(manifest: dict) -> int:
    sizes = [t["bytes"] for t in manifest["inputs"] + manifest["outputs"]]
    sizes += [e.spec["bytes"] for e in trace_entries(manifest)]
    return max(sizes, default=0)


def template_values(manifest: dict, board_name: str, build: str) -> dict:
    chunk = chunk_bytes(manifest)
    tensors = []
    for e in trace_entries(manifest):
        s = e.spec
        if s.get("bank"):   # in another bank's arena (memory/banks.py): GET_TENSOR reads the primary only
            continue
        tensors.append({
            "name": s["name"], "dtype": generated(_C_DTYPES[s["dtype"]]), "offset": s["offset"],
            "bytes": s["bytes"], "ndim": len(s["shape"]), "shape_len": max(len(s["shape"]), 1),
            "shape": generated(", ".join(str(d) for d in s["shape"]) or "0"),
            "scale": generated(float_literal(float(s.get("scale", 0.0)))), "zero_point": int(s.get("zero_point", 0)),
            "kernel": e.kernel,
            "comment": f"{manifest['kernels'][e.kernel]['name']} output {e.output}"})
    return {"model": manifest["model"], "board": generated(board_name),
            "build_id_hex": generated(build),
            "build_id_bytes": generated(", ".join(f"0x{build[i:i + 2]}" for i in range(0, 16, 2))),
            "chunk_bytes": chunk, "frame_bytes": chunk + FRAME_EXTRA, "largest_tensor": largest_tensor(manifest),
            "num_kernels_or_1": max(len(manifest["kernels"]), 1),
            "num_inputs_or_1": max(len(manifest["inputs"]), 1), "tensors": tensors}
