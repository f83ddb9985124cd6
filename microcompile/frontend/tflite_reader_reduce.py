"""TFLite converter of REDUCE_MAX (ops_reduce): MEAN's operands and options."""

from __future__ import annotations

from . import tflite_reader as r
from .tflite_reader_vision import _mean

r._OPTION_FIELDS["REDUCE_MAX"] = ("ReducerOptions", ("KeepDims",))


def _reduce_max(ctx, op):
    _, ins, attrs = _mean(ctx, op)
    return "reduce_max", ins, attrs


r.CONVERTERS["REDUCE_MAX"] = _reduce_max
