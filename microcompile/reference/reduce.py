"""Interpreter kernel of reduce_max (ops_reduce): the maximum over `axes`; int8 compares raw
values and keeps the input's quantization, as TFLite's reference kernel does."""

from __future__ import annotations

import numpy as np

from .interp import kernel


@kernel("reduce_max")
def _reduce_max(graph, node, x):
    return np.max(x, axis=tuple(node.attrs["axes"]), keepdims=bool(node.attrs.get("keep_dims", False)))

