"""The TFLite reader against the TFLite runtime itself (ai_edge_litert), on the MLPerf Tiny
models of ../shared/models (conftest.model_path), plus malformed and unsupported inputs.

Malformed and unsupported models are made by patching the bytes of a real model in
place (the flatbuffer layout stays valid; only field values change).
"""

from __future__ import annotations

import struct
from collections import Counter

import numpy as np
import pytest

from tests.conftest import model_path
from microcompile.errors import ModelFormatError, UnsupportedOpError, UserError
from microcompile.frontend import list_tflite_ops, load_model, load_tflite
from microcompile.ir import verify
from microcompile.ir.compare import compare
from microcompile.ir.summary import format_table, layer_table

# Declarative plan: model -> expected TFLite op counts, input shape, total MACs, params.
# params are MODELS.md's figure minus the 2 elements of the RESHAPE shape constant, which
# the reader drops (our reshape carries its shape as an attribute).
_KWS_OPS = {"CONV_2D": 5, "DEPTHWISE_CONV_2D": 4, "AVERAGE_POOL_2D": 1, "RESHAPE": 1,
            "FULLY_CONNECTED": 1, "SOFTMAX": 1}
_RESNET_OPS = {"CONV_2D": 9, "ADD": 3, "AVERAGE_POOL_2D": 1, "RESHAPE": 1,
               "FULLY_CONNECTED": 1, "SOFTMAX": 1}
PLAN = {
    "kws_ref_model": dict(ops=_KWS_OPS, input=(1, 49, 10, 1), dtype="int8", macs=2_656_768, params=22_606 - 2),
    "kws_ref_model_float32": dict(ops=_KWS_OPS, input=(1, 49, 10, 1), dtype="float32", macs=2_656_768,
                                  params=22_606 - 2),
    "pretrainedResnet_quant": dict(ops=_RESNET_OPS, input=(1, 32, 32, 3), dtype="int8", macs=12_501_632,
                                   params=77_708 - 2),
    "pretrainedResnet": dict(ops=_RESNET_OPS, input=(1, 32, 32, 3), dtype="float32", macs=12_501_632,
                             params=77_708 - 2),
    "ad01_int8": dict(ops={"FULLY_CONNECTED": 10}, input=(1, 640), dtype="int8", macs=264_192, params=265_864),
    "ad01_fp32": dict(ops={"FULLY_CONNECTED": 10}, input=(1, 640), dtype="float32", macs=264_192,
                      params=265_864),
}


@pytest.fixture(params=sorted(PLAN), ids=sorted(PLAN))
def model(request):
    return request.param, model_path(request.param)


def _interpreter(path, reference: bool = False):
    from litert_ref import Interpreter, OpResolverType
    kw = {"experimental_op_resolver_type": OpResolverType.BUILTIN_REF} if reference else {}
    it = Interpreter(model_path=str(path), **kw)
    it.allocate_tensors()
    return it


# ---------------------------------------------------------------------------------------
# Whole models

def test_op_counts_and_io(model):
    name, path = model
    plan = PLAN[name]
    g = load_tflite(path)
    verify(g)
    assert g.name == name
    assert Counter(n.name.rsplit("_", 1)[0].upper() for n in g.nodes) == Counter(plan["ops"])
    assert [g.tensors[i].shape for i in g.inputs] == [plan["input"]]
    assert {g.tensors[i].dtype for i in g.inputs + g.outputs} == {plan["dtype"]}
    # Every node remembers the TFLite output tensor it came from.
    assert all(len(n.origin) == 1 and n.origin[0] for n in g.nodes)
    # No RESHAPE keeps its shape tensor as an input.
    assert all(len(n.inputs) == 1 for n in g.nodes if n.op == "reshape")


