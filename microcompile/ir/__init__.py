"""Graph IR, op registry, verifier, loop IR and the numpy reference interpreter."""

from .graph import DTYPES, NP_DTYPES, Graph, Node, QuantParams, Tensor  # noqa: F401
from .verify import VerifyError, verify  # noqa: F401
from . import ops  # noqa: F401
from . import ops_shape  # noqa: F401  (shape / data-movement ops register themselves)
from . import ops_vision  # noqa: F401  (vision ops: transpose conv, max pool, mean, pad, resize)
from . import interp_vision  # noqa: F401,E402  (their interpreter kernels and parameters)
from . import ops_elementwise, interp_elementwise  # noqa: F401,E402  (elementwise ops, their kernels and parameters)
from . import ops_reduce  # noqa: F401,E402  (reduce_max and its kernel)
