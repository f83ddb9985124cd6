"""Fuse a standalone RELU/RELU6/RELU_N1_TO_1 into the op that produces its input.

The producer then clamps in its store (TFLite's fused_activation_function). For int8 this
is only exact when the activation does not requantize, i.e. its input and output share
scale and zero point; otherwise the two roundings differ and the node is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph, ops

@dataclass(frozen=True)
class FuseActivation:
    name: str = "fuse_activation"

    def __call__(self, g: Graph) -> Graph:
        producers, consumers = g.producers(), g.consumers()
        tensors = dict(g.tensors)
        replaced: dict[str, object] = {}   # producer name -> fused node
        dropped: set[str] = set()
        for n in g.nodes:
            act = ops.STANDALONE_ACTIVATION.get(n.op)
            if act is None:
                continue
            src = n.inputs[0]
            p = producers.get(src)
            p = replaced.get(p.name, p) if p is not None else None
            # A producer whose op declares an `activation` attribute clamps in its epilogue.
            if (p is None or "activation" not in ops.get(p.op).attrs or p.attrs.get("activation", "NONE") != "NONE"
                    or len(consumers.get(src, [])) != 1 or src in g.outputs):
                continue
            tin, tout = tensors[src], tensors[n.outputs[0]]
            if tin.dtype == "int8" and not tin.quant.same_as(tout.quant):
                continue
            replaced[p.name] = p.replace(attrs=dict(p.attrs, activation=act), outputs=n.outputs,
                                         origin=p.origin + n.origin)
            dropped.add(n.name)
            del tensors[src]
        nodes = [replaced.get(n.name, n) for n in g.nodes if n.name not in dropped]
        return g.replace(tensors=tensors, nodes=nodes)