def test_tensors_match_litert(model):
    """Shapes, dtypes, quantization and constant data agree with the TFLite runtime."""
    _, path = model
    g = load_tflite(path)
    # The reference resolver: XNNPACK (the default) rewrites per-tensor weight
    # quantization into per-channel when it prepares the model.
    it = _interpreter(path, reference=True)
    details = {d["name"]: d for d in it.get_tensor_details()}
    assert set(g.tensors) <= set(details)
    for tname, t in g.tensors.items():
        d = details[tname]
        assert t.shape == tuple(int(s) for s in d["shape"]), tname
        assert np.dtype(d["dtype"]).name == t.dtype, tname
        qp = d["quantization_parameters"]
        if t.dtype == "float32":
            assert t.quant is None
        elif len(qp["scales"]) == 0:
            assert t.quant is None, tname
        else:
            np.testing.assert_array_equal(np.float32(t.quant.scale), qp["scales"])
            np.testing.assert_array_equal(t.quant.zero_point, qp["zero_points"])
            expected_axis = int(qp["quantized_dimension"]) if len(qp["scales"]) > 1 else None
            assert t.quant.axis == expected_axis, tname
        if t.is_const:
            np.testing.assert_array_equal(t.data, it.get_tensor(d["index"]), err_msg=tname)


def test_int8_weights_are_per_channel():
    g = load_tflite(model_path("kws_ref_model"))
    conv = next(n for n in g.nodes if n.op == "conv2d")
    dw = next(n for n in g.nodes if n.op == "depthwise_conv2d")
    assert g.tensors[conv.inputs[1]].quant.axis == 0     # OHWI: output channels first
    assert g.tensors[dw.inputs[1]].quant.axis == 3       # 1HWC: channels last
    assert g.tensors[conv.inputs[2]].dtype == "int32"


def test_conv_attributes():
    """kws conv 0: 10x4 kernel, stride 2, SAME on 49x10 -> the odd pixel goes bottom."""
    g = load_tflite(model_path("kws_ref_model"))
    n = g.nodes[0]
    assert n.op == "conv2d" and n.name == "conv_2d_0"
    assert n.attrs == {"stride": (2, 2), "dilation": (1, 1), "padding": (4, 1, 5, 1), "activation": "RELU"}
    assert g.nodes[1].attrs["depth_multiplier"] == 1
    pool = next(n for n in g.nodes if n.op == "average_pool2d")
    assert pool.attrs["filter"] == (25, 5) and pool.attrs["padding"] == (0, 0, 0, 0)
    reshape = next(n for n in g.nodes if n.op == "reshape")
    assert reshape.attrs["shape"] == (1, 64)
    assert next(n for n in g.nodes if n.op == "softmax").attrs["beta"] == 1.0


def test_load_from_bytes_and_load_model(tmp_path):
    path = model_path("ad01_int8")
    g = load_tflite(path.read_bytes(), name="ad")
    assert g.name == "ad" and len(g.nodes) == 10
    assert len(load_model(path).nodes) == 10
    other = tmp_path / "model.bin"                 # no .tflite extension: sniffed by identifier
    other.write_bytes(path.read_bytes())
    assert len(load_model(other).nodes) == 10


def test_load_model_dispatches_onnx_to_the_onnx_reader(tmp_path):
    p = tmp_path / "m.onnx"
    p.write_bytes(b"\x08\x07")   # an empty ModelProto: the ONNX checker rejects it
    with pytest.raises(UserError, match="onnx.checker"):
        load_model(p)


# ---------------------------------------------------------------------------------------
# Reference runs through our interpreter

def _is_hybrid(g) -> bool:
    """A float op with int8 constant weights: TFLite runs it as a hybrid kernel."""
    return any(g.tensors[n.inputs[0]].dtype == "float32" and g.tensors[i].is_const
               and g.tensors[i].dtype == "int8" for n in g.nodes for i in n.inputs[1:] if i)


def test_hybrid_model_keeps_int8_weights():
    """kws_ref_model_float32 is dynamic-range quantized: its CONV_2D weights are int8 with a
    per-tensor scale under float activations. The reader keeps them as they are."""
    g = load_tflite(model_path("kws_ref_model_float32"))
    w = g.tensors[g.nodes[0].inputs[1]]
    assert (w.dtype, w.quant.axis) == ("int8", None) and _is_hybrid(g)
    assert not _is_hybrid(load_tflite(model_path("pretrainedResnet")))


