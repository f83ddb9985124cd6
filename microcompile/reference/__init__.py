"""The numpy reference interpreter (the oracle of every other stage) and the per-op integer
parameters it shares with the lowering (TFLM's "Prepare")."""

from . import interp, qparams  # noqa: F401

# The op families: interpreter kernels (@kernel) and their parameters (@prepare).
from . import nn, shape, vision, elementwise, reduce  # noqa: F401,E402
from . import qparams_vision, qparams_elementwise  # noqa: F401,E402
