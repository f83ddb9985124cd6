"""tflite_writer: a multi-op model round-trips through LiteRT; header fields and padding rules."""

from __future__ import annotations

import numpy as np
import pytest
import tflite

from litert_ref import run_reference
from support.op_cases import build_graph, cases
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


def _symmetric_padding_graph(op: str, dtype: str, hw: int, stride: int) -> Graph:
    """One conv2d / depthwise_conv2d / max_pool2d (3x3, padding 1 on every side, PyTorch's
    stem) on an hw x hw input: padding neither SAME nor VALID for even sizes or stride 2."""
    case = dict(cases(op, dtype, 1, seed=3)[0], kernel=3, stride=stride, dilation=1, padding="SAME", batch=1)
    case.update(hw=hw, cin=3, cout=4, multiplier=1, c=3, rect=False)
    g = build_graph(case)
    n = g.nodes[0]
    node = n.replace(attrs=dict(n.attrs, padding=(1, 1, 1, 1)))
    out = g.tensors["out"]
    oh, ow = ((d + 2 - 3) // stride + 1 for d in (hw, hw + 1))
    return verify(g.replace(nodes=(node,), tensors={**g.tensors, "out": out.replace(
        shape=(out.shape[0], oh, ow, out.shape[3]))}))


@pytest.mark.parametrize("op", ["conv2d", "depthwise_conv2d", "max_pool2d"])
@pytest.mark.parametrize("dtype", ["int8", "float32"])
@pytest.mark.parametrize("hw, stride", [(8, 2), (7, 2), (9, 2)])
def test_padding_neither_same_nor_valid_becomes_an_explicit_pad(op, dtype, hw, stride):
    """PyTorch's symmetric padding is written as PAD (PADV2 with the lowest value before a
    max pool) + a VALID op, as the TFLite converter does, and LiteRT agrees with the graph."""
    from microcompile.frontend.tflite.reader import load_tflite
    from microcompile.frontend.tflite.writer import tflite_padding

    g = _symmetric_padding_graph(op, dtype, hw, stride)
    n = g.nodes[0]
    with pytest.raises(ValueError, match="neither SAME"):   # what TFLite cannot say directly
        tflite_padding(n, g.tensors[n.inputs[0]].shape[1:3], (3, 3))
    model = write_tflite(g)
    back = load_tflite(model)
    assert [m.op for m in back.nodes] == ["pad_v2" if op == "max_pool2d" else "pad", op]
    assert back.nodes[1].attrs["padding"] == (0, 0, 0, 0)
    rng = np.random.default_rng(hw)
    x = g.tensors[g.inputs[0]]
    inputs = {x.name: (rng.integers(-128, 128, x.shape).astype(np.int8) if dtype == "int8"
                       else rng.normal(0, 1, x.shape).astype(np.float32))}
    ref, got = run_reference(model, inputs)["out"], interp.run(g, inputs)["out"]
    if dtype == "int8":
        assert np.array_equal(ref, got)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6 * float(np.abs(ref).max()))


def test_average_pool_padding_neither_same_nor_valid_raises():
    """TFLite's AVERAGE_POOL_2D leaves padding out of the divisor, which no PAD can express."""
    case = dict(cases("average_pool2d", "float32", 1)[0], kernel=3, stride=2, padding="SAME", hw=8, batch=1)
    g = build_graph(case)
    node = g.nodes[0].replace(attrs=dict(g.nodes[0].attrs, padding=(1, 1, 1, 1)))
    out = g.tensors["out"]
    bad = g.replace(nodes=(node,), tensors={**g.tensors, "out": out.replace(shape=(1, 4, 4, out.shape[3]))})
    with pytest.raises(ValueError, match="neither SAME"):
        write_tflite(bad)


def test_unsupported_op_raises():
    g = small_resnet_int8()
    g = g.replace(nodes=(g.nodes[0].replace(op="mystery"),))
    with pytest.raises(ValueError, match="unsupported"):
        write_tflite(g)
