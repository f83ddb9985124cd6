"""The graph pass pipeline: one literal list, run in order, verified after every pass."""

from __future__ import annotations

from typing import Callable

from ..ir import Graph, verify
from .cancel_transposes import CancelTransposes
from .fold_constants import FoldConstants
from .fold_bias_add import FoldBiasAdd
from .fold_dilated_conv import FoldDilatedConv
from .fold_pad import FoldPad
from .fold_shape import FoldShape
from .fuse_activation import FuseActivation
from .fuse_rows import FuseRows
from .remove_dead import RemoveDeadCode

PIPELINE = [
    FoldShape(),         # SHAPE of a static tensor -> constant (the Flatten-with-dynamic-batch chain)
    FoldConstants(),     # evaluate any node whose inputs are all constants, at compile time
    CancelTransposes(),  # sink layout transposes (ONNX NCHW import) and cancel inverse pairs
    FoldDilatedConv(),   # SPACE_TO_BATCH_ND -> conv -> BATCH_TO_SPACE_ND -> one dilated conv
    FoldPad(),           # PAD -> conv/depthwise/max pool: the consumer's own padding, no padded copy
    FoldBiasAdd(),       # fully_connected -> ADD of a constant bias (PyTorch's MatMul + Add) -> one op
    FuseActivation(),    # standalone RELU/RELU6 -> the producer's fused clamp (when exact)
    FuseRows(),          # a layer norm's ops, an attention head's ops -> one node run row by row
    RemoveDeadCode(),    # drop nodes and tensors that no output depends on
]


# Before post-training quantization, whose result is written as a .tflite: everything but
# FoldPad, whose explicit (e.g. asymmetric) paddings TFLite's SAME/VALID cannot always express,
# and FuseRows, whose fused nodes are kernels, not TFLite ops (PTQ quantizes their parts).
BEFORE_QUANTIZE = [p for p in PIPELINE if not isinstance(p, (FoldPad, FuseRows))]
# CompileOptions(fuse_rows=False): every layer norm and attention head as its ops.
WITHOUT_FUSE_ROWS = [p for p in PIPELINE if not isinstance(p, FuseRows)]


def run(g: Graph, passes=None, dump: Callable[[str, Graph], None] | None = None) -> Graph:
    """Run `passes` (default PIPELINE) on `g`; verify after each; `dump(name, g)` sees each result."""
    verify(g)
    for p in PIPELINE if passes is None else passes:
        g = verify(p(g))
        if dump is not None:
            dump(p.name, g)
    return g
