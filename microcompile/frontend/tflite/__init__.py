"""TFLite flatbuffers: the reader (`reader.py`) and the writer (`writer.py`).

Each op family has one converter module (read_*.py, `@converter("CONV_2D", options=...)`)
and one writer module (write_*.py, `@writer("conv2d", "CONV_2D")`), listed here.
"""

from .reader import FILE_IDENTIFIER, list_ops, load_tflite, unique_tensor_names  # noqa: F401
from .writer import write_tflite  # noqa: F401

# The op families, each registering its converters and writers.
from . import read_nn, read_vision, read_shape, read_elementwise, read_reduce  # noqa: F401,E402
from . import write_nn, write_vision, write_shape, write_elementwise, write_reduce  # noqa: F401,E402
