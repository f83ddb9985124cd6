"""fuse_rows: the ops of a layer norm (ONNX's, PyTorch's and TFLite's converter's spellings,
float and int8) and of an attention head become one layer_norm / attention node whose body is
those ops; ONNX LayerNormalization and the PyTorch transformer fixtures fuse through the
whole pipeline; what is not row by row, or whose inner results something else reads, stays."""

from __future__ import annotations

import numpy as np
import pytest

from support import row_group_models as m
from microcompile.ir import Graph, Node, Tensor, verify
from microcompile.reference import interp
from microcompile.transform import pipeline
from microcompile.transform.fuse_rows import FuseRows

CASES = [
    ("onnx", lambda: m.layer_norm_onnx((1, 6, 16), 1), ("div", "sqrt"), "layer_norm"),
    ("onnx-2d", lambda: m.layer_norm_onnx((5, 12), 2), ("div", "sqrt"), "layer_norm"),
    ("onnx-4d", lambda: m.layer_norm_onnx((1, 2, 3, 8), 3), ("div", "sqrt"), "layer_norm"),
    ("tflite", lambda: m.layer_norm_tflite((1, 6, 16), 4), (), "layer_norm"),
    ("attention", lambda: m.attention(2, 9, 8, 5), (), "attention"),
]


def _ops(g: Graph) -> list[str]:
    return [n.op for n in g.nodes]


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_the_group_becomes_one_node_that_computes_the_same(case, dtype):
    _, make, keep_float, op = case
    g = make() if dtype == "float32" else m.int8(make(), keep_float)
    fused = FuseRows()(g)
    assert _ops(fused) == [op], _ops(fused)
    node = fused.nodes[0]
    assert [n.name for n in node.attrs["body"].graph.nodes] == [n.name for n in g.nodes]
    # no tensor of the body is left in the graph but the node's own inputs and output
    assert set(fused.tensors) >= set(node.inputs) | set(node.outputs)
    assert not set(fused.tensors) & {t for n in g.nodes for t in n.outputs if t not in node.outputs}
    inputs = {n: np.random.default_rng(0).integers(-128, 128, g.tensors[n].shape).astype(np.int8)
              if dtype == "int8" else m.samples(g, 1, 0)[0][n] for n in g.inputs}
    assert np.array_equal(interp.run(fused, inputs)[g.outputs[0]], interp.run(g, inputs)[g.outputs[0]])


def test_a_layer_norm_inside_a_graph_keeps_its_neighbours():
    """relu -> layer norm -> relu -> transpose: the norm is fused with the relu after it (which
    fuse_activation has made the last add's clamp), the first relu and the transpose stay."""
    g = m.layer_norm_onnx((1, 4, 8), 6)
    tensors = dict(g.tensors)
    tensors["pre"] = Tensor("pre", (1, 4, 8), "float32")
    tensors["post"] = Tensor("post", (1, 4, 8), "float32")
    tensors["t"] = Tensor("t", (1, 8, 4), "float32")
    nodes = [Node("relu", "r0", ("pre",), ("x",)), *g.nodes, Node("relu", "r1", g.outputs, ("post",)),
             Node("transpose", "t", ("post",), ("t",), {"perm": (0, 2, 1)})]
    g = verify(Graph("ln_in_graph", tensors, tuple(nodes), ("pre",), ("t",)))
    fused = pipeline.run(g)
    assert _ops(fused) == ["relu", "layer_norm", "transpose"]
    assert fused.nodes[1].attrs["body"].graph.nodes[-1].attrs["activation"] == "RELU"
    x = m.samples(g, 1, 3)[0]
    assert np.array_equal(interp.run(fused, x)["t"], interp.run(g, x)["t"])


def _with_extra_output(g: Graph, tensor: str) -> Graph:
    return verify(g.replace(outputs=(*g.outputs, tensor)))


def test_an_inner_result_read_outside_keeps_the_ops_apart():
    g = m.layer_norm_onnx((1, 4, 8), 7)
    var = next(n for n in g.nodes if n.op == "sqrt").outputs[0]
    assert "layer_norm" not in _ops(FuseRows()(_with_extra_output(g, var)))
    a = m.attention(2, 5, 4, 8)
    probs = next(n for n in a.nodes if n.op == "softmax").outputs[0]
    assert "attention" not in _ops(FuseRows()(_with_extra_output(a, probs)))


def test_a_norm_over_a_leading_axis_is_not_fused():
    """Rows must be contiguous: a mean over axis 1 of [1, C, T] (the layout PyTorch's first
    norm of the ViT fixture has before its transpose) stays as its ops."""
    g = m.layer_norm_onnx((1, 6, 5), 9, axis=1)
    assert _ops(FuseRows()(g)) == _ops(g)


def test_a_mean_alone_is_no_layer_norm():
    g = m.layer_norm_onnx((1, 4, 8), 10)
    mean = g.nodes[0]
    g = verify(g.replace(nodes=(mean,), outputs=mean.outputs))
    assert _ops(FuseRows()(g)) == ["mean"]


