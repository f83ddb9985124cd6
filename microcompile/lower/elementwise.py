"""add, with NumPy broadcasting: one loop per output dimension; a broadcast input dimension
gets stride 0 (it drops out of the index).

int8 (reference_integer_ops::Add): both inputs are rescaled to a common scale with
20 bits of headroom, summed, and rescaled to the output, all with the
smaller-than-one-exp multiplier of qparams.add_params. The rescale of an input depends on
its int8 value alone, so the default schedule tabulates it on the host where the flash
allows (schedule/tabulate.py): a 256-entry int32 table per input (1 KiB of flash each)
replaces two multiplies, two roundings and two offsets per element. The output rescale
uses mc_requant.h's exact form with immediate multiplier and shift. Equal shapes run as one
flat loop.
"""

from __future__ import annotations

import numpy as np

from ..ir import fixedpoint
from ..reference import qparams
from ..ir.graph import Graph, Node
from ..tir.nodes import Call, IntImm, Load, Var, add, binop, loops, mul
from .binary import int32_result
from .common import arena, broadcast_index, clamp, i32, lowering, make_func, operand, smaller_than_one
from .saturate import to_int8


def _rescaled(offset: int, left_shift: int, mult: int, shift: int) -> np.ndarray:
    """MBQMSmallerThanOneExp((x + offset) << left_shift, mult, shift) for every int8 x."""
    x = (np.arange(-128, 128, dtype=np.int64) + offset) << left_shift
    return np.asarray(fixedpoint.multiply_by_quantized_multiplier_smaller_than_one_exp(x, mult, shift), np.int64)


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
    consts = []
    if yt.dtype == "int32":
        body = loops(list(zip(idx, shape)), y.store(int32_result("add", node, av, bv), *idx))
        return make_func(g, node, [a, b, y], body)
    p = qparams.add_params(g, node)
    if yt.dtype == "float32":
        result = clamp(binop("add", av, bv), p.act_min, p.act_max)
    else:
        # Each input's rescale depends on its int8 value alone: the default schedule turns it
        # into a 256-entry table (schedule/tabulate.py) where the flash allows.
        r1 = smaller_than_one(mul(add(i32(av), p.input1_offset), 1 << p.left_shift), p.input1_multiplier,
                              p.input1_shift)
        r2 = smaller_than_one(mul(add(i32(bv), p.input2_offset), 1 << p.left_shift), p.input2_multiplier,
                              p.input2_shift)
        total = binop("add", r1, r2)
        bound = int(np.abs(_rescaled(p.input1_offset, p.left_shift, p.input1_multiplier, p.input1_shift)).max()
                    + np.abs(_rescaled(p.input2_offset, p.left_shift, p.input2_multiplier, p.input2_shift)).max())
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
