"""Graph IR: tensors, nodes and graphs.

Plain records. A pass never mutates a graph it was given; it builds a new one with
`Graph.replace(...)`. Tensors are NHWC. Constant tensors carry their data (numpy).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from .int4 import packed_bytes

# int16: the activations of 16x8 quantization (and recurrent cell states); int64: its biases.
# An int16 without quantization parameters, int32, uint32 and uint64 are plain integers: raw
# audio and the fixed-point values of TFLite Micro's signal ops (ops_signal.py), CAST.
DTYPES = ("int8", "int16", "int32", "int64", "float32", "int4", "uint32", "uint64")
# int4 is a constant's dtype only (the weights of conv2d, depthwise_conv2d and fully_connected,
# TFLite's packed INT4): its values are int8 numbers in -8..7 (`data` is an int8 array), and it
# takes half a byte per element in a file and in flash.
NP_DTYPES = {"int8": np.int8, "int16": np.int16, "int32": np.int32, "int64": np.int64, "float32": np.float32,
             "int4": np.int8, "uint32": np.uint32, "uint64": np.uint64}
# The ops whose weights (input 1) may be int4, on int8 activations.
INT4_WEIGHT_OPS = ("conv2d", "depthwise_conv2d", "fully_connected")
# Quantized activation dtypes: every such tensor carries scale and zero point.
QUANTIZED_DTYPES = ("int8", "int16")


@dataclass(frozen=True, eq=False)
class QuantParams:
    """Affine quantization: real = scale * (q - zero_point).

    Per tensor when `axis` is None (one scale/zero point); per channel along `axis`
    otherwise (one entry per channel, as TFLite's per-channel weights).
    """

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    axis: int | None = None

    @property
    def per_channel(self) -> bool:
        return self.axis is not None

    @property
    def s(self) -> float:
        """The single scale of a per-tensor quantization."""
        assert self.axis is None and len(self.scale) == 1, "per-tensor quantization expected"
        return self.scale[0]

    @property
    def zp(self) -> int:
        assert self.axis is None and len(self.zero_point) == 1, "per-tensor quantization expected"
        return self.zero_point[0]

    def same_as(self, other: QuantParams | None) -> bool:
        return (other is not None and self.axis == other.axis
                and tuple(np.float32(self.scale)) == tuple(np.float32(other.scale))
                and tuple(self.zero_point) == tuple(other.zero_point))

    def to_json(self) -> dict:
        return {"scale": list(self.scale), "zero_point": list(self.zero_point), "axis": self.axis}


@dataclass(frozen=True, eq=False)
class Tensor:
    """A value in the graph. `data` is set for constants (weights, biases, shapes).

    `variable` marks state that persists from one inference to the next (TFLite's
    variable tensors: a recurrent op's hidden and cell state). It is read and updated in
    place by the op that owns it, lives in the state buffer rather than the arena, and
    starts at zero (the zero point for int8, as TFLite resets it). It has no `data`.
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    quant: QuantParams | None = None
    data: np.ndarray | None = None
    variable: bool = False

    @property
    def is_const(self) -> bool:
        return self.data is not None

    @property
    def size(self) -> int:
        # A Python integer: numpy's int64 product of a file's dims can wrap ([65536] * 4 -> 0).
        return math.prod(int(d) for d in self.shape)

    @property
    def nbytes(self) -> int:
        if self.dtype == "int4":
            return packed_bytes(self.size)
        return self.size * np.dtype(NP_DTYPES[self.dtype]).itemsize

    def replace(self, **changes) -> Tensor:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, eq=False)
class Node:
    """One op application. Inputs/outputs name tensors; "" marks an absent optional input."""

    op: str
    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: dict = field(default_factory=dict)
    # Names of the source-model layers this node stands for, after fusion/folding.
    origin: tuple[str, ...] = ()

    def attr(self, key: str, default=None):
        return self.attrs.get(key, default)

    def replace(self, **changes) -> Node:
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, eq=False)
class Graph:
    """A dataflow graph in topological node order.

    `notes` are what a reader accepted but wants the user to know (a stale stored shape, an
    out-of-range quantized dimension it resolved); `inspect` prints them."""

    name: str
    tensors: dict[str, Tensor]
    nodes: tuple[Node, ...]
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def replace(self, **changes) -> Graph:
        if "nodes" in changes:
            changes["nodes"] = tuple(changes["nodes"])
        return dataclasses.replace(self, **changes)

    def tensor(self, name: str) -> Tensor:
        return self.tensors[name]

    def const(self, name: str) -> np.ndarray:
        data = self.tensors[name].data
        assert data is not None, f"tensor {name} is not a constant"
        return data

    def producers(self) -> dict[str, Node]:
        return {out: n for n in self.nodes for out in n.outputs}

    def consumers(self) -> dict[str, list[Node]]:
        uses: dict[str, list[Node]] = {}
        for n in self.nodes:
            for i in n.inputs:
                if i:
                    uses.setdefault(i, []).append(n)
        return uses

    def node_inputs(self, node: Node) -> list[Tensor | None]:
        return [self.tensors[i] if i else None for i in node.inputs]
