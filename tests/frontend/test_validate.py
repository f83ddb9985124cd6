"""Validation at import: a corrupted but parseable model is a ModelFormatError (exit 2) that
names the tensor or layer, never an exception from deep inside the compiler.

Each case takes a small valid model, breaks one thing the kernels depend on, writes it with
the project's own writer and reads it back. The cases are the classes the fuzz test found
(tests/e2e/test_fuzz_models.py): they crashed in ir/ops.py, lower/*.py, fixedpoint.py,
tir/verify.py or the C emitter before the validation existed.
"""

from __future__ import annotations

import numpy as np
import pytest

from microcompile.errors import ModelFormatError
from microcompile.frontend import load_model
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, QuantParams, Tensor

RNG = np.random.default_rng(14)


def _q(scale, zp=0, axis=None):
    scale = tuple(np.atleast_1d(scale).tolist())
    return QuantParams(scale, tuple([zp] * len(scale)) if np.ndim(zp) == 0 else tuple(zp), axis)


def int8_mlp() -> Graph:
    """x int8 [1,16] -> fully_connected (per-channel) -> softmax."""
    ws = np.full(4, 0.01, np.float32)
    t = [Tensor("x", (1, 16), "int8", _q(0.05, -3)),
         Tensor("w", (4, 16), "int8", _q(ws, 0, 0), RNG.integers(-127, 128, (4, 16)).astype(np.int8)),
         Tensor("b", (4,), "int32", _q(0.05 * ws, 0, 0), RNG.integers(-500, 500, 4).astype(np.int32)),
         Tensor("h", (1, 4), "int8", _q(0.1, 2)),
         Tensor("y", (1, 4), "int8", _q(1 / 256, -128))]
    nodes = (Node("fully_connected", "fc", ("x", "w", "b"), ("h",)),
             Node("softmax", "sm", ("h",), ("y",), {"beta": 1.0}))
    return Graph("mlp", {x.name: x for x in t}, nodes, ("x",), ("y",))


def int8_cnn() -> Graph:
    """x int8 [1,6,6,2] -> conv 3x3 -> average pool 2x2 -> add of a constant."""
    ws = np.full(3, 0.02, np.float32)
    t = [Tensor("x", (1, 6, 6, 2), "int8", _q(0.05, 1)),
         Tensor("w", (3, 3, 3, 2), "int8", _q(ws, 0, 0), RNG.integers(-127, 128, (3, 3, 3, 2)).astype(np.int8)),
         Tensor("b", (3,), "int32", _q(0.05 * ws, 0, 0), RNG.integers(-300, 300, 3).astype(np.int32)),
         Tensor("c", (1, 4, 4, 3), "int8", _q(0.1, -5)),
         Tensor("p", (1, 2, 2, 3), "int8", _q(0.1, -5)),
         Tensor("k", (3,), "int8", _q(0.1, 0), np.array([1, 2, 3], np.int8)),
         Tensor("y", (1, 2, 2, 3), "int8", _q(0.2, 0))]
    nodes = (Node("conv2d", "conv", ("x", "w", "b"), ("c",), {"stride": (1, 1), "padding": (0, 0, 0, 0)}),
             Node("average_pool2d", "pool", ("c",), ("p",), {"filter": (2, 2), "stride": (2, 2)}),
             Node("add", "add", ("p", "k"), ("y",)))
    return Graph("cnn", {x.name: x for x in t}, nodes, ("x",), ("y",))


def int8_requantize() -> Graph:
    """x int8 [1,8] -> quantize (int8 -> int8: a 256-entry table built at compile time)."""
    t = [Tensor("x", (1, 8), "int8", _q(0.5, 1)), Tensor("y", (1, 8), "int8", _q(0.25, -2))]
    return Graph("rq", {x.name: x for x in t}, (Node("quantize", "rq", ("x",), ("y",)),), ("x",), ("y",))


def float_softmax() -> Graph:
    t = {n: Tensor(n, (1, 8), "float32") for n in ("x", "y")}
    return Graph("fsm", t, (Node("softmax", "sm", ("x",), ("y",), {"beta": 1.0}),), ("x",), ("y",))


def float_mlp() -> Graph:
    t = [Tensor("x", (1, 8), "float32"),
         Tensor("w", (4, 8), "float32", None, RNG.normal(size=(4, 8)).astype(np.float32)),
         Tensor("b", (4,), "float32", None, np.zeros(4, np.float32)),
         Tensor("y", (1, 4), "float32")]
    return Graph("fmlp", {x.name: x for x in t}, (Node("fully_connected", "fc", ("x", "w", "b"), ("y",)),),
                 ("x",), ("y",))


def _with(g: Graph, name: str, **changes) -> Graph:
    return g.replace(tensors={**g.tensors, name: g.tensors[name].replace(**changes)})


def _data(g: Graph, name: str, fn) -> Graph:
    data = g.tensors[name].data.copy()
    fn(data)
    return _with(g, name, data=data)


def _load(g: Graph, tmp_path):
    path = tmp_path / f"{g.name}.tflite"
    path.write_bytes(write_tflite(g))
    return load_model(path)


