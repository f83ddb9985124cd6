"""Lowering: one compute definition (Graph node -> PrimFunc) per op family.

Each family module registers its functions with `@lowering("op", ...)` (common.py);
`lower_node(graph, node, target)` looks the op up in LOWERINGS. View ops (reshape, squeeze,
expand_dims) have no kernel: they alias their input's arena bytes, and `needs_kernel` says so.
"""

from __future__ import annotations

from ..errors import UnsupportedOpError
from ..ir import ops
from ..ir.graph import Graph, Node
from ..tir.nodes import PrimFunc
from .common import LOWERINGS, lowering_of

# The op families, each registering its lowerings with @lowering.
from . import (activation, binary, conv2d, dense, depthwise, elementwise, log_softmax, matmul, max_pool,  # noqa: F401,E402
               mean, movement, pad, pool, recurrent, reduce_max, resize, signal, softmax, transpose_conv, unary)
# Fused row groups (layer norm, attention): the ops above, one row at a time; patch stages
# (patch_stage): the ops above, band by band.
from . import fused, patch  # noqa: F401,E402
# The int16 variants (16x8 quantization) of the ops above.
from . import s16  # noqa: F401,E402


def needs_kernel(node: Node) -> bool:
    """False for view ops, which only reinterpret their input's bytes."""
    return not ops.get(node.op).is_view


def lower_node(graph: Graph, node: Node, target=None) -> PrimFunc:
    """The loop-IR compute definition of `node` for `target` (a microcompile.target.Target,
    or None for the portable form)."""
    fn = lowering_of(graph, node)
    w = graph.tensors[node.inputs[1]] if len(node.inputs) > 1 and node.inputs[1] else None
    if w is not None and w.dtype == "int4":
        # The kernel computes on int4 weights as the int8 numbers they are; how they are stored
        # in flash (packed int4, int8 or int16) is the compiler's choice (compiler/plan.py).
        graph = graph.replace(tensors={**graph.tensors, w.name: w.replace(dtype="int8")})
    if fn is None:
        raise UnsupportedOpError(f"op {node.op} (node {node.name}) has no lowering",
                                 hint=f"supported: {', '.join(sorted(k for k in LOWERINGS if isinstance(k, str)))}")
    return fn(graph, node, target)


def lower_graph(graph: Graph, target=None) -> list[tuple[Node, PrimFunc]]:
    """Lower every node that needs a kernel, in graph order."""
    return [(n, lower_node(graph, n, target)) for n in graph.nodes if needs_kernel(n)]
