"""Liveness analysis: which arena buffers exist, during which kernel steps, and which may
share bytes.

Step i is the i-th node of the graph, in execution order (memory/order.py picks that order).
A buffer lives from the step that writes it to the last step that reads it (inclusive).
Graph inputs live from step 0; graph outputs to the end. A view op (reshape) makes no
buffer: its output aliases the root buffer of its input. An in-place concatenation
(memory/inplace.py) makes each of its inputs a slice of its output's buffer, so the
producers write straight into place. Each kernel's scratch lives for its own step.

Since an output and its inputs are all live at the kernel's step, they never share bytes,
except where an `Overlap` says the kernel may write over an input that dies at that step.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph, ops

ALIGNMENT = 16


@dataclass(frozen=True)
class BufferReq:
    """One arena buffer to place: `size` bytes, live on steps first..last inclusive. `given`:
    a graph input, in the arena before step 0 (mc_input writes it), so the first kernel may
    write over it as over any input it reads last."""

    name: str
    size: int
    first: int
    last: int
    align: int = ALIGNMENT
    given: bool = False


@dataclass(frozen=True)
class Overlap:
    """`out` may share bytes with `src` (both root buffers) when it is placed at most
    `max_shift` bytes above `src`: offset(out) - offset(src) <= max_shift. The kernel that
    writes `out` reads `src` for the last time, and never writes a byte of `out` before it has
    read the bytes of `src` at that address for the last time (memory/inplace.py derives
    max_shift from the kernel's access order; 0 is an exact in-place update)."""

    out: str
    src: str
    max_shift: int


@dataclass(frozen=True)
class Alias:
    """A tensor whose bytes are `root`'s, starting `offset` bytes in."""

    root: str
    offset: int = 0


def scratch_name(node_name: str) -> str:
    return f"scratch:{node_name}"


def aliases(g: Graph, slices: dict[str, Alias] | None = None) -> dict[str, Alias]:
    """Map every tensor that has no buffer of its own to the buffer (and offset) holding it:
    view outputs, and the concatenation slices of `slices` (input tensor -> Alias into the
    concatenation's output)."""
    out: dict[str, Alias] = {}

    def resolve(name: str) -> Alias:
        # Iterative: views of views and slices of slices chain as long as the graph does.
        offset = 0
        while True:
            a = out.get(name) or (slices or {}).get(name)
            if a is None:
                return Alias(name, offset)
            name, offset = a.root, offset + a.offset

    for name in slices or {}:
        out[name] = resolve(name)
    for n in g.nodes:
        if ops.get(n.op).is_view:
            out[n.outputs[0]] = resolve(n.inputs[0])
    return {k: resolve(k) for k in out}


def analyze(g: Graph, scratch: dict[str, int] | None = None, alias: dict[str, Alias] | None = None) -> list[BufferReq]:
    """Buffers for every activation tensor (views and slices resolved) plus per-kernel scratch."""
    scratch = scratch or {}
    alias = aliases(g) if alias is None else alias
    end = len(g.nodes)
    first: dict[str, int] = {}
    last: dict[str, int] = {}

    def touch(name: str, step: int):
        t = g.tensors[name]
        if t.is_const or t.variable:   # flash, or the state buffer (memory.plan.plan_state)
            return
        b = alias[name].root if name in alias else name
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

    given = {alias[i].root if i in alias else i for i in g.inputs}
    reqs = [BufferReq(b, g.tensors[b].nbytes, first[b], last[b], given=b in given) for b in first]
    for step, n in enumerate(g.nodes):
        size = scratch.get(n.name, 0)
        if size:
            reqs.append(BufferReq(scratch_name(n.name), size, step, step))
    return reqs


def valid_overlaps(reqs: list[BufferReq], overlaps) -> list[Overlap]:
    """The overlaps that hold under these lifetimes: `src`, born earlier (or a graph input),
    dies at the step where `out` is born. (So along a chain x -> y over x -> z over y, x and z
    are never live together.)"""
    by_name = {r.name: r for r in reqs}
    return [o for o in overlaps if o.out in by_name and o.src in by_name and o.out != o.src
            and (by_name[o.src].first < by_name[o.out].first or by_name[o.src].given)
            and by_name[o.out].first == by_name[o.src].last]


def overlap_credit(src: BufferReq, out: BufferReq, max_shift: int) -> int:
    """The most bytes `out` can share with `src` under `max_shift`: out placed max_shift below
    src's start (or at it, when max_shift >= 0)."""
    t = min(max_shift, 0)
    union = max(src.size - t, out.size)
    return max(0, src.size + out.size - union)


def live_bytes(reqs: list[BufferReq], overlaps=(), steps: int | None = None) -> list[int]:
    """Per step, the bytes that must be distinct: the sizes of the live buffers, less what an
    output may share with an input it overwrites in place. Its maximum is a lower bound of
    any arena (alignment aside)."""
    steps = max((r.last for r in reqs), default=0) if steps is None else steps
    by_name = {r.name: r for r in reqs}
    credit: dict[int, dict[str, int]] = {}
    for o in valid_overlaps(reqs, overlaps):
        src, out = by_name[o.src], by_name[o.out]
        per_out = credit.setdefault(out.first, {})
        per_out[o.out] = min(out.size, per_out.get(o.out, 0) + overlap_credit(src, out, o.max_shift))
    # A difference array (+size at birth, -size after death), summed once: linear in the
    # buffers and steps, where a sum over every buffer at every step was quadratic in a chain.
    delta = [0] * (steps + 2)
    for r in reqs:
        if r.first <= steps:
            delta[max(r.first, 0)] += r.size
            delta[min(r.last, steps) + 1] -= r.size
    out, total = [], 0
    for s in range(steps + 1):
        total += delta[s]
        out.append(total - sum(credit.get(s, {}).values()))
    return out


def lower_bound(reqs: list[BufferReq], overlaps=()) -> int:
    """The largest number of bytes live at any step (in-place sharing credited)."""
    return max(live_bytes(reqs, overlaps), default=0)