@pytest.mark.parametrize("make", [int8_mlp, int8_cnn, int8_requantize, float_softmax, float_mlp])
def test_the_valid_models_load(make, tmp_path):
    _load(make(), tmp_path)


BROKEN = {
    # quantization parameters: the fixed-point multiplier needs a finite positive scale
    "nan scale": (int8_mlp, lambda g: _with(g, "h", quant=_q(float("nan"), 2)), "'h'"),
    "inf scale": (int8_mlp, lambda g: _with(g, "h", quant=_q(float("inf"), 2)), "'h'"),
    "zero scale": (int8_mlp, lambda g: _with(g, "x", quant=_q(0.0, -3)), "'x'"),
    "negative scale": (int8_cnn, lambda g: _with(g, "c", quant=_q(-0.1, -5)), "'c'"),
    "zero point out of int8": (int8_mlp, lambda g: _with(g, "x", quant=_q(0.05, 300)), "'x'"),
    "weight zero point out of int8": (int8_mlp, lambda g: _with(g, "w", quant=_q(0.01, 100000)), "'w'"),
    "asymmetric conv weights": (int8_cnn, lambda g: _with(g, "w", quant=_q(np.full(3, 0.02), [0, 5, 0], 0)),
                                "conv_2d_0"),
    # kernel arithmetic: the int32 accumulator (and the bias the lowering folds) must not overflow
    "bias overflows the accumulator": (int8_mlp, lambda g: _data(g, "b", lambda d: d.__setitem__(1, 2**31 - 1)),
                                       "fully_connected_0"),
    "conv bias overflows the accumulator": (int8_cnn, lambda g: _data(g, "b", lambda d: d.__setitem__(0, -2**31)),
                                            "conv_2d_0"),
    # requantization multipliers out of the kernels' range
    "huge output scale ratio": (int8_cnn, lambda g: _with(g, "y", quant=_q(1e-30, 0)), "add_2"),
    # a table op's Prepare (found by the long fuzz run: the lowering raised while building it)
    "requantize table multiplier": (int8_requantize, lambda g: _with(g, "y", quant=_q(1e-10, 0)), "quantize_0"),
    "NaN softmax beta": (float_softmax, lambda g: g.replace(nodes=(g.nodes[0].replace(attrs={"beta": float("nan")}),)),
                         "softmax_0"),
    "softmax output quantization": (int8_mlp, lambda g: _with(g, "y", quant=_q(0.5, 0)), "softmax_1"),
    "average pool requantizes": (int8_cnn, lambda g: _with(g, "p", quant=_q(0.3, -5)), "average_pool_2d_1"),
    # shapes and ranks
    "add shapes do not broadcast": (int8_cnn, lambda g: _with(g, "k", shape=(2,), data=np.array([1, 2], np.int8)),
                                    "add_2"),
    "weights of rank 3": (int8_mlp, lambda g: _with(g, "w", shape=(4, 16, 1),
                                                     data=g.tensors["w"].data.reshape(4, 16, 1)), "fully_connected_0"),
    "conv channels disagree": (int8_cnn, lambda g: _with(g, "x", shape=(1, 6, 6, 5)), "conv_2d_0"),
    "fc depth does not divide the input": (int8_mlp, lambda g: _with(g, "x", shape=(1, 15)), "fully_connected_0"),
    "bias length": (int8_mlp, lambda g: _with(g, "b", shape=(3,), data=g.tensors["b"].data[:3],
                                              quant=_q(np.full(3, 5e-4), 0, 0)), "fully_connected_0"),
    "huge tensor": (float_mlp, lambda g: _with(_with(g, "x", shape=(10000, 10000, 8)), "y",
                                               shape=(10**8, 4)), "'x'"),
    # float constants: NaN weights are a corrupted file, not a model
    "nan float weight": (float_mlp, lambda g: _data(g, "w", lambda d: d.__setitem__((1, 2), np.nan)), "'w'"),
    "inf float bias": (float_mlp, lambda g: _data(g, "b", lambda d: d.__setitem__(0, np.inf)), "'b'"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_broken_model_is_a_model_format_error_naming_the_culprit(case, tmp_path):
    make, breaker, culprit = BROKEN[case]
    with pytest.raises(ModelFormatError) as e:
        _load(breaker(make()), tmp_path)
    assert culprit in e.value.message, e.value.message
    assert e.value.message.startswith(str(tmp_path)), "the message names the file"


def test_onnx_initializer_whose_data_does_not_match_its_dims(tmp_path):
    """onnx.checker passes a tensor with more data than its dims hold; numpy_helper.to_array
    then raised deep in the converter (found by the long fuzz run: mutant 307 of the ONNX CNN)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    c = numpy_helper.from_array(np.float32(1.5), "c")
    c.raw_data = np.ones(3, np.float32).tobytes()     # three floats for a scalar
    g = helper.make_graph([helper.make_node("Add", ["x", "c"], ["y"])], "m",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 2])], [c])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, tmp_path / "m.onnx")
    with pytest.raises(ModelFormatError, match="'c'"):
        load_model(tmp_path / "m.onnx")
