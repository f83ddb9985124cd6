"""reduce_max: the maximum over `axes` (sorted, non-negative), with keep_dims, as TFLite's
REDUCE_MAX and ONNX's ReduceMax. int8 compares raw values and keeps the input's
quantization (TFLite's reference kernel does no requantization either).
"""

from __future__ import annotations

from .ops import OpDef, register
from .ops_vision import check_reduce, infer_reduce, macs_reduce

register(OpDef("reduce_max", ("input",), attrs={"axes": (), "keep_dims": False}, infer=infer_reduce,
               macs=macs_reduce, quant="same", layout="axis", check=check_reduce))