def test_onnx_layer_normalization_fuses_and_matches_onnxruntime():
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    from microcompile.frontend.onnx import load_onnx

    rng = np.random.default_rng(11)
    scale, bias = rng.uniform(0.5, 1.5, 20).astype(np.float32), rng.normal(0, 0.3, 20).astype(np.float32)
    node = helper.make_node("LayerNormalization", ["x", "s", "b"], ["y"], axis=-1, epsilon=1e-5)
    graph = helper.make_graph([node], "ln", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 7, 20])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 7, 20])],
                              [numpy_helper.from_array(scale, "s"), numpy_helper.from_array(bias, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    g = pipeline.run(load_onnx(model))
    assert _ops(g) == ["layer_norm"]
    x = rng.normal(1.0, 3.0, (1, 7, 20)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = interp.run(g, {g.inputs[0]: x})[g.outputs[0]]
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


def _decomposed_layer_norm(exponent_op: str):
    """A LayerNormalization as exporters wrote it before opset 17: ReduceMean, Sub, Pow(d, 2),
    ReduceMean, Add, Sqrt (or Pow(v, 0.5)), Div, Mul, Add."""
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(12)
    c = lambda name, v: numpy_helper.from_array(np.asarray(v, np.float32), name)   # noqa: E731
    nodes = [helper.make_node("ReduceMean", ["x"], ["mu"], axes=[-1], keepdims=1),
             helper.make_node("Sub", ["x", "mu"], ["d"]),
             helper.make_node("Pow", ["d", "two"], ["sq"]),
             helper.make_node("ReduceMean", ["sq"], ["var"], axes=[-1], keepdims=1),
             helper.make_node("Add", ["var", "eps"], ["ve"]),
             helper.make_node("Sqrt", ["ve"], ["sd"]) if exponent_op == "Sqrt"
             else helper.make_node("Pow", ["ve", "half"], ["sd"]),
             helper.make_node("Div", ["d", "sd"], ["n"]),
             helper.make_node("Mul", ["n", "g"], ["s"]),
             helper.make_node("Add", ["s", "b"], ["y"])]
    graph = helper.make_graph(nodes, "ln_decomposed", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 9, 12])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 9, 12])],
                              [c("two", 2.0), c("half", 0.5), c("eps", 1e-5), c("g", rng.uniform(0.5, 1.5, 12)),
                               c("b", rng.normal(0, 0.3, 12))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    return model


@pytest.mark.parametrize("root", ["Sqrt", "Pow"])
def test_the_decomposed_layer_norm_of_older_opsets_fuses_and_matches_onnxruntime(root):
    import onnxruntime as ort

    from microcompile.frontend.onnx import load_onnx

    model = _decomposed_layer_norm(root)
    g = pipeline.run(load_onnx(model))
    assert _ops(g) == ["layer_norm"]
    x = np.random.default_rng(13).normal(-2.0, 4.0, (1, 9, 12)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = interp.run(g, {g.inputs[0]: x})[g.outputs[0]]
    assert np.abs(got - want).max() <= 1e-5 * np.abs(want).max()


@pytest.mark.parametrize("exponent, op", [(0.5, "sqrt"), (-0.5, "rsqrt")])
def test_pow_roots_become_their_ops(exponent, op):
    from onnx import TensorProto, helper, numpy_helper
    import onnxruntime as ort

    from microcompile.frontend.onnx import load_onnx

    graph = helper.make_graph([helper.make_node("Pow", ["x", "e"], ["y"])], "pow",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 7])],
                              [numpy_helper.from_array(np.array(exponent, np.float32), "e")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    g = pipeline.run(load_onnx(model))
    assert _ops(g) == [op]
    x = np.random.default_rng(14).uniform(0.01, 50.0, (3, 7)).astype(np.float32)
    want = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    assert np.abs(interp.run(g, {g.inputs[0]: x})[g.outputs[0]] - want).max() <= 1e-5 * np.abs(want).max()


def test_pow_of_another_exponent_is_refused_by_name():
    from onnx import TensorProto, helper, numpy_helper

    from microcompile.errors import UnsupportedOpError
    from microcompile.frontend.onnx import load_onnx

    graph = helper.make_graph([helper.make_node("Pow", ["x", "e"], ["y"])], "pow",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 7])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 7])],
                              [numpy_helper.from_array(np.array(1.7, np.float32), "e")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    with pytest.raises(UnsupportedOpError, match="exponent 1.7"):
        load_onnx(model)


def test_the_transformer_fixtures_fuse_every_trailing_norm_and_every_head():
    """The keyword transformer and the tiny ViT (tests/fixtures/pytorch): every layer norm over
    the channels and both attention blocks become fused nodes, float and int8 alike (the
    ViT's first norm runs over axis 1 of [1, 48, 65] and stays as its ops)."""
    import microcompile as mc
    from pathlib import Path

    fixtures = Path(__file__).resolve().parents[1] / "fixtures" / "pytorch"
    for name, norms in (("kws_transformer", 5), ("tiny_vit", 4)):
        g = mc.inspect(fixtures / f"{name}.pt2").optimized
        assert _ops(g).count("layer_norm") == norms, name
        assert _ops(g).count("attention") == 2, name
