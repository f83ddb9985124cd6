"""fold_bias_add: PyTorch's MatMul + Add (x @ W + b) becomes one fully_connected with a bias;
the result equals the unfolded graph (and onnxruntime), and what must not fold stays."""

from __future__ import annotations

import numpy as np
import pytest

from microcompile.frontend.onnx import load_onnx
from microcompile.ir import Graph, Node, Tensor, verify
from microcompile.reference import interp
from microcompile.transform.fold_bias_add import FoldBiasAdd
from microcompile.transform import pipeline


def _matmul_add(x_shape, bias_shape, relu: bool = False):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    w = rng.normal(0, 0.5, (x_shape[-1], 6)).astype(np.float32)
    b = rng.normal(0, 0.5, bias_shape).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["mm"]), helper.make_node("Add", ["mm", "b"], ["y"])]
    if relu:
        nodes[-1].output[0] = "pre"
        nodes.append(helper.make_node("Relu", ["pre"], ["y"]))
    graph = helper.make_graph(nodes, "mm_add", [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(x_shape))],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 7
    return onnx.shape_inference.infer_shapes(model)


@pytest.mark.parametrize("x_shape, bias_shape", [((1, 5), (6,)), ((2, 3, 5), (6,)), ((2, 5), (1, 6)), ((4, 5), (1,))])
def test_matmul_add_becomes_one_fully_connected(x_shape, bias_shape):
    import onnxruntime as ort

    model = _matmul_add(x_shape, bias_shape, relu=True)
    g = load_onnx(model)
    folded = pipeline.run(g)
    assert [n.op for n in folded.nodes] == ["fully_connected"]
    assert folded.nodes[0].attrs["activation"] == "RELU" and folded.nodes[0].inputs[2]
    x = np.random.default_rng(2).normal(0, 1, x_shape).astype(np.float32)
    ref = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
    got = interp.run(folded, {folded.inputs[0]: x})[folded.outputs[0]]
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def _fc_add_graph(second_reader: bool = False, other_const: bool = True, bias_shape=(4,)) -> Graph:
    rng = np.random.default_rng(0)
    t = {"x": Tensor("x", (2, 3), "float32"),
         "w": Tensor("w", (4, 3), "float32", data=rng.normal(0, 1, (4, 3)).astype(np.float32)),
         "f": Tensor("f", (2, 4), "float32"),
         "c": Tensor("c", bias_shape, "float32",
                     data=rng.normal(0, 1, bias_shape).astype(np.float32) if other_const else None),
         "y": Tensor("y", (2, 4), "float32")}
    nodes = [Node("fully_connected", "fc", ("x", "w", ""), ("f",)), Node("add", "add", ("f", "c"), ("y",))]
    inputs, outputs = ["x"], ["y"]
    if not other_const:
        inputs.append("c")
    if second_reader:
        t["z"] = Tensor("z", (2, 4), "float32")
        nodes.append(Node("relu", "relu", ("f",), ("z",)))
        outputs.append("z")
    return verify(Graph("g", t, tuple(nodes), tuple(inputs), tuple(outputs)))


@pytest.mark.parametrize("kw", [{"second_reader": True}, {"other_const": False}, {"bias_shape": (2, 4)}])
def test_what_must_not_fold_stays(kw):
    g = _fc_add_graph(**kw)
    assert [n.op for n in verify(FoldBiasAdd()(g)).nodes] == [n.op for n in g.nodes]


def test_fold_keeps_the_values():
    g = _fc_add_graph()
    folded = verify(FoldBiasAdd()(g))
    assert [n.op for n in folded.nodes] == ["fully_connected"]
    x = np.random.default_rng(3).normal(0, 1, (2, 3)).astype(np.float32)
    np.testing.assert_allclose(interp.run(folded, {"x": x})["y"], interp.run(g, {"x": x})["y"], rtol=1e-6)
