"""REDUCE_MAX (ops_reduce) in TFLite: MEAN's operands and options, both ways."""
from __future__ import annotations

from .reader import converter, op_inputs
from .vision import reduce_inputs, reducer_options, reduction_attrs
from .writer import writer

@converter("REDUCE_MAX", options=("ReducerOptions", ("KeepDims",)))
def _reduce_max(ctx, op):
    return "reduce_max", op_inputs(ctx, op, 1, 1), reduction_attrs(ctx, op)


# --- the writers ----------------------------------------------------------------------

writer("reduce_max", "REDUCE_MAX", inputs=reduce_inputs)(reducer_options)
