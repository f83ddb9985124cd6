"""Lowering: one compute definition (Graph node -> PrimFunc) per op family.

`lower_node(graph, node, target)` looks the op up in LOWERINGS. View ops (reshape) have no
kernel: they alias their input's arena bytes, and `needs_kernel` says so.
"""

from __future__ import annotations

from ..errors import UnsupportedOpError
from ..ir import ops
from ..ir.graph import Graph, Node
from ..ir.tir import PrimFunc
from .activation import lower_activation
from .conv2d import lower_conv2d
from .depthwise import lower_depthwise_conv2d
from .dense import lower_fully_connected
from .elementwise import lower_add
from .pool import lower_average_pool2d
from .softmax import lower_softmax

LOWERINGS = {
    "conv2d": lower_conv2d,
    "depthwise_conv2d": lower_depthwise_conv2d,
    "fully_connected": lower_fully_connected,
    "average_pool2d": lower_average_pool2d,
    "add": lower_add,
    "softmax": lower_softmax,
    "relu": lower_activation,
    "relu6": lower_activation,
    "relu_n1_to_1": lower_activation,
}

# The vision family (transpose conv, max pool, mean, pad, resize), one file per op.
from .max_pool import lower_max_pool2d  # noqa: E402
from .mean import lower_mean  # noqa: E402
from .pad import lower_pad  # noqa: E402
from .resize import lower_resize_bilinear, lower_resize_nearest_neighbor  # noqa: E402
from .transpose_conv import lower_transpose_conv2d  # noqa: E402

LOWERINGS.update({"transpose_conv2d": lower_transpose_conv2d, "max_pool2d": lower_max_pool2d, "mean": lower_mean,
                  "pad": lower_pad, "pad_v2": lower_pad, "resize_nearest_neighbor": lower_resize_nearest_neighbor,
                  "resize_bilinear": lower_resize_bilinear})

# Shape and data-movement ops: strided copies (movement.py).
from .movement import LOWERINGS as _MOVEMENT  # noqa: E402

LOWERINGS.update(_MOVEMENT)

# The elementwise family: broadcasting binary ops, table/float activations, log_softmax.
from .binary import LOWERINGS as _BINARY  # noqa: E402
from .log_softmax import LOWERINGS as _LOG_SOFTMAX  # noqa: E402
from .unary import LOWERINGS as _UNARY  # noqa: E402

LOWERINGS.update({**_BINARY, **_UNARY, **_LOG_SOFTMAX})

from .reduce_max import lower_reduce_max  # noqa: E402

LOWERINGS["reduce_max"] = lower_reduce_max


def needs_kernel(node: Node) -> bool:
    """False for view ops, which only reinterpret their input's bytes."""
    return not ops.get(node.op).is_view


def lower_node(graph: Graph, node: Node, target=None) -> PrimFunc:
    """The loop-IR compute definition of `node`. `target` (a microcompile.target.Target or
    None) is accepted for target-specific lowerings; none of the current ones use it."""
    fn = LOWERINGS.get(node.op)
    if fn is None:
        raise UnsupportedOpError(f"op {node.op} (node {node.name}) has no lowering",
                                 hint=f"supported: {', '.join(sorted(LOWERINGS))}")
    return fn(graph, node, target)


def lower_graph(graph: Graph, target=None) -> list[tuple[Node, PrimFunc]]:
    """Lower every node that needs a kernel, in graph order."""
    return [(n, lower_node(graph, n, target)) for n in graph.nodes if needs_kernel(n)]
