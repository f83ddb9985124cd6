"""TFLite writer of REDUCE_MAX (ops_reduce): MEAN's axes input and options."""

from __future__ import annotations

from .write_vision import reduce_inputs, reducer_options
from .writer import writer

writer("reduce_max", "REDUCE_MAX", inputs=reduce_inputs)(reducer_options)
