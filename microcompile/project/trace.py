"""Trace builds: the firmware prints every kernel's outputs right after the kernel ran.

`trace_entries(manifest)` lists, in order, the (kernel, output) tensors a trace build
dumps; entry i of that list is what the firmware prints as `MC-TENSOR i <hex>` lines
(templates/project/trace.h.j2 holds the same list as a C table). `parse_trace` turns the
console text back into one array per entry. Only the manifest is read, as for the rest
of project/.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from microcompile.errors import DeviceError
from microcompile.project.manifest import tensor_array

# The kernel index of the placeholder row that keeps the C table non-empty when a model
# has no kernels (all views/constants); mc_run never reports it.
NO_KERNEL = 0xFFFFFFFF


@dataclass(frozen=True)
class TraceEntry:
    kernel: int      # index into manifest["kernels"] (= mc_model.kernels)
    output: int      # which output of that kernel
    spec: dict       # the manifest's tensor entry: name, shape, dtype, offset, bytes


def trace_entries(manifest: dict) -> list[TraceEntry]:
    return [TraceEntry(k, j, spec) for k, kernel in enumerate(manifest["kernels"])
            for j, spec in enumerate(kernel.get("outputs", []))]


def template_rows(manifest: dict) -> list[dict]:
    """The rows of trace.h.j2's table (a placeholder row when there is nothing to trace)."""
    rows = [{"kernel": e.kernel, "offset": e.spec["offset"], "bytes": e.spec["bytes"],
             "comment": f"{manifest['kernels'][e.kernel]['name']} output {e.output}: "
                        f"{e.spec['name']} {e.spec['dtype']} {e.spec['shape']}"}
            for e in trace_entries(manifest)]
    return rows or [{"kernel": NO_KERNEL, "offset": 0, "bytes": 0, "comment": "placeholder: no kernels"}]


def parse_trace(text: str, manifest: dict) -> list[np.ndarray]:
    """The arrays of `MC-TENSOR <entry> <hex>` lines, one per trace entry, in entry order.

    Raises DeviceError when an entry is missing, garbled or of the wrong size (a firmware
    that was not built with the trace switch prints no MC-TENSOR line at all)."""
    entries = trace_entries(manifest)
    hexes: list[list[str]] = [[] for _ in entries]
    for line in text.replace("\r", "").split("\n"):
        parts = line.split()
        if not parts or parts[0] != "MC-TENSOR":
            continue
        try:
            hexes[int(parts[1])].append(parts[2])
        except (ValueError, IndexError) as e:
            raise DeviceError(f"garbled firmware trace line {line.strip()!r}") from e
    arrays = []
    for e, chunks in zip(entries, hexes):
        try:
            data = bytes.fromhex("".join(chunks))
        except ValueError as err:
            raise DeviceError(f"garbled trace hex for {e.spec['name']!r}") from err
        if len(data) != e.spec["bytes"]:
            raise DeviceError(f"trace of kernel {e.kernel} output {e.output} ({e.spec['name']!r}): got "
                              f"{len(data)} bytes, expected {e.spec['bytes']}",
                              hint="was the firmware built as a trace build (MC_TRACE_ENABLED 1 in trace.h)?")
        arrays.append(tensor_array(e.spec, data))
    return arrays
