"""Rewrite SPACE_TO_BATCH_ND -> CONV_2D / DEPTHWISE_CONV_2D -> BATCH_TO_SPACE_ND into one
dilated convolution.

The TFLite converter emits this sandwich for a dilated convolution: the input is padded
and split into block_h * block_w phase images, each convolved without dilation, and the
results interleaved and cropped. Output pixel r of the sandwich reads padded-input rows
r + crop_top + i * block, exactly what a convolution with dilation = block and explicit
padding (pad_top - crop_top, ..., pad_right - crop_right) reads. SPACE_TO_BATCH_ND pads
with the zero point, which contributes nothing, as the convolution's own padding does, so
the rewrite is bit-exact for int8 too.

Requires: the inner conv has stride 1, dilation 1 and no padding; the two block shapes
agree; every rewritten padding is >= 0; the intermediate tensors have no other consumer
and (int8) the copies keep their quantization. Otherwise the pattern is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..ir import Graph, Node, ops

_CONVS = ("conv2d", "depthwise_conv2d")


def _same_quant(a, b) -> bool:
    return a.quant is None and b.quant is None or (a.quant is not None and a.quant.same_as(b.quant))


@dataclass(frozen=True)
class FoldDilatedConv:
    name: str = "fold_dilated_conv"

    def _rewrite(self, g: Graph, s2b: Node, conv: Node, b2s: Node) -> Node | None:
        if (tuple(conv.attrs.get("stride", (1, 1))) != (1, 1) or tuple(conv.attrs.get("dilation", (1, 1))) != (1, 1)
                or tuple(conv.attrs.get("padding", (0, 0, 0, 0))) != (0, 0, 0, 0)
                or tuple(s2b.attrs["block_shape"]) != tuple(b2s.attrs["block_shape"])):
            return None
        t = g.tensors
        if not (_same_quant(t[s2b.inputs[0]], t[s2b.outputs[0]]) and _same_quant(t[conv.outputs[0]], t[b2s.outputs[0]])):
            return None
        ((pt, pb), (pl, pr)), ((ct, cb), (cl, cr)) = s2b.attrs["paddings"], b2s.attrs["crops"]
        padding = (pt - ct, pl - cl, pb - cb, pr - cr)
        if min(padding) < 0:
            return None
        node = conv.replace(inputs=(s2b.inputs[0],) + conv.inputs[1:], outputs=b2s.outputs,
                            attrs=dict(conv.attrs, dilation=tuple(s2b.attrs["block_shape"]), padding=padding),
                            origin=s2b.origin + conv.origin + b2s.origin)
        probe = g.replace(nodes=(node,))
        ((shape, _),) = ops.get(node.op).infer(probe, node)
        return node if tuple(shape) == tuple(t[b2s.outputs[0]].shape) else None

    def __call__(self, g: Graph) -> Graph:
        producers, consumers = g.producers(), g.consumers()
        replaced: dict[str, Node] = {}   # b2s node name -> the dilated conv
        dropped: set[str] = set()
        for b2s in g.nodes:
            if b2s.op != "batch_to_space_nd":
                continue
            conv = producers.get(b2s.inputs[0])
            s2b = producers.get(conv.inputs[0]) if conv is not None and conv.op in _CONVS else None
            if s2b is None or s2b.op != "space_to_batch_nd":
                continue
            inner = (s2b.outputs[0], conv.outputs[0])
            if any(len(consumers.get(x, [])) != 1 or x in g.outputs for x in inner):
                continue
            node = self._rewrite(g, s2b, conv, b2s)
            if node is not None:
                replaced[b2s.name] = node
                dropped |= {s2b.name, conv.name}
        if not replaced:
            return g
        # The conv takes the place of the batch_to_space_nd: all of its inputs exist there.
        nodes = [replaced.get(n.name, n) for n in g.nodes if n.name not in dropped]
        gone = {x for n in g.nodes if n.name in dropped for x in n.outputs}
        return g.replace(nodes=nodes, tensors={k: v for k, v in g.tensors.items() if k not in gone})
