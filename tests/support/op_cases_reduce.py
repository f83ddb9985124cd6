"""Test plans and graph builders of reduce_max (microcompile/ir/ops_reduce.py): MEAN's
shape/axes cases (op_cases_vision), int8 and float32. Merged into op_cases on import."""

from __future__ import annotations

from support.op_cases import BUILDERS, PLANS
from support.op_cases_vision import _MEAN_CASES

PLANS["reduce_max"] = {"case": _MEAN_CASES, "keep_dims": (True, False)}


def _reduce_max(case, b):
    shape, axes = case["case"]
    x = b.act("x", shape)
    attrs = {"axes": tuple(sorted({a % len(shape) for a in axes})), "keep_dims": case["keep_dims"]}
    return (x,), attrs, b.tensors[x].quant   # TFLite keeps the input's quantization


BUILDERS["reduce_max"] = _reduce_max
