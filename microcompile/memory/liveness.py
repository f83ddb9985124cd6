"""Liveness analysis: which arena buffers exist, and during which kernel steps.

Step i is the i-th node of the graph. A buffer lives from the step that writes it to the
last step that reads it (inclusive), so a kernel's output never shares bytes with its
inputs. Graph inputs live from step 0; graph outputs to the end. View ops (reshape) make
no buffer: their output aliases the root buffer of their input.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph, ops

ALIGNMENT = 16


@dataclass(frozen=True)
class BufferReq:
    """One arena buffer to place: `size` bytes, live on steps first..last inclusive."""

    name: str
    size: int
    first: int
    last: int
    align: int = ALIGNMENT


def scratch_name(node_name: str) -> str:
    return f"scratch:{node_name}"


def aliases(g: Graph) -> dict[str, str]:
    """Map every non-constant tensor to the buffer that holds its bytes."""
    root: dict[str, str] = {}
    for n in g.nodes:
        if ops.get(n.op).is_view:
            src = n.inputs[0]
            root[n.outputs[0]] = root.get(src, src)
    return root


def analyze(g: Graph, scratch: dict[str, int] | None = None) -> list[BufferReq]:
    """Buffers for every activation tensor (views resolved) plus per-kernel scratch."""
    scratch = scratch or {}
    root = aliases(g)
    end = len(g.nodes)
    first: dict[str, int] = {}
    last: dict[str, int] = {}

    def touch(name: str, step: int):
        t = g.tensors[name]
        if t.is_const:
            return
        b = root.get(name, name)
        first[b] = min(first.get(b, step), step)
        last[b] = max(last.get(b, step), step)

    for name in g.inputs:
        touch(name, 0)
    for step, n in enumerate(g.nodes):
        for name in n.inputs:
            if name:
                touch(name, step)
        for name in n.outputs:
            touch(name, step)
    for name in g.outputs:
        touch(name, end)

    reqs = [BufferReq(b, g.tensors[b].nbytes, first[b], last[b]) for b in first]
    for step, n in enumerate(g.nodes):
        size = scratch.get(n.name, 0)
        if size:
            reqs.append(BufferReq(scratch_name(n.name), size, step, step))
    return reqs
