"""Multi-op models that put the ops otherwise tested only on the host gcc onto a Cortex-M:
one model of the elementwise family and one of the shape family, each in float32 (soft-float
on the Cortex-M3) and int8 (microcompile's own PTQ, int8 inputs and outputs), so that one
firmware per model covers many ops.

`model(family, dtype)` returns the graph; `COVERED[family]` lists the ops it must still hold
after the graph passes (a fused or folded op would run no kernel of its own).
"""

from __future__ import annotations

import numpy as np

from microcompile.ir import Graph
from microcompile.quantization import QuantizeOptions, quantize

from support.multi_op_models import _Model

COVERED = {
    "elementwise": ("sub", "mul", "squared_difference", "maximum", "minimum", "prelu", "leaky_relu", "hard_swish",
                    "relu6", "tanh", "relu_n1_to_1", "logistic", "log_softmax", "reduce_max"),
    "shape": ("transpose", "depth_to_space", "space_to_depth", "slice", "split", "concatenation", "split_v",
              "squeeze", "expand_dims", "gather", "unpack"),
}
FLOAT_ONLY = {"elementwise": ("div",), "shape": ()}


def elementwise(dtype: str) -> Graph:
    """Two inputs through every binary op, then a chain of activations (none of which can be
    fused into its producer), log_softmax and reduce_max heads; float32 adds a div."""
    m = _Model(f"elementwise_{dtype}", seed=11)
    a = m.input("a", (1, 4, 4, 6))
    b = m.input("b", (1, 4, 4, 6))
    d = m.op("sub", (a, b), "sub")
    p = m.op("mul", (d, a), "mul")
    q = m.op("squared_difference", (a, b), "squared_difference")
    hi = m.op("maximum", (p, q), "maximum")
    lo = m.op("minimum", (hi, b), "minimum")
    alpha = m.const("prelu/alpha", m.rng.uniform(0.05, 0.4, (6,)).astype(np.float32))
    pr = m.op("prelu", (lo, alpha), "prelu")
    lr = m.op("leaky_relu", (pr,), "leaky_relu", alpha=0.1)
    hs = m.op("hard_swish", (lr,), "hard_swish")
    r6 = m.op("relu6", (hs,), "relu6")
    th = m.op("tanh", (d,), "tanh")
    rn = m.op("relu_n1_to_1", (th,), "relu_n1_to_1")
    lg = m.op("logistic", (q,), "logistic")
    ls = m.op("log_softmax", (rn,), "log_softmax")
    rm = m.op("reduce_max", (r6,), "reduce_max", axes=(1, 2), keep_dims=True)
    outputs = [rm, ls, lg]
    if dtype == "float32":   # LiteRT has no int8 DIV
        divisor = m.const("div/divisor", m.rng.uniform(0.5, 2.0, (6,)).astype(np.float32))
        outputs.append(m.op("div", (lg, divisor), "div"))
    return _finish(m, outputs, dtype)


def shape(dtype: str) -> Graph:
    """One input through the data-movement ops: transpose, depth<->space, slice, split,
    concatenation, split_v, squeeze/expand_dims, gather, unpack."""
    m = _Model(f"shape_{dtype}", seed=12)
    x = m.input("x", (1, 4, 4, 8))
    t = m.op("transpose", (x,), "transpose", perm=(0, 2, 1, 3))
    d2s = m.op("depth_to_space", (t,), "depth_to_space", block_size=2)          # 1x8x8x2
    s2d = m.op("space_to_depth", (d2s,), "space_to_depth", block_size=2)        # 1x4x4x8
    sl = m.op("slice", (s2d,), "slice", begin=(0, 1, 0, 0), size=(1, 3, 4, 8))  # 1x3x4x8
    lo, hi = m.op("split", (sl,), "split", n_out=2, axis=3)                    # 2 x 1x3x4x4
    cat = m.op("concatenation", (hi, lo, hi), "concatenation", axis=3)         # 1x3x4x12
    top, rest = m.op("split_v", (cat,), "split_v", n_out=2, axis=1, sizes=(1, 2))
    sq = m.op("squeeze", (top,), "squeeze", axes=(1,))                          # 1x4x12
    ex = m.op("expand_dims", (sq,), "expand_dims", axis=2)                      # 1x4x1x12
    g = m.op("gather", (ex,), "gather", axis=3, indices=(11, 0, 5, 5, 2))       # 1x4x1x5
    first, second = m.op("unpack", (rest,), "unpack", n_out=2, axis=1)         # 2 x 1x4x12
    return _finish(m, [g, first, second], dtype)


def _finish(m: _Model, outputs: list[str], dtype: str) -> Graph:
    g = m.graph(outputs)
    if dtype == "float32":
        return g
    rng = np.random.default_rng(3)
    samples = [{n: rng.uniform(-1, 1, g.tensors[n].shape).astype(np.float32) for n in g.inputs} for _ in range(16)]
    q = quantize(g, samples, QuantizeOptions(io="int8"), report=False, progress=False).graph
    return q.replace(name=g.name)


MODELS = {"elementwise": elementwise, "shape": shape}


def model(family: str, dtype: str) -> Graph:
    return MODELS[family](dtype)
