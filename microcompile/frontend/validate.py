"""Validation of a freshly imported model, beyond the structural `verify`.

Both readers call `validate` on every graph they produce, so that a corrupted but parseable
file is a ModelFormatError (exit 2) naming the tensor or the layer, and an exception from a
later stage (a pass, a lowering, the interpreter) can only mean a bug in microcompile:

- it is a model: it has outputs, computed at run time, and no empty tensors (runnable.py);
- every tensor, and all of them together, are of a size a compiler for microcontrollers can
  handle (ir/budget.py: the reference interpreter holds them all at once);
- float constants are finite (NaN weights come from corruption, not from training);
- every node passes `reference.qparams.check`, TFLM's "Prepare": its requantization
  multipliers are representable and its int32 accumulator cannot overflow.

Quantization parameters (finite positive scales, zero points in range) and op shapes are
checked by `ir.verify`, which the readers run first.
"""

from __future__ import annotations

import numpy as np

from ..errors import ModelFormatError
from ..ir import Graph, Node, budget, ops
from ..ir.fixedpoint import KernelParamsError
from ..reference import qparams
from .runnable import check_runnable

# Above any model meant for a microcontroller (MLPerf Tiny's largest: 12.5 M MACs); the
# reference interpreter runs every layer once per deploy.
MACS_MAX = 10**10

HINT = "the file is corrupted or was not written by a TFLite/ONNX exporter; re-export the model"


def layer(node: Node) -> str:
    """How messages name a layer: our node name and the model's own layer names."""
    origin = ", ".join(node.origin)
    return f"layer {node.name}" + (f" ({origin})" if origin and origin != node.name else "")


def validate(graph: Graph, label: str) -> Graph:
    """Raise ModelFormatError (prefixed with `label`, the file) for what a kernel cannot
    compute; return `graph` for chaining."""
    def fail(msg: str):
        raise ModelFormatError(f"{label}: {msg}", hint=HINT)

    check_runnable(graph, label)
    total = 0
    for name, t in graph.tensors.items():
        total += t.nbytes
        if t.nbytes > budget.TENSOR_BYTES:
            fail(f"tensor {name!r} of shape {t.shape} needs {t.nbytes:,} bytes, more than the "
                 f"{budget.TENSOR_BYTES // budget.MIB} MiB microcompile accepts for one tensor")
        if t.is_const and t.dtype == "float32" and not np.isfinite(t.data).all():
            bad = np.argwhere(~np.isfinite(t.data))[0]
            fail(f"constant {name!r} holds {t.data[tuple(bad)]} at index {list(map(int, bad))}; "
                 "weights must be finite numbers")
    if total > budget.TOTAL_BYTES:   # many tensors each under the limit of one
        fail(f"the model's tensors together need {total:,} bytes, more than the "
             f"{budget.TOTAL_BYTES // budget.MIB} MiB microcompile accepts for one model")
    macs = 0
    for node in graph.nodes:
        try:
            qparams.check(graph, node)
        except KernelParamsError as e:
            fail(f"{layer(node)}, {node.op}: {e}")
        macs += ops.get(node.op).macs(graph, node)
    if macs > MACS_MAX:
        fail(f"the model needs {macs:,} multiply-accumulates per inference, more than the {MACS_MAX:,} "
             "microcompile accepts (a model for a microcontroller needs far fewer)")
    return graph
