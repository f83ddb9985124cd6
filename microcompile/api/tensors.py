"""Tensor facts a user needs to feed and read a model: name, shape, dtype, scale, zero point."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph


@dataclass(frozen=True)
class TensorSpec:
    """A model input or output. `scale` and `zero_point` are None for a float tensor;
    real value = scale * (q - zero_point)."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    scale: float | None = None
    zero_point: int | None = None

    def to_json(self) -> dict:
        return {"name": self.name, "shape": list(self.shape), "dtype": self.dtype, "scale": self.scale,
                "zero_point": self.zero_point}


def specs(graph: Graph, names) -> list[TensorSpec]:
    out = []
    for n in names:
        t = graph.tensors[n]
        q = t.quant if t.dtype in ("int8", "int16") else None
        out.append(TensorSpec(n, tuple(t.shape), t.dtype, float(q.scale[0]) if q else None,
                              int(q.zero_point[0]) if q else None))
    return out


def dequantized(graph: Graph, name: str, values: np.ndarray) -> np.ndarray:
    """Output `name`'s values as float32 (int8/int16 dequantized; float returned as it is)."""
    from ..quantization.ptq import dequantize_array

    t = graph.tensors[name]
    if t.dtype in ("int8", "int16") and t.quant is not None:
        return dequantize_array(np.asarray(values), t.quant)
    return np.asarray(values)
