"""ONNX reader: layout (NCHW model -> NHWC graph, transposes cancel), folding (batch norm,
shape chains), the CLI's --input-shape, and every bad-input error (exit code 2)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent

import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from support.c_harness import run_on_host  # noqa: E402
from microcompile import cli  # noqa: E402
from microcompile.errors import ModelFormatError, UnsupportedOpError, UserError  # noqa: E402
from microcompile.frontend import load_model  # noqa: E402
from microcompile.frontend.onnx import load_onnx  # noqa: E402
from microcompile.reference import interp  # noqa: E402
from microcompile.ir.compare import compare  # noqa: E402
from microcompile.transform import pipeline  # noqa: E402

RNG = np.random.default_rng(7)


def _w(name, *shape, positive=False):
    a = RNG.standard_normal(shape).astype(np.float32) * 0.4
    return numpy_helper.from_array(np.abs(a) + 0.5 if positive else a, name)


def _model(nodes, inits, in_shape, out_name="y", opset=13, in_dims=None, out_shape=None):
    inp = helper.make_tensor_value_info("x", TensorProto.FLOAT, in_dims or list(in_shape))
    g = helper.make_graph(nodes, "m", [inp], [helper.make_tensor_value_info(out_name, TensorProto.FLOAT, out_shape)],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    return onnx.shape_inference.infer_shapes(m)   # types the output (the checker wants it)


def small_cnn(channels=3, flatten_spatial=False):
    """conv-bn-relu, depthwise + residual add, two-branch concat, max pool, then either
    GAP -> flatten (transposes cancel) or flatten of a 2x2 map (one transpose is needed)."""
    n = helper.make_node
    nodes = [n("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
             n("BatchNormalization", ["c1", "g", "bb", "m", "v"], ["bn"]),
             n("Relu", ["bn"], ["r1"]),
             n("Conv", ["r1", "wd"], ["dw"], group=8, pads=[1, 1, 1, 1]),
             n("Add", ["dw", "r1"], ["res"]),
             n("Conv", ["res", "w2"], ["b2"]),
             n("Sigmoid", ["res"], ["sg"]),
             n("Concat", ["b2", "sg"], ["cat"], axis=1),
             n("MaxPool", ["cat"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
             n("Clip", ["p", "lo", "hi"], ["cl"])]
    if flatten_spatial:
        nodes.append(n("Flatten", ["cl"], ["f"]))
        fc_in = 12 * 2 * 2
    else:
        nodes += [n("GlobalAveragePool", ["cl"], ["gap"]), n("Flatten", ["gap"], ["f"])]
        fc_in = 12
    nodes += [n("Gemm", ["f", "wf", "bf"], ["z"], transB=1), n("Softmax", ["z"], ["y"])]
    inits = [_w("w1", 8, channels, 3, 3), _w("b1", 8), _w("g", 8, positive=True), _w("bb", 8), _w("m", 8),
             _w("v", 8, positive=True), _w("wd", 8, 1, 3, 3), _w("w2", 4, 8, 1, 1), _w("wf", 5, fc_in),
             _w("bf", 5), numpy_helper.from_array(np.float32(0), "lo"), numpy_helper.from_array(np.float32(6), "hi")]
    return _model(nodes, inits, (1, channels, 4, 4))


def _ort(model, x):
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]


def _ops(g):
    return [n.op for n in g.nodes]


@pytest.mark.parametrize("nhwc_io", [False, True])
def test_small_cnn_transposes_cancel(nhwc_io):
    model = small_cnn()
    g = pipeline.run(load_onnx(model, nhwc_io=nhwc_io))
    # NCHW I/O keeps exactly one transpose, at the 4-D input; NHWC I/O none at all.
    assert _ops(g).count("transpose") == (0 if nhwc_io else 1), _ops(g)
    assert "mul" not in _ops(g) and _ops(g).count("conv2d") == 2   # batch norm folded into the conv
    assert "relu" not in _ops(g) and "relu6" not in _ops(g)         # fused into their producers
    x = RNG.normal(0, 1.5, (1, 3, 4, 4)).astype(np.float32)
    feed = x.transpose(0, 2, 3, 1) if nhwc_io else x
    got = interp.run(g, {g.inputs[0]: feed})[g.outputs[0]]
    assert compare(got, _ort(model, x)).equal


def test_single_channel_input_needs_no_transpose():
    g = pipeline.run(load_onnx(small_cnn(channels=1)))
    assert "transpose" not in _ops(g)   # NCHW with C=1 is NHWC's byte order: a reshape


def test_flatten_of_a_feature_map_keeps_the_one_transpose_it_needs():
    model = small_cnn(flatten_spatial=True)
    g = pipeline.run(load_onnx(model, nhwc_io=True))
    assert _ops(g).count("transpose") == 1   # ONNX flattens in CHW order
    x = RNG.normal(0, 1.5, (1, 3, 4, 4)).astype(np.float32)
    got = interp.run(g, {g.inputs[0]: x.transpose(0, 2, 3, 1)})[g.outputs[0]]
    assert compare(got, _ort(model, x)).equal


def test_cancelled_graphs_run_as_host_c(tmp_path):
    models = [small_cnn(), small_cnn(flatten_spatial=True), small_cnn(channels=1), shape_chain_model()]
    graphs = [pipeline.run(load_onnx(m)) for m in models]
    for model, (out, case) in zip(models, run_on_host(graphs, tmp_path)):
        ref = _ort(model, case.inputs[case.graph.inputs[0]])
        assert compare(out, ref).equal, case.graph.name


def shape_chain_model():
    """PyTorch's x.view(x.size(0), -1): Shape -> Gather -> Unsqueeze -> Concat -> Reshape."""
    n = helper.make_node
    nodes = [n("Conv", ["x", "w"], ["c"]), n("Shape", ["c"], ["s"]),
             n("Gather", ["s", "zero"], ["b"], axis=0), n("Unsqueeze", ["b", "ax"], ["bu"]),
             n("Concat", ["bu", "minus1"], ["shape"], axis=0), n("Reshape", ["c", "shape"], ["f"]),
             n("MatMul", ["f", "wm"], ["y"])]
    inits = [_w("w", 2, 2, 3, 3), numpy_helper.from_array(np.array(0, np.int64), "zero"),
             numpy_helper.from_array(np.array([0], np.int64), "ax"),
             numpy_helper.from_array(np.array([-1], np.int64), "minus1"), _w("wm", 2 * 3 * 3, 4)]
    return _model(nodes, inits, (1, 2, 5, 5), out_shape=[1, 4])