def test_interp_matches_litert_reference(model):
    from microcompile.reference.interp import run

    _, path = model
    g = load_tflite(path)
    it = _interpreter(path, reference=True)
    (inp,), outs = it.get_input_details(), it.get_output_details()
    rng = np.random.default_rng(1234)
    for _ in range(3):
        if inp["dtype"] == np.int8:
            x = rng.integers(-128, 128, size=inp["shape"], dtype=np.int8)
        else:
            x = rng.standard_normal(inp["shape"]).astype(np.float32)
        it.set_tensor(inp["index"], x)
        it.invoke()
        got = run(g, {g.inputs[0]: x})
        for name, d in zip(g.outputs, outs):
            ref = it.get_tensor(d["index"])
            c = compare(got[name], ref)      # int8 byte-equal, float32 within 1e-5
            assert c.equal, f"{name}: {c}"


# ---------------------------------------------------------------------------------------
# Malformed files

def _good_bytes() -> bytes:
    return model_path("kws_ref_model").read_bytes()


@pytest.mark.parametrize("frac", [0.0, 0.001, 0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99, 0.999, "-1", "-4"])
def test_truncated_file(frac):
    data = _good_bytes()
    n = len(data) + int(frac) if isinstance(frac, str) else int(len(data) * frac)
    with pytest.raises(ModelFormatError) as e:
        load_tflite(data[:n])
    assert e.value.hint


@pytest.mark.parametrize("data", [
    b"",
    b"\x89PNG\r\n\x1a\n" + b"\x00" * 64,
    np.random.default_rng(0).integers(0, 256, 4096, dtype=np.uint8).tobytes(),
    b"\x10\x00\x00\x00TFL3" + np.random.default_rng(1).integers(0, 256, 512, dtype=np.uint8).tobytes(),
    b"\xff\xff\xff\x7fTFL3",
], ids=["empty", "png", "random", "random-with-identifier", "huge-root-offset"])
def test_not_a_tflite_file(data, tmp_path):
    p = tmp_path / "bad.tflite"
    p.write_bytes(data)
    with pytest.raises(ModelFormatError):
        load_tflite(p)
    with pytest.raises(ModelFormatError):
        load_tflite(data)
    with pytest.raises(ModelFormatError):
        list_tflite_ops(p)


def test_random_byte_corruption_never_leaks_raw_errors():
    data = _good_bytes()
    rng = np.random.default_rng(7)
    for _ in range(100):
        bad = bytearray(data)
        bad[rng.integers(8, len(bad))] = rng.integers(0, 256)
        try:
            load_tflite(bytes(bad))
        except UserError:
            pass


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(ModelFormatError, match="does not exist"):
        load_tflite(tmp_path / "nope.tflite")
    with pytest.raises(ModelFormatError, match="directory"):
        load_tflite(tmp_path)
    with pytest.raises(ModelFormatError, match="does not exist"):
        load_model(tmp_path / "nope.tflite")
    with pytest.raises(ModelFormatError, match="directory"):
        load_model(tmp_path)


# ---------------------------------------------------------------------------------------
# Unsupported ops, made by patching opcodes of a real model

def _patch_opcode(data: bytearray, old: int, new: int) -> None:
    """Rewrite OperatorCode `old` to `new` in place (both the int8 and int32 fields)."""
    import tflite

    m = tflite.Model.GetRootAs(data, 0)
    for i in range(m.OperatorCodesLength()):
        tab = m.OperatorCodes(i)._tab
        if max(m.OperatorCodes(i).BuiltinCode(), m.OperatorCodes(i).DeprecatedBuiltinCode()) != old:
            continue
        for vt_off, fmt in ((4, "<b"), (10, "<i")):       # deprecated_builtin_code, builtin_code
            o = tab.Offset(vt_off)
            if o:
                struct.pack_into(fmt, data, tab.Pos + o, new)
        return
    raise AssertionError(f"opcode {old} not in model")


def _patch_fused_activation(data: bytearray, layer: int, act: int) -> None:
    import tflite

    op = tflite.Model.GetRootAs(data, 0).Subgraphs(0).Operators(layer)
    opts = op.BuiltinOptions()
    o = opts.Offset(10)                                    # Conv2DOptions.fused_activation_function
    assert o, "the field must be present to patch it in place"
    struct.pack_into("<b", data, opts.Pos + o, act)


