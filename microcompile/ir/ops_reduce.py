"""reduce_max: the maximum over `axes` (sorted, non-negative), with keep_dims, as TFLite's
REDUCE_MAX and ONNX's ReduceMax. int8 compares raw values and keeps the input's
quantization (TFLite's reference kernel does no requantization either).
"""

from __future__ import annotations

import numpy as np

from . import interp
from .ops import OpDef, register
from .ops_vision import _infer_mean, _macs_mean

register(OpDef("reduce_max", ("input",), attrs={"axes": (), "keep_dims": False}, infer=_infer_mean,
               macs=_macs_mean))


def _reduce_max(graph, node, x):
    return np.max(x, axis=tuple(node.attrs["axes"]), keepdims=bool(node.attrs.get("keep_dims", False)))


interp.KERNELS["reduce_max"] = _reduce_max
