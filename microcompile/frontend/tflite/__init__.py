"""TFLite flatbuffers: the reader (`reader.py`) and the writer (`writer.py`).

Each op family has one module here holding both directions: a converter per TFLite builtin
(`@converter("CONV_2D", options=...)`) and a writer per op (`@writer("conv2d", "CONV_2D")`).
"""

from .reader import FILE_IDENTIFIER, list_ops, load_tflite, unique_tensor_names  # noqa: F401
from .writer import write_tflite  # noqa: F401

# The op families, each registering its converters and writers.
from . import nn, vision, shape, elementwise, reduce, recurrent, signal  # noqa: F401,E402
