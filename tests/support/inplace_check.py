"""Run a kernel with its output buffer placed over an input at the shift memory/inplace.py
allows (one byte array, two views) and compare with the reference (tests/memory/test_inplace.py,
tests/lower/test_fused_rows.py)."""

from __future__ import annotations

import numpy as np

from support.lower_cases import random_inputs, reference
from microcompile.ir import NP_DTYPES
from microcompile.lower import lower_node
from microcompile.memory.inplace import node_shifts
from microcompile.schedule import default_schedule
from microcompile.tir.interp import run_primfunc


def aliased_run(g, f, inputs, src: str, shift: int) -> np.ndarray:
    """Run f with the output's bytes placed `shift` bytes above input `src`'s, in one array."""
    y = g.outputs[0]
    xt, yt = g.tensors[src], g.tensors[y]
    x_at = max(0, -shift)
    arena = np.zeros(x_at + max(xt.nbytes, shift + yt.nbytes) + 16, np.uint8)
    arena[x_at:x_at + xt.nbytes] = np.frombuffer(np.ascontiguousarray(inputs[src]).tobytes(), np.uint8)
    place = {src: x_at, y: x_at + shift}
    arrays = {}
    for b in f.buffers:
        if b.scope != "arena":
            continue
        t = g.tensors[b.tensor]
        if b.tensor in place:
            arrays[b.name] = arena[place[b.tensor]:place[b.tensor] + t.nbytes].view(NP_DTYPES[b.dtype])
        else:
            arrays[b.name] = np.ascontiguousarray(inputs[b.tensor]).reshape(-1).copy()
    run_primfunc(f, arrays)
    out = next(b for b in f.buffers if b.scope == "arena" and b.tensor == y)
    return np.array(arrays[out.name]).reshape(yt.shape)


def check_in_place(g, target, seed, wide=None):
    node = g.nodes[0]
    f, _ = default_schedule(lower_node(g, node, target), target, wide=wide)
    ins = random_inputs(g, seed)
    ref = reference(g, ins)
    shifts = node_shifts(g, node)
    assert shifts, f"{node.op} has an in-place trait but no in-place input here"
    for y, x, shift in shifts:
        if shift is None:
            continue
        got = aliased_run(g, f, ins, x, shift)
        assert got.dtype == ref.dtype
        assert np.array_equal(got, ref) if got.dtype == np.int8 else \
            np.allclose(got, ref, rtol=1e-5, atol=1e-6 * max(float(np.abs(ref).max()), 1e-30)), (x, shift)
