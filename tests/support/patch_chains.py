"""Random chains of convolutions, depthwise convolutions, pools and ReLUs for the patch stage
tests (tests/lower/test_patch_stage.py): odd heights and widths, strides 1 and 2, SAME and
VALID padding, dilation 2, depth multiplier 2; float32, and int8 quantized as the converter
does (support/multi_op_models.py)."""

from __future__ import annotations

import numpy as np

from support.multi_op_models import _Model, quantize_graph
from microcompile.ir import Graph
from microcompile.transform.patch_stage import StageSpec, make_stage


def chain(seed: int, int8: bool) -> Graph:
    rng = np.random.default_rng(seed)
    m = _Model(f"chain{seed}_{'int8' if int8 else 'float32'}", seed)
    x = m.input("x", (1, int(rng.integers(9, 24)), int(rng.integers(3, 12)), int(rng.integers(1, 5))))
    for i in range(int(rng.integers(2, 6))):
        h = m.tensors[x].shape[1]
        kind = str(rng.choice(["conv", "pw", "dw", "max", "avg", "relu"]))
        stride = int(rng.choice([1, 2])) if h >= 6 else 1
        pad = str(rng.choice(["SAME", "VALID"])) if h >= 8 else "SAME"
        dil = 2 if kind in ("conv", "dw") and stride == 1 and rng.random() < 0.3 else 1
        act = str(rng.choice(["NONE", "RELU", "RELU6"]))
        name = f"l{i}_{kind}"
        if kind == "conv":
            x = m.conv(x, int(rng.integers(1, 9)), int(rng.choice([3, 5])) if h >= 10 else 3, name, stride, dil, pad, act)
        elif kind == "pw":
            x = m.conv(x, int(rng.integers(1, 17)), 1, name, stride, 1, "VALID", act)
        elif kind == "dw":
            x = m.depthwise(x, 3, name, stride, int(rng.choice([1, 1, 2])), dil, pad, act)
        elif kind in ("max", "avg"):
            k = int(rng.choice([2, 3]))
            op = "max_pool2d" if kind == "max" else "average_pool2d"
            padding = m._pad(x, k, stride, 1, pad)
            x = m.op(op, (x,), name, filter=(k, k), stride=(stride, stride), padding=padding)
        else:
            x = m.op("relu", (x,), name)
    g = m.graph([x])
    return quantize_graph(g, g.name) if int8 else g


def whole_chain(g: Graph, rows: int) -> Graph:
    """`g` with all its ops in one stage of `rows` output rows per band."""
    return make_stage(g, StageSpec(g.nodes[0].name, g.nodes[-1].name, bands(g, rows)))


def bands(g: Graph, rows: int) -> int:
    """The bands of `rows` output rows each of `g`'s output."""
    return -(-g.tensors[g.outputs[0]].shape[1] // rows)


def inputs(g: Graph, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    return {n: rng.integers(-128, 128, g.tensors[n].shape).astype(np.int8) if g.tensors[n].dtype == "int8"
            else rng.normal(0.0, 1.5, g.tensors[n].shape).astype(np.float32) for n in g.inputs}
