"""Calibration data checks, unquantizable ops (and keeping them float), already-int8 models."""

from __future__ import annotations

import numpy as np
import pytest

from microcompile.ir import Graph, Node, Tensor
from microcompile.reference import interp
from microcompile.quantization import (CalibrationDataError, QuantizeOptions, UnquantizableOpError, load_calibration,
                                      quantize)


def _conv_graph():
    rng = np.random.default_rng(0)
    t = {"x": Tensor("x", (1, 4, 4, 3), "float32"), "h": Tensor("h", (1, 4, 4, 2), "float32"),
         "y": Tensor("y", (1, 4, 4, 2), "float32"), "p": Tensor("p", (1, 6, 6, 2), "float32"),
         "w": Tensor("w", (2, 3, 3, 3), "float32", data=rng.normal(0, 0.5, (2, 3, 3, 3)).astype(np.float32)),
         "b": Tensor("b", (2,), "float32", data=np.array([0.1, -0.2], np.float32))}
    conv = {"stride": (1, 1), "dilation": (1, 1), "padding": (1, 1, 1, 1), "activation": "RELU"}
    pool = {"filter": (3, 3), "stride": (1, 1), "padding": (0, 0, 0, 0), "activation": "NONE"}
    nodes = (Node("conv2d", "conv", ("x", "w", "b"), ("h",), conv),
             Node("pad_v2", "pad", ("h",), ("p",), {"pads": ((0, 0), (1, 1), (1, 1), (0, 0)), "value": 0.5}),
             Node("average_pool2d", "pool", ("p",), ("y",), pool))
    return Graph("g", t, nodes, ("x",), ("y",))


def _samples(n=8, shape=(1, 4, 4, 3)):
    rng = np.random.default_rng(1)
    return [{"x": rng.normal(0, 1, shape).astype(np.float32)} for _ in range(n)]


@pytest.mark.parametrize("data,ok", [
    (np.zeros((5, 4, 4, 3), np.float32), True),          # a batch
    (np.zeros((5, 1, 4, 4, 3), np.float64), True),       # a batch of (1, ...) samples
    (np.zeros((4, 4, 3), np.float32), True),             # one sample
    (np.zeros((5, 3, 4, 4), np.float32), True),          # NCHW (ONNX layout)
    (np.zeros((5, 4, 4, 2), np.float32), False),         # wrong shape
    (np.zeros((5, 48), np.float32), False),              # flattened
    (np.zeros((5, 4, 4, 3), np.int8), False),            # wrong dtype
    (np.zeros((5, 4, 4, 3), np.uint8), False),           # integers are not guessed at
])
def test_calibration_data_shape_and_dtype(tmp_path, data, ok):
    g = _conv_graph()
    path = tmp_path / "calib.npy"
    np.save(path, data)
    if ok:
        samples = load_calibration(path, g)
        assert all(s["x"].shape == (1, 4, 4, 3) and s["x"].dtype == np.float32 for s in samples)
    else:
        with pytest.raises(CalibrationDataError) as e:
            load_calibration(path, g)
        assert e.value.exit_code == 2 and e.value.hint


def test_nchw_samples_are_transposed(tmp_path):
    x = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    np.savez(tmp_path / "c.npz", x=x)
    samples = load_calibration(tmp_path / "c.npz", _conv_graph())
    assert np.array_equal(samples[1]["x"][0], x[1].transpose(1, 2, 0))


def test_directory_and_npz_name_errors(tmp_path):
    g = _conv_graph()
    (tmp_path / "d").mkdir()
    for k in range(3):
        np.save(tmp_path / "d" / f"{k}.npy", np.full((4, 4, 3), k, np.float32))
    assert [s["x"][0, 0, 0, 0] for s in load_calibration(tmp_path / "d", g)] == [0, 1, 2]
    with pytest.raises(CalibrationDataError, match="no .npy"):
        load_calibration(tmp_path, g)
    np.savez(tmp_path / "two.npz", a=np.zeros((2, 4, 4, 3)), b=np.zeros((2, 4, 4, 3)))
    with pytest.raises(CalibrationDataError, match="no array for input"):
        load_calibration(tmp_path / "two.npz", g)
    with pytest.raises(CalibrationDataError, match="does not exist"):
        load_calibration(tmp_path / "missing.npz", g)


def test_unquantizable_op_is_named_with_a_keep_float_hint():
    with pytest.raises(UnquantizableOpError) as e:
        quantize(_conv_graph(), _samples(), progress=False)
    assert "pad_v2" in e.value.message and "--keep-float pad_v2" in e.value.hint and e.value.exit_code == 2


def test_keep_float_wraps_the_op_in_dequantize_quantize():
    g = _conv_graph()
    q = quantize(g, _samples(), QuantizeOptions(keep_float=("pad_v2",)), progress=False)
    ops = [n.op for n in q.graph.nodes]
    assert ops == ["quantize", "conv2d", "dequantize", "pad_v2", "quantize", "average_pool2d", "dequantize"]
    pad = next(n for n in q.graph.nodes if n.op == "pad_v2")
    assert q.graph.tensors[pad.inputs[0]].dtype == "float32" == q.graph.tensors[pad.outputs[0]].dtype
    assert min(r.sqnr_db for r in q.layers) > 25
    x = _samples(1)[0]
    assert np.allclose(interp.run(q.graph, x)["y"], interp.run(g, x)["y"], atol=0.05)


def test_already_int8_model_is_refused():
    g = quantize(_conv_graph(), _samples(), QuantizeOptions(keep_float=("pad_v2",), io="int8"), progress=False).graph
    from microcompile.errors import UserError
    with pytest.raises(UserError, match="already quantized"):
        quantize(g, _samples(), progress=False)
