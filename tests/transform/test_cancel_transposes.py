"""cancel_transposes: NHWC -> T(NCHW) -> op -> T(NHWC) sandwiches lose both transposes,
with the op's axes and constant operands remapped, and compute the same values."""

from __future__ import annotations

import numpy as np
import pytest

from microcompile.ir import Graph, Node, Tensor, ops, verify
from microcompile.reference import interp
from microcompile.transform.cancel_transposes import CancelTransposes

TO_NCHW, TO_NHWC = (0, 3, 1, 2), (0, 2, 3, 1)
RNG = np.random.default_rng(3)

# (op, attrs in NCHW terms, constant second operand in NCHW terms or None)
MIDDLE = [
    ("relu", {}, None),
    ("add", {}, RNG.normal(size=(1, 4, 1, 1)).astype(np.float32)),       # per-channel bias, NCHW broadcast
    ("mul", {}, RNG.normal(size=(4, 1, 5)).astype(np.float32)),          # lower rank: broadcast from the right
    ("prelu", {}, RNG.normal(size=(1, 4, 1, 1)).astype(np.float32)),
    ("concatenation", {"axis": 1}, RNG.normal(size=(1, 2, 3, 5)).astype(np.float32)),
    ("pad", {"pads": ((0, 0), (1, 0), (2, 1), (0, 3))}, None),
    ("mean", {"axes": (2, 3), "keep_dims": True}, None),
    ("reduce_max", {"axes": (1,), "keep_dims": True}, None),
]


def _sandwich(op, attrs, const) -> Graph:
    t = {"x": Tensor("x", (1, 3, 5, 4), "float32")}
    nodes = [Node("transpose", "t0", ("x",), ("a",), {"perm": TO_NCHW})]
    t["a"] = Tensor("a", (1, 4, 3, 5), "float32")
    ins = ("a",) if const is None else ("a", "c")
    if const is not None:
        t["c"] = Tensor("c", const.shape, "float32", data=const)
    nodes.append(Node(op, "mid", ins, ("b",), dict(attrs)))
    shape = ops.get(op).infer(Graph("s", dict(t), (), (), ()), nodes[1])[0][0]
    t["b"] = Tensor("b", tuple(shape), "float32")
    nodes.append(Node("transpose", "t1", ("b",), ("y",), {"perm": TO_NHWC}))
    t["y"] = Tensor("y", tuple(shape[i] for i in TO_NHWC), "float32")
    return verify(Graph(f"sandwich_{op}", t, tuple(nodes), ("x",), ("y",)))


@pytest.mark.parametrize("op,attrs,const", MIDDLE, ids=[m[0] for m in MIDDLE])
def test_sandwich_loses_both_transposes(op, attrs, const):
    g = _sandwich(op, attrs, const)
    out = verify(CancelTransposes()(g))
    assert [n.op for n in out.nodes] == [op]
    x = RNG.normal(size=(1, 3, 5, 4)).astype(np.float32)
    np.testing.assert_array_equal(interp.run(out, {"x": x})["y"], interp.run(g, {"x": x})["y"])


def test_size_one_transpose_becomes_a_reshape_and_real_ones_stay():
    t = {"x": Tensor("x", (1, 1, 4, 6), "float32"), "a": Tensor("a", (1, 4, 6, 1), "float32"),
         "b": Tensor("b", (1, 6, 4, 1), "float32")}
    g = verify(Graph("g", t, (Node("transpose", "t0", ("x",), ("a",), {"perm": TO_NHWC}),
                              Node("transpose", "t1", ("a",), ("b",), {"perm": (0, 2, 1, 3)})), ("x",), ("b",)))
    out = verify(CancelTransposes()(g))
    assert [n.op for n in out.nodes] == ["transpose"]   # merged into one, which really moves data
    x = RNG.normal(size=(1, 1, 4, 6)).astype(np.float32)
    np.testing.assert_array_equal(interp.run(out, {"x": x})["b"], interp.run(g, {"x": x})["b"])
    g2 = verify(Graph("g2", {k: t[k] for k in ("x", "a")},
                      (Node("transpose", "t0", ("x",), ("a",), {"perm": TO_NHWC}),), ("x",), ("a",)))
    assert [n.op for n in CancelTransposes()(g2).nodes] == ["reshape"]
