"""Shared by the lowering and schedule tests: op cases from tests/ir/op_cases.py, lowered
and run through the loop-IR interpreter."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ir"))

from op_cases import build_graph, cases, random_inputs  # noqa: E402,F401

from microcompile.ir import Graph, interp  # noqa: E402
from microcompile.ir.tir import PrimFunc  # noqa: E402
from microcompile.ir.tir_interp import run_primfunc  # noqa: E402

KERNEL_OPS = ("conv2d", "depthwise_conv2d", "fully_connected", "average_pool2d", "add", "softmax",
              "relu", "relu6", "relu_n1_to_1")


def run_lowered(g: Graph, f: PrimFunc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """Run a single-op graph's PrimFunc in the loop-IR interpreter; its output, shaped."""
    arrays = {b.name: inputs[b.tensor] for b in f.buffers if b.scope == "arena" and b.tensor in inputs}
    out_buf = next(b for b in f.buffers if b.scope == "arena" and b.tensor == g.outputs[0])
    return run_primfunc(f, arrays)[out_buf.name].reshape(g.tensors[g.outputs[0]].shape)


def matches(out: np.ndarray, ref: np.ndarray) -> bool:
    """int8 bit-exact; float32 within rtol 1e-5 (atol a millionth of the tensor's magnitude)."""
    if out.dtype == np.int8:
        return np.array_equal(out, ref)
    return np.allclose(out, ref, rtol=1e-5, atol=1e-6 * max(float(np.abs(ref).max()), 1e-30))


def reference(g: Graph, inputs) -> np.ndarray:
    return interp.run(g, inputs)[g.outputs[0]]
