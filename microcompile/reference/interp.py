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

from ..ir import ops
from ..ir.graph import NP_DTYPES, Graph, Node


# op name (or (op name, dtype variant), see ops.variant) -> fn(graph, node, *input arrays)
# -> output array (a list for multi-output ops). Filled by the op-family modules of this
# package with @kernel.
KERNELS: dict = {}


def kernel(*op_names: str, dtype: str | None = None):
    """Register the decorated function as the interpreter kernel of each op named (of its
    `dtype` variant only, e.g. "int16", when given)."""
    assert dtype is None or dtype in ops.VARIANTS, dtype

    def register(fn: Callable[..., np.ndarray]) -> Callable[..., np.ndarray]:
        for name in op_names:
            key = name if dtype is None else (name, dtype)
            assert key not in KERNELS, f"interpreter kernel for {key} registered twice"
            KERNELS[key] = fn
        return fn
    return register


def kernel_of(graph: Graph, node: Node) -> Callable[..., np.ndarray]:
    """The kernel that runs `node`: its dtype variant's when registered, else the op's."""
    v = ops.variant(graph, node)
    return KERNELS.get((node.op, v)) or KERNELS[node.op]


def initial_state(graph: Graph) -> dict[str, np.ndarray]:
    """Fresh persistent state: every variable tensor at zero (its zero point when int8), as
    TFLite's ResetVariableTensors leaves it."""
    state = {}
    for name, t in graph.tensors.items():
        if t.variable:
            fill = t.quant.zero_point[0] if t.dtype == "int8" and t.quant is not None else 0
            state[name] = np.full(t.shape, fill, NP_DTYPES[t.dtype])
    return state


def run(graph: Graph, inputs: dict[str, np.ndarray], keep_all: bool = False,
        state: dict[str, np.ndarray] | None = None) -> dict[str, np.ndarray]:
    """Execute `graph` on `inputs` (by input tensor name).

    Returns the graph outputs by name, or every tensor (constants included) with keep_all.
    Raises ValueError when an input is missing, or has the wrong dtype or shape.
    float32 follows IEEE 754 as the C kernels do: an overflow gives infinity, not a numpy
    RuntimeWarning on the user's terminal.

    Stateful ops (recurrent) update their variable tensors in place in `state` (from
    `initial_state`): pass the same dict to consecutive runs to carry the state over, as
    the device does between inferences; without it every run starts from the initial state.
    """
    env: dict[str, np.ndarray] = {name: t.data for name, t in graph.tensors.items() if t.is_const}
    env.update(initial_state(graph) if state is None else state)
    for name in graph.inputs:
        env[name] = _checked_input(graph, name, inputs)
    for node in graph.nodes:
        args = [env[i] if i else None for i in node.inputs]
        with np.errstate(over="ignore", under="ignore", divide="ignore", invalid="ignore"):
            out = kernel_of(graph, node)(graph, node, *args)
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
