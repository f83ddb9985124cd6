"""add, with NumPy broadcasting: one loop per output dimension; a broadcast input dimension
gets stride 0 (it drops out of the index).

int8 (reference_integer_ops::Add): both inputs are rescaled to a common scale with
20 bits of headroom, summed, and rescaled to the output, all with the
smaller-than-one-exp multiplier of qparams.add_params. The rescale of an input depends on
its int8 value alone, so it is done on the host: a 256-entry int32 table per input (1 KiB
of flash each) replaces two multiplies, two roundings and two offsets per element. The
output rescale uses mc_requant.h's exact form with immediate multiplier and shift. Equal
shapes run as one flat loop.
"""

from __future__ import annotations

import numpy as np

from ..ir import fixedpoint
from ..reference import qparams
from ..ir.graph import Graph, Node
from ..tir.nodes import Call, IntImm, Load, Var, add, binop, loops
from .common import arena, broadcast_index, clamp, constant, i32, lowering, make_func, operand, smaller_than_one
from .saturate import to_int8


def _rescale_table(name: str, node: Node, offset: int, left_shift: int, mult: int, shift: int):
    """x -> MBQMSmallerThanOneExp((x + offset) << left_shift, mult, shift) for every int8 x."""
    x = (np.arange(-128, 128, dtype=np.int64) + offset) << left_shift
    table = fixedpoint.multiply_by_quantized_multiplier_smaller_than_one_exp(x, mult, shift)
    return constant(name, np.asarray(table, np.int32), f"{node.name} rescaled input for x = -128..127")


@lowering("add")
def lower_add(g: Graph, node: Node, target=None):
    at, bt, yt = (g.tensors[t] for t in (*node.inputs, node.outputs[0]))
    if at.shape == bt.shape == yt.shape:    # no broadcasting: one flat loop
        shape = (yt.size,)
        a, b, y = operand(g, at.name, "a", shape), operand(g, bt.name, "b", shape), arena(g, yt.name, "y", shape)
    else:
        shape = yt.shape
        a, b, y = operand(g, at.name, "a"), operand(g, bt.name, "b"), arena(g, yt.name, "y")
    idx = [Var(f"i{k}") for k in range(len(shape))]
    av = Load(a, broadcast_index(a, shape, idx))
    bv = Load(b, broadcast_index(b, shape, idx))
    p = qparams.add_params(g, node)
    consts = []
    if yt.dtype == "float32":
        result = clamp(binop("add", av, bv), p.act_min, p.act_max)
    else:
        t1 = _rescale_table("rescale_a", node, p.input1_offset, p.left_shift, p.input1_multiplier, p.input1_shift)
        t2 = _rescale_table("rescale_b", node, p.input2_offset, p.left_shift, p.input2_multiplier, p.input2_shift)
        consts = [t1, t2]
        total = binop("add", Load(t1, add(i32(av), 128)), Load(t2, add(i32(bv), 128)))
        bound = int(np.abs(t1.data.astype(np.int64)).max() + np.abs(t2.data.astype(np.int64)).max())
        if p.output_multiplier >= 0:    # always, from QuantizeMultiplierSmallerThanOneExp
            # mc_requant.h: the rshift form needs a right shift >= 1 and |total| < 2^30.
            name = ("mc_mul_by_qm_pos_rshift" if p.output_shift <= -1 and bound < 2**30
                    else "mc_mul_by_qm_pos_right")
            scaled = Call(name, (total, IntImm(p.output_multiplier), IntImm(-p.output_shift)), "int32")
        else:
            scaled = smaller_than_one(total, p.output_multiplier, p.output_shift)
        result = to_int8(add(scaled, p.output_offset), p.act_min, p.act_max, target)
    body = loops(list(zip(idx, shape)), y.store(result, *idx))
    return make_func(g, node, [a, b, y, *consts], body)
