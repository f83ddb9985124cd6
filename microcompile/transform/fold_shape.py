"""Replace SHAPE of a statically shaped tensor by an int32 constant.

The TFLite converter emits SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE for a Flatten with a
dynamic batch. Every shape is static once the model is read (a dynamic batch is 1), so
SHAPE is a constant; `fold_constants`, which runs next, then folds the slice and the pack,
and `remove_dead` drops what no output needs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import Graph


@dataclass(frozen=True)
class FoldShape:
    name: str = "fold_shape"

    def __call__(self, g: Graph) -> Graph:
        tensors = dict(g.tensors)
        kept = []
        for n in g.nodes:
            if n.op != "shape":
                kept.append(n)
                continue
            out = n.outputs[0]
            tensors[out] = tensors[out].replace(data=np.array(g.tensors[n.inputs[0]].shape, dtype=np.int32))
        return g.replace(tensors=tensors, nodes=kept)
