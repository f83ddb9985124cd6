"""The numpy reference interpreter: executes any Graph; the oracle for every other stage.

int8 results are bit-exact with LiteRT's reference kernels (BUILTIN_REF): every integer
parameter comes from `qparams` (the same numbers the C lowering uses) and every rounding
step from `fixedpoint`. float32 ops compute in float32 as TFLite does (summation order
differs, so results agree to about 1e-6 relative).

Integer convolutions accumulate in float64 matmuls: int8 products summed over any
realistic window stay far below 2^53, so the float64 result is exact and BLAS-fast.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from ..ir.graph import NP_DTYPES, Graph


# op name -> fn(graph, node, *input arrays) -> output array (a list for multi-output ops).
# Filled by the op-family modules of this package with @kernel.
KERNELS: dict[str, Callable[..., np.ndarray]] = {}


def kernel(*op_names: str):
    """Register the decorated function as the interpreter kernel of each op named."""
    def register(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
        for name in op_names:
            assert name not in KERNELS, f"interpreter kernel for {name} registered twice"
            KERNELS[name] = fn
        return fn
    return register


def run(graph: Graph, inputs: dict[str, np.ndarray], keep_all: bool = False) -> dict[str, np.ndarray]:
    """Execute `graph` on `inputs` (by input tensor name).

    Returns the graph outputs by name, or every tensor (constants included) with keep_all.
    Raises ValueError when an input is missing, or has the wrong dtype or shape.
    float32 follows IEEE 754 as the C kernels do: an overflow gives infinity, not a numpy
    RuntimeWarning on the user's terminal.
    """
    env: dict[str, np.ndarray] = {name: t.data for name, t in graph.tensors.items() if t.is_const}
    for name in graph.inputs:
        env[name] = _checked_input(graph, name, inputs)
    for node in graph.nodes:
        args = [env[i] if i else None for i in node.inputs]
        with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
            out = KERNELS[node.op](graph, node, *args)
        # A multi-output node (split, unpack) returns one array per output.
        for name, value in zip(node.outputs, out if len(node.outputs) > 1 else [out]):
            t = graph.tensors[name]
            env[name] = np.asarray(value).astype(NP_DTYPES[t.dtype], copy=False).reshape(t.shape)
    if keep_all:
        return env
    return {name: env[name] for name in graph.outputs}


def _checked_input(graph: Graph, name: str, inputs: dict[str, np.ndarray]) -> np.ndarray:
    if name not in inputs:
        raise ValueError(f"missing input {name!r}; the graph inputs are {list(graph.inputs)}")
    t = graph.tensors[name]
    x = np.asarray(inputs[name])
    if x.dtype != np.dtype(NP_DTYPES[t.dtype]):
        raise ValueError(f"input {name!r} has dtype {x.dtype}, expected {t.dtype}")
    if tuple(x.shape) != tuple(t.shape):
        raise ValueError(f"input {name!r} has shape {tuple(x.shape)}, expected {tuple(t.shape)}")
    return x
