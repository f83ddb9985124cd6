"""Fold every node whose inputs are all constants into a constant tensor.

Requires: the reference interpreter can execute the node. The folded value is computed
with the interpreter's exact (TFLite) semantics, so folding never changes results.

The folded tensors' shapes come from the model file, so each is taken from the compiler's
budget (ir/budget.py) before the interpreter makes it: one tensor, and all this pass makes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import shown
from ..ir import NP_DTYPES, Graph, budget
from ..reference import interp


@dataclass(frozen=True)
class FoldConstants:
    name: str = "fold_constants"

    def __call__(self, g: Graph) -> Graph:
        tensors = dict(g.tensors)
        kept = []
        tally = budget.Tally("the fold_constants pass")
        for n in g.nodes:
            ins = [i for i in n.inputs if i]
            if not ins or not all(tensors[i].is_const for i in ins):
                kept.append(n)
                continue
            for o in n.outputs:
                t = tensors[o]
                tally.take(f"layer {shown(n.name)!r} ({n.op}), folded at compile time", t.shape,
                           np.dtype(NP_DTYPES[t.dtype]).itemsize)
            sub = Graph(name=n.name, tensors={i: tensors[i] for i in ins} | {o: tensors[o] for o in n.outputs},
                        nodes=(n,), inputs=(), outputs=n.outputs)
            values = interp.run(sub, {})
            for o in n.outputs:
                tensors[o] = tensors[o].replace(data=values[o])
        return g.replace(tensors=tensors, nodes=kept)