def test_unsupported_ops_are_all_listed(tmp_path):
    data = bytearray(_good_bytes())
    _patch_opcode(data, 1, 11)     # AVERAGE_POOL_2D -> L2_NORMALIZATION (layer 9)
    _patch_opcode(data, 25, 66)    # SOFTMAX -> SIN (layer 12)
    _patch_fused_activation(data, 0, 4)   # conv 0 with fused TANH
    with pytest.raises(UnsupportedOpError) as e:
        load_tflite(bytes(data))
    msg = str(e.value)
    assert "unsupported op CONV_2D with fused activation TANH at layer 0 (" in msg
    assert "unsupported op L2_NORMALIZATION at layer 9 (functional_1/average_pooling2d/AvgPool)" in msg
    assert "unsupported op SIN at layer 12 (" in msg
    assert "CONV_2D" in e.value.hint and "SOFTMAX" in e.value.hint

    p = tmp_path / "patched.tflite"
    p.write_bytes(bytes(data))
    listing = list_tflite_ops(p)
    assert len(listing) == 13
    assert [i for i, _, _, ok in listing if not ok] == [0, 9, 12]
    assert listing[9][:3] == (9, "L2_NORMALIZATION", "functional_1/average_pooling2d/AvgPool")


def test_list_ops_of_supported_model():
    listing = list_tflite_ops(model_path("pretrainedResnet_quant"))
    assert all(ok for *_, ok in listing)
    assert Counter(op for _, op, _, _ in listing) == Counter(_RESNET_OPS)


def test_repeated_tensor_names_are_deduplicated():
    import tflite

    data = bytearray(model_path("ad01_fp32").read_bytes())
    sg = tflite.Model.GetRootAs(data, 0).Subgraphs(0)
    names = [sg.Tensors(i).Name() for i in range(sg.TensorsLength())]
    # Give tensor b the name of tensor a (same length, so the patch fits in place).
    a, b = next((i, j) for i in range(len(names)) for j in range(i + 1, len(names))
                if len(names[i]) == len(names[j]))
    tab = sg.Tensors(b)._tab
    start = tab.Vector(tab.Offset(10))                     # Tensor.name string bytes
    data[start:start + len(names[a])] = names[a]
    g = load_tflite(bytes(data))
    assert names[a].decode() in g.tensors and names[a].decode() + "_1" in g.tensors
    assert len(g.tensors) == len(load_tflite(model_path("ad01_fp32")).tensors)


# ---------------------------------------------------------------------------------------
# summary.py

def test_layer_table_totals(model):
    name, path = model
    rows = layer_table(load_tflite(path))
    assert sum(r["macs"] for r in rows) == PLAN[name]["macs"]
    assert sum(r["params"] for r in rows) == PLAN[name]["params"]
    text = format_table(rows)
    assert f"{PLAN[name]['macs']:,} MACs" in text and f"{PLAN[name]['params']:,} params" in text
    assert len(text.splitlines()) == len(rows) + 3


def test_layer_table_row_contents():
    rows = layer_table(load_tflite(model_path("kws_ref_model")))
    r = rows[0]
    assert (r["name"], r["op"], r["activation"], r["macs"]) == ("conv_2d_0", "conv2d", "RELU", 320_000)
    assert r["inputs"][0]["shape"] == (1, 49, 10, 1) and r["outputs"][0]["shape"] == (1, 25, 5, 64)
    assert r["params"] == 64 * 10 * 4 * 1 + 64
    assert r["weight_bytes"] == 64 * 10 * 4 + 64 * 4
    assert "per-channel[64]" in r["quant"]
    assert rows[10]["op"] == "reshape" and rows[10]["params"] == 0


def test_roundtrip_through_writer(model):
    """reader(writer(g)) == g."""
    from microcompile.frontend.tflite.writer import write_tflite
    _, path = model
    g = load_tflite(path)
    g2 = load_tflite(write_tflite(g), name=g.name)
    assert [(n.op, n.name, n.inputs, n.outputs, n.attrs) for n in g2.nodes] == \
        [(n.op, n.name, n.inputs, n.outputs, n.attrs) for n in g.nodes]
    assert (g2.inputs, g2.outputs, set(g2.tensors)) == (g.inputs, g.outputs, set(g.tensors))
    for name, t in g.tensors.items():
        t2 = g2.tensors[name]
        assert (t2.shape, t2.dtype) == (t.shape, t.dtype), name
        assert (t.quant is None and t2.quant is None) or t.quant.same_as(t2.quant), name
        if t.is_const:
            np.testing.assert_array_equal(t2.data, t.data, err_msg=name)
