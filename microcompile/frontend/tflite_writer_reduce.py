"""tflite_writer support for REDUCE_MAX (ops_reduce): MEAN's axes input and options."""

from __future__ import annotations

import tflite

from . import tflite_writer as w
from .tflite_writer_vision import _mean_inputs, _reducer_options

w._BUILTIN["reduce_max"] = tflite.BuiltinOperator.REDUCE_MAX
w._OPTIONS["reduce_max"] = _reducer_options
w.INPUT_BUILDERS["reduce_max"] = _mean_inputs