def test_shape_chain_is_folded():
    model = shape_chain_model()
    g = pipeline.run(load_onnx(model))
    assert set(_ops(g)) <= {"transpose", "conv2d", "reshape", "fully_connected"}, _ops(g)
    x = RNG.normal(0, 1.5, (1, 2, 5, 5)).astype(np.float32)
    assert compare(interp.run(g, {g.inputs[0]: x})[g.outputs[0]], _ort(model, x)).equal


# --- bad input --------------------------------------------------------------------------

def _save(model, tmp_path, name="m.onnx") -> Path:
    path = tmp_path / name
    path.write_bytes(model.SerializeToString())
    return path


def test_checker_failure_is_a_model_format_error(tmp_path):
    bad = _model([helper.make_node("Relu", ["undefined"], ["y"])], [], (1, 4))
    path = _save(bad, tmp_path)
    with pytest.raises(ModelFormatError, match="onnx.checker"):
        load_model(path)
    assert cli.main(["inspect", str(path)]) == 2


def test_truncated_file(tmp_path):
    path = tmp_path / "t.onnx"
    path.write_bytes(small_cnn().SerializeToString()[:100])
    with pytest.raises(ModelFormatError):
        load_model(path)


def test_dynamic_input_needs_input_shape(tmp_path, capsys):
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [], None, in_dims=["batch", 3, 8])
    path = _save(m, tmp_path)
    with pytest.raises(UserError, match="dynamic shape") as e:
        load_model(path)
    assert "--input-shape x:1x3x8" in str(e.value)
    g = load_model(path, input_shapes={"x": (2, 3, 8)})
    assert g.tensors[g.inputs[0]].shape == (2, 3, 8)
    assert cli.main(["inspect", str(path)]) == 2
    assert cli.main(["inspect", str(path), "--input-shape", "x:2x3x8"]) == 0
    for bad in (["--input-shape", "x:2x4x8"], ["--input-shape", "nope:1x3x8"], ["--input-shape", "x=1"]):
        assert cli.main(["inspect", str(path), *bad]) == 2
    assert "dynamic shape" in capsys.readouterr().err


def test_unsupported_ops_are_listed_all_at_once(tmp_path):
    n = helper.make_node
    m = _model([n("Sin", ["x"], ["a"]), n("Relu", ["a"], ["b"]), n("Acos", ["b"], ["y"])], [], (1, 4))
    with pytest.raises(UnsupportedOpError) as e:
        load_onnx(m)
    assert "Sin" in str(e.value) and "Acos" in str(e.value) and "2 unsupported" in str(e.value)
    assert cli.main(["inspect", str(_save(m, tmp_path))]) == 2


@pytest.mark.parametrize("what, says", [("runtime_weight", r"\(Conv\): the weight must be a constant"),
                                        ("pad_mode", r"\(Pad\): mode 'reflect'"),
                                        ("cubic", r"\(Resize\): mode 'cubic'")])
def test_unsupported_features_are_reported_not_guessed(what, says):
    n = helper.make_node
    if what == "runtime_weight":
        m = _model([n("Conv", ["x", "x"], ["y"])], [], (1, 1, 1, 1))
    elif what == "pad_mode":
        m = _model([n("Pad", ["x", "p"], ["y"], mode="reflect")],
                   [numpy_helper.from_array(np.array([0, 1, 0, 1], np.int64), "p")], (2, 4))
    else:
        m = _model([n("Resize", ["x", "", "s"], ["y"], mode="cubic")],
                   [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "s")], (1, 1, 2, 2))
    with pytest.raises(UnsupportedOpError, match=says) as e:   # the message names the node and feature
        load_onnx(m)
    assert "not supported" in e.value.hint


@pytest.mark.parametrize("opset", [10, 22])
def test_opset_outside_11_to_21(opset, tmp_path, capsys):
    m = _model([helper.make_node("Relu", ["x"], ["y"])], [], (1, 4), opset=opset)
    with pytest.raises(UserError, match=f"opset {opset}; microcompile reads opsets 11 to 21") as e:
        load_onnx(m)
    assert "version_converter" in e.value.hint
    assert cli.main(["inspect", str(_save(m, tmp_path))]) == 2     # through the CLI: exit 2, no traceback
    assert f"opset {opset}" in capsys.readouterr().err


def test_non_float_input():
    inp = helper.make_tensor_value_info("x", TensorProto.DOUBLE, [2])
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "m", [inp],
                          [helper.make_tensor_value_info("y", TensorProto.DOUBLE, [2])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    with pytest.raises(UserError, match="DOUBLE"):
        load_onnx(m)
