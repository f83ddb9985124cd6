"""Graph IR: tensors, nodes and graphs; the op registry with its traits; the verifier and
printer; the fixed-point arithmetic of the TFLite quantization spec."""

from .graph import DTYPES, INT4_WEIGHT_OPS, NP_DTYPES, QUANTIZED_DTYPES, Graph, Node, QuantParams, Tensor  # noqa: F401
from .int4 import INT4_RANGE  # noqa: F401
from .verify import VerifyError, verify  # noqa: F401

# The op registry and its families: each module defines its ops with ops.register(OpDef(...)).
from . import ops, ops_elementwise, ops_fused, ops_patch, ops_recurrent, ops_reduce, ops_shape, ops_signal, ops_vision  # noqa: F401,E402
