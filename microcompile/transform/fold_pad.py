"""Fold an explicit PAD into the padding of the convolutions or max pools that read it.

PyTorch exports and the TFLite converter put a PAD before many convolutions (a PyTorch
MobileNetV2 has one before every depthwise convolution). A convolution's own padding reads
"the input's zero point" (int8) or 0.0 (float32) for every tap outside the input, exactly
what a PAD with that value writes; a max pool's padding is never the maximum, as a PAD
with the lowest value (-128, -inf) never is. Folding the PAD into the consumer's padding
makes neither the padded copy nor its arena bytes exist.

Folded when: the PAD pads only the two spatial dims of an NHWC tensor, keeps its input's
quantization, is not a graph output, and every consumer is a conv2d / depthwise_conv2d
(pad value = zero point, or 0.0) or a max_pool2d (pad value = the dtype's lowest) reading it
as its data input. The consumer's padding grows by the PAD's; everything else is unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph
from ..reference.vision import pad_value

_CONVS = ("conv2d", "depthwise_conv2d")


def _foldable_value(g: Graph, pad, consumer) -> bool:
    value = pad_value(g, pad)
    x = g.tensors[pad.inputs[0]]
    if consumer.op in _CONVS:
        if x.dtype == "float32":
            return float(value) == 0.0
        return x.quant is not None and x.quant.axis is None and int(value) == x.quant.zp
    if consumer.op == "max_pool2d":
        return (float(value) == -np.inf) if x.dtype == "float32" else int(value) == -128
    return False


@dataclass(frozen=True)
class FoldPad:
    name: str = "fold_pad"

    def __call__(self, g: Graph) -> Graph:
        consumers = g.consumers()
        replaced: dict[str, object] = {}
        dropped: set[str] = set()
        tensors = dict(g.tensors)
        for pad in g.nodes:
            if pad.op not in ("pad", "pad_v2"):
                continue
            src, out = pad.inputs[0], pad.outputs[0]
            x, y = g.tensors[src], g.tensors[out]
            pads = tuple(tuple(p) for p in pad.attrs["pads"])
            users = consumers.get(out, [])
            if (len(x.shape) != 4 or pads[0] != (0, 0) or pads[3] != (0, 0) or min(min(p) for p in pads) < 0
                    or out in g.outputs or not users or x.dtype != y.dtype
                    or (x.quant is not None and not x.quant.same_as(y.quant))):
                continue
            if not all(u.op in (*_CONVS, "max_pool2d") and u.inputs[0] == out and out not in u.inputs[1:]
                       and _foldable_value(g, pad, u) for u in users):
                continue
            (top, bottom), (left, right) = pads[1], pads[2]
            for u in users:
                u = replaced.get(u.name, u)
                t, l, b, r = u.attrs.get("padding", (0, 0, 0, 0))
                replaced[u.name] = u.replace(inputs=(src, *u.inputs[1:]),
                                             attrs=dict(u.attrs, padding=(t + top, l + left, b + bottom, r + right)),
                                             origin=pad.origin + u.origin)
            dropped.add(pad.name)
            del tensors[out]
        if not dropped:
            return g
        nodes = [replaced.get(n.name, n) for n in g.nodes if n.name not in dropped]
        return g.replace(tensors=tensors, nodes=nodes)
