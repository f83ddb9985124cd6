"""The numpy reference interpreter (the oracle of every other stage) and the per-op integer
parameters it shares with the lowering (TFLM's "Prepare"), one module per op family, each
holding an op's parameters (@prepare) next to its kernel (@kernel), as TFLM's kernels do."""

from . import interp, qparams  # noqa: F401

# The op families.
from . import nn, shape, vision, elementwise, reduce, recurrent, signal, fused  # noqa: F401,E402
# The int16 variants of the ops above (16x8 quantization).
from . import s16  # noqa: F401,E402
