"""Graph IR, op registry, verifier, loop IR and the numpy reference interpreter."""

from .graph import DTYPES, NP_DTYPES, Graph, Node, QuantParams, Tensor  # noqa: F401
from .verify import VerifyError, verify  # noqa: F401
from . import ops  # noqa: F401
