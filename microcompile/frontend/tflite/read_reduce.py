"""TFLite converter of REDUCE_MAX (ops_reduce): MEAN's operands and options."""

from __future__ import annotations

from .read_vision import reduction_attrs
from .reader import converter, op_inputs


@converter("REDUCE_MAX", options=("ReducerOptions", ("KeepDims",)))
def _reduce_max(ctx, op):
    return "reduce_max", op_inputs(ctx, op, 1, 1), reduction_attrs(ctx, op)
