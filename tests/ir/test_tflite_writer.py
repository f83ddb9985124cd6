"""tflite_writer: a multi-op model round-trips through LiteRT; header fields and padding rules."""

from __future__ import annotations

import numpy as np
import pytest
import tflite

from litert_ref import run_reference
from op_cases import build_graph, cases
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, QuantParams, Tensor, verify
from microcompile.reference import interp


def _q(scale, zp):
    return QuantParams((scale,), (zp,))


def small_resnet_int8() -> Graph:
    """conv -> depthwise -> add(residual) -> avgpool -> reshape -> fc -> softmax, int8."""
    rng = np.random.default_rng(7)
    wc = rng.integers(-127, 128, (4, 3, 3, 2), dtype=np.int8)
    wd = rng.integers(-127, 128, (1, 3, 3, 4), dtype=np.int8)
    wf = rng.integers(-127, 128, (5, 4), dtype=np.int8)
    wcs, wds = tuple(float(s) for s in np.float32(rng.uniform(0.002, 0.01, 4))), (0.01,)
    t = [Tensor("x", (1, 6, 6, 2), "int8", _q(0.05, -3)),
         Tensor("wc", wc.shape, "int8", QuantParams(wcs, (0,) * 4, 0), data=wc),
         Tensor("bc", (4,), "int32", QuantParams(tuple(float(np.float32(0.05) * np.float32(s)) for s in wcs), (0,) * 4, 0),
                data=rng.integers(-500, 500, 4, dtype=np.int32)),
         Tensor("c", (1, 6, 6, 4), "int8", _q(0.06, -128)),
         Tensor("wd", wd.shape, "int8", QuantParams(wds, (0,)), data=wd),
         Tensor("d", (1, 6, 6, 4), "int8", _q(0.08, 5)),
         Tensor("s", (1, 6, 6, 4), "int8", _q(0.1, 0)),
         Tensor("p", (1, 1, 1, 4), "int8", _q(0.1, 0)),
         Tensor("r", (1, 4), "int8", _q(0.1, 0)),
         Tensor("wf", wf.shape, "int8", _q(0.02, 0), data=wf),
         Tensor("l", (1, 5), "int8", _q(0.2, 10)),
         Tensor("y", (1, 5), "int8", _q(1 / 256, -128))]
    nodes = [Node("conv2d", "conv", ("x", "wc", "bc"), ("c",), {"stride": (1, 1), "padding": (1, 1, 1, 1), "activation": "RELU"}),
             Node("depthwise_conv2d", "dw", ("c", "wd", ""), ("d",), {"stride": (1, 1), "padding": (1, 1, 1, 1)}),
             Node("add", "add", ("c", "d"), ("s",), {"activation": "RELU6"}),
             Node("average_pool2d", "pool", ("s",), ("p",), {"filter": (6, 6), "stride": (6, 6), "padding": (0, 0, 0, 0)}),
             Node("reshape", "flat", ("p",), ("r",), {"shape": (1, 4)}),
             Node("fully_connected", "fc", ("r", "wf", ""), ("l",), {}),
             Node("softmax", "sm", ("l",), ("y",), {"beta": 1.0})]
    return verify(Graph("small_resnet", {x.name: x for x in t}, tuple(nodes), ("x",), ("y",)))


def test_round_trip_multi_op_model_layer_by_layer():
    g = small_resnet_int8()
    x = {"x": np.random.default_rng(1).integers(-128, 128, (1, 6, 6, 2), dtype=np.int8)}
    ref = run_reference(write_tflite(g), x, keep_all=True)
    got = interp.run(g, x, keep_all=True)
    for name in ("c", "d", "s", "p", "r", "l", "y"):
        np.testing.assert_array_equal(got[name], ref[name], err_msg=name)


def test_header_fields():
    model = tflite.Model.GetRootAsModel(write_tflite(small_resnet_int8()), 0)
    assert model.Version() == 3
    assert model.Buffers(0).DataLength() == 0
    codes = [model.OperatorCodes(i) for i in range(model.OperatorCodesLength())]
    assert all(c.DeprecatedBuiltinCode() == min(c.BuiltinCode(), 127) for c in codes)
    sg = model.Subgraphs(0)
    # per-channel weights keep their scales and axis
    wc = next(sg.Tensors(i) for i in range(sg.TensorsLength()) if sg.Tensors(i).Name() == b"wc")
    assert wc.Quantization().ScaleLength() == 4 and wc.Quantization().QuantizedDimension() == 0


def test_padding_neither_same_nor_valid_raises():
    case = dict(cases("conv2d", "float32", 1)[0], kernel=3, stride=1, dilation=1, padding="SAME")
    g = build_graph(case)
    node = g.nodes[0].replace(attrs=dict(g.nodes[0].attrs, padding=(1, 0, 1, 0)))
    bad = g.replace(nodes=(node,), tensors={**g.tensors, "out": g.tensors["out"].replace(
        shape=(g.tensors["out"].shape[0], g.tensors["out"].shape[1], g.tensors["out"].shape[2] - 2,
               g.tensors["out"].shape[3]))})
    with pytest.raises(ValueError, match="neither SAME"):
        write_tflite(bad)


def test_unsupported_op_raises():
    g = small_resnet_int8()
    g = g.replace(nodes=(g.nodes[0].replace(op="mystery"),))
    with pytest.raises(ValueError, match="unsupported"):
        write_tflite(g)
