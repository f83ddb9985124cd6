"""Fold an ADD of a constant bias into the fully_connected that feeds it.

PyTorch exports `x @ W + b` (and nn.Linear on inputs of more than two dimensions) as ONNX
MatMul followed by Add; TFLite models can carry the same pair. One fully_connected with a
bias computes it in one kernel and, under PTQ, quantizes it as TFLite does (an int32 bias
at scale s_in * s_w) instead of as two separately quantized ops.

Float32 only: the fully_connected has no fused activation, its output feeds only the ADD
(and is not a graph output), and the other ADD operand is a constant that broadcasts along
the units axis alone (shape (units,), (1, ..., units) or a scalar).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph, Tensor


@dataclass(frozen=True)
class FoldBiasAdd:
    name: str = "fold_bias_add"

    def __call__(self, g: Graph) -> Graph:
        producers, consumers = g.producers(), g.consumers()
        tensors = dict(g.tensors)
        replaced: dict[str, object] = {}   # fully_connected name -> folded node
        dropped: set[str] = set()
        for n in g.nodes:
            if n.op != "add" or n.attrs.get("activation", "NONE") != "NONE":
                continue
            for k in (0, 1):
                src, other = n.inputs[k], tensors[n.inputs[1 - k]]
                fc = producers.get(src)
                bias = _bias_vector(g, fc, src, other, consumers)
                if bias is None or g.tensors[n.outputs[0]].shape != g.tensors[src].shape:
                    continue
                b_name = f"{fc.name}/bias_folded"
                while b_name in tensors:
                    b_name += "_"
                tensors[b_name] = Tensor(b_name, bias.shape, "float32", data=bias)
                replaced[fc.name] = fc.replace(inputs=(fc.inputs[0], fc.inputs[1], b_name), outputs=n.outputs,
                                               origin=fc.origin + n.origin)
                dropped.add(n.name)
                del tensors[src]
                break
        nodes = [replaced.get(n.name, n) for n in g.nodes if n.name not in dropped]
        return g.replace(tensors=tensors, nodes=nodes)


def _bias_vector(g: Graph, fc, src: str, other: Tensor, consumers) -> np.ndarray | None:
    """The new bias of `fc` when adding `other` to its output folds into it, else None."""
    if (fc is None or fc.op != "fully_connected" or fc.attrs.get("activation", "NONE") != "NONE"
            or not other.is_const or other.dtype != "float32" or g.tensors[src].dtype != "float32"
            or len(consumers.get(src, [])) != 1 or src in g.outputs):
        return None
    units = g.tensors[fc.inputs[1]].shape[0]
    if other.size not in (1, units) or (other.size == units and other.shape[-1] != units):
        return None
    add = np.broadcast_to(other.data.reshape(-1), (units,)).astype(np.float32)
    old = g.const(fc.inputs[2]).astype(np.float32) if len(fc.inputs) > 2 and fc.inputs[2] else np.zeros(units, np.float32)
    return (old + add).astype(np.float32)
