"""Per-pass before/after tests; every result must verify and compute what the input computed."""

import numpy as np
import pytest

from microcompile.ir import Graph, Node, QuantParams, Tensor, verify
from microcompile.reference import interp
from microcompile.transform import pipeline
from microcompile.transform.fold_constants import FoldConstants
from microcompile.transform.fuse_activation import FuseActivation
from microcompile.transform.remove_dead import RemoveDeadCode

RNG = np.random.default_rng(0)


def q(scale, zp):
    return QuantParams((scale,), (zp,))


def fc_relu_graph(relu_out_quant):
    """int8: x -> fully_connected -> relu -> y, plus a dead softmax branch off x."""
    w = RNG.integers(-127, 128, (4, 8), dtype=np.int8)
    b = RNG.integers(-500, 500, (4,), dtype=np.int32)
    tensors = [
        Tensor("x", (1, 8), "int8", q(0.05, 3)),
        Tensor("w", (4, 8), "int8", QuantParams((0.01,), (0,)), data=w),
        Tensor("b", (4,), "int32", QuantParams((0.0005,), (0,)), data=b),
        Tensor("h", (1, 4), "int8", q(0.1, -5)),
        Tensor("y", (1, 4), "int8", relu_out_quant),
        Tensor("dead", (1, 8), "int8", q(1 / 256, -128)),
    ]
    nodes = (Node("fully_connected", "fc", ("x", "w", "b"), ("h",), {"activation": "NONE"}, origin=("fc",)),
             Node("relu", "relu", ("h",), ("y",), {}, origin=("relu",)),
             Node("softmax", "sm", ("x",), ("dead",), {"beta": 1.0}))
    return verify(Graph("g", {t.name: t for t in tensors}, nodes, ("x",), ("y",)))


def assert_same_results(before: Graph, after: Graph):
    x = RNG.integers(-128, 128, (1, 8), dtype=np.int8)
    np.testing.assert_array_equal(interp.run(before, {"x": x})["y"], interp.run(after, {"x": x})["y"])


def test_fuse_relu_into_fc_when_quantization_matches():
    g = fc_relu_graph(q(0.1, -5))
    fused = verify(FuseActivation()(g))
    assert [n.op for n in fused.nodes] == ["fully_connected", "softmax"]
    fc = fused.nodes[0]
    assert fc.attrs["activation"] == "RELU" and fc.outputs == ("y",) and fc.origin == ("fc", "relu")
    assert "h" not in fused.tensors
    assert_same_results(g, fused)


def test_no_fusion_when_relu_requantizes():
    g = fc_relu_graph(q(0.2, -128))
    assert [n.op for n in FuseActivation()(g).nodes] == ["fully_connected", "relu", "softmax"]


def test_remove_dead_code():
    g = fc_relu_graph(q(0.1, -5))
    live = verify(RemoveDeadCode()(g))
    assert [n.name for n in live.nodes] == ["fc", "relu"]
    assert "dead" not in live.tensors
    assert_same_results(g, live)


def test_fold_constants_evaluates_constant_subgraph():
    c = RNG.standard_normal((1, 6)).astype(np.float32)
    tensors = [Tensor("x", (1, 6), "float32"), Tensor("c", (1, 6), "float32", data=c),
               Tensor("c_soft", (1, 6), "float32"), Tensor("c_flat", (2, 3), "float32"),
               Tensor("x2", (2, 3), "float32"), Tensor("y", (2, 3), "float32")]
    nodes = (Node("softmax", "fold_me", ("c",), ("c_soft",), {"beta": 1.0}),
             Node("reshape", "fold_me_too", ("c_soft",), ("c_flat",), {"shape": (2, 3)}),
             Node("reshape", "rx", ("x",), ("x2",), {"shape": (2, 3)}),
             Node("add", "add", ("x2", "c_flat"), ("y",), {"activation": "NONE"}))
    g = verify(Graph("g", {t.name: t for t in tensors}, nodes, ("x",), ("y",)))
    folded = verify(FoldConstants()(g))
    assert [n.name for n in folded.nodes] == ["rx", "add"]
    expected = np.exp(c - c.max()) / np.exp(c - c.max()).sum()
    np.testing.assert_allclose(folded.tensors["c_flat"].data, expected.reshape(2, 3), rtol=1e-6)
    x = RNG.standard_normal((1, 6)).astype(np.float32)
    np.testing.assert_array_equal(interp.run(g, {"x": x})["y"], interp.run(folded, {"x": x})["y"])
    cleaned = pipeline.run(g)
    assert "c" not in cleaned.tensors and "c_soft" not in cleaned.tensors


def test_pipeline_verifies_after_each_pass():
    seen = []
    pipeline.run(fc_relu_graph(q(0.1, -5)), dump=lambda name, g: seen.append((name, len(g.nodes))))
    assert seen == [("fold_shape", 3), ("fold_constants", 3), ("cancel_transposes", 3), ("fold_dilated_conv", 3),
                    ("fold_pad", 3), ("fold_bias_add", 3), ("fuse_activation", 2), ("fuse_rows", 2),
                    ("remove_dead", 1)]
