"""`microcompile quantize` and `deploy --quantize int8` end to end, and their user errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support.examples import benchmark

ROOT = Path(__file__).resolve().parents[2]

from support.digits import build_graph, load_digits_split, train  # noqa: E402

from litert_ref import run_reference  # noqa: E402
from microcompile.frontend import load_model  # noqa: E402
from microcompile.frontend.tflite.writer import write_tflite  # noqa: E402
from microcompile.ir import Graph, Node, Tensor
from microcompile.reference import interp  # noqa: E402


def run_cli(*args):
    p = subprocess.run([sys.executable, "-m", "microcompile", *map(str, args)], capture_output=True, text=True,
                       timeout=600, cwd=ROOT)
    assert "Traceback" not in p.stderr, p.stderr
    return p


@pytest.fixture(scope="module")
def trained():
    (xtr, ytr), test = load_digits_split()
    return train(xtr, ytr, epochs=200), xtr, test


@pytest.fixture(scope="module")
def digits(tmp_path_factory, trained):
    """The digits MLP as float32 .tflite, calibration samples and the test split."""
    tmp = tmp_path_factory.mktemp("digits")
    params, xtr, (xte, yte) = trained
    model = tmp / "digits.tflite"
    model.write_bytes(write_tflite(build_graph(params)))
    np.save(tmp / "calib.npy", xtr[:100])
    return model, tmp / "calib.npy", xte, yte


@pytest.mark.parametrize("io", ["float32", "int8"])
def test_quantize_command_writes_a_reloadable_int8_tflite(digits, tmp_path, io):
    model, calib, xte, yte = digits
    out = tmp_path / "digits_int8.tflite"
    p = run_cli("quantize", model, "--calibration", calib, "-o", out, "--io", io)
    assert p.returncode == 0, p.stderr
    assert "fully_connected_0" in p.stdout and "SQNR" in p.stdout and "calibrating" in p.stderr
    g = load_model(out)
    assert {g.tensors[n].dtype for n in g.inputs + g.outputs} == {io}
    assert {g.tensors[n.outputs[0]].dtype for n in g.nodes if n.op == "fully_connected"} == {"int8"}
    fw = [n for n in g.nodes if n.op == "fully_connected"][0]
    assert g.tensors[fw.inputs[1]].quant.axis == 0   # per-channel weights
    # LiteRT and our interpreter agree byte for byte on eight test digits (int8 I/O: the
    # digits quantized with the model's own input parameters, so every input byte varies)
    xs = xte[:8]
    if io == "int8":
        q = g.tensors[g.inputs[0]].quant
        xs = np.clip(np.round(xs / q.s) + q.zp, -128, 127).astype(np.int8)
        assert len(np.unique(xs)) > 16
    for x in xs:
        ref = run_reference(out.read_bytes(), {g.inputs[0]: x[None]})[g.outputs[0]]
        got = interp.run(g, {g.inputs[0]: x[None]})[g.outputs[0]]
        assert got.dtype == ref.dtype and np.array_equal(got, ref)


def test_bad_calibration_data_exits_2(digits, tmp_path):
    model, _, _, _ = digits
    np.save(tmp_path / "bad.npy", np.zeros((10, 63), np.float32))
    p = run_cli("quantize", model, "--calibration", tmp_path / "bad.npy", "-o", tmp_path / "o.tflite")
    assert p.returncode == 2 and "shape [10, 63]" in p.stderr and "hint:" in p.stderr
    np.save(tmp_path / "int.npy", np.zeros((10, 64), np.int32))
    p = run_cli("quantize", model, "--calibration", tmp_path / "int.npy", "-o", tmp_path / "o.tflite")
    assert p.returncode == 2 and "dtype int32" in p.stderr


def test_unquantizable_op_exits_2(tmp_path):
    t = {n: Tensor(n, (1, 4), "float32") for n in ("x", "y")}
    pad = Node("pad_v2", "pad", ("x",), ("y",), {"pads": ((0, 0), (0, 0)), "value": 1.0})
    g = Graph("q", t, (pad,), ("x",), ("y",))
    model = tmp_path / "pad.tflite"
    model.write_bytes(write_tflite(g))
    np.save(tmp_path / "c.npy", np.ones((3, 4), np.float32))
    p = run_cli("quantize", model, "--calibration", tmp_path / "c.npy", "-o", tmp_path / "o.tflite")
    assert p.returncode == 2 and "pad_v2" in p.stderr and "--keep-float" in p.stderr


def test_wrong_output_extension_and_missing_calibration(digits, tmp_path):
    model, calib, _, _ = digits
    p = run_cli("quantize", model, "--calibration", calib, "-o", tmp_path / "o.onnx")
    assert p.returncode == 2 and ".tflite" in p.stderr
    p = run_cli("deploy", model, "--board=host", "--quantize", "int8", "-o", tmp_path / "proj")
    assert p.returncode == 2 and "--calibration" in p.stderr


def test_deploy_quantized_on_host_matches_reference(digits, tmp_path):
    model, calib, xte, _ = digits
    np.save(tmp_path / "x.npy", xte[:1])
    p = run_cli("deploy", model, "--board=host", "--quantize", "int8", "--calibration", calib,
                "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy", "-o", tmp_path / "proj")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "outputs match reference: yes" in p.stdout
    _assert_device_equals_litert(tmp_path / "proj" / "digits_int8.tflite", xte[:1], tmp_path / "y.npy")


def _assert_device_equals_litert(int8_model: Path, x: np.ndarray, device_output: Path) -> None:
    """The device output of a `deploy --quantize int8` equals LiteRT BUILTIN_REF on the int8
    .tflite the firmware was built from (kept in the project), byte for byte."""
    assert int8_model.is_file()
    g = load_model(int8_model)
    ref = run_reference(int8_model.read_bytes(), {g.inputs[0]: x})[g.outputs[0]]
    got = np.load(device_output)
    assert got.dtype == ref.dtype and got.tobytes() == ref.tobytes(), (got, ref)


@pytest.fixture(scope="module")
def digits_onnx(tmp_path_factory, trained):
    """The same digits MLP exported to ONNX with onnx.helper (benchmarks/digits_models.py)."""
    import onnx
    onnx_model = benchmark("digits_models").onnx_model

    tmp = tmp_path_factory.mktemp("digits_onnx")
    params, xtr, (xte, yte) = trained
    onnx.save(onnx_model(params), tmp / "digits.onnx")
    np.save(tmp / "calib.npy", xtr[:100])
    return tmp / "digits.onnx", tmp / "calib.npy", xte, yte


def test_quantize_onnx_model(digits_onnx, tmp_path):
    model, calib, xte, yte = digits_onnx
    out = tmp_path / "digits_int8.tflite"
    p = run_cli("quantize", model, "--calibration", calib, "-o", out)
    assert p.returncode == 0, p.stderr
    g = load_model(out)
    float_graph = load_model(model)
    agree = [interp.run(g, {g.inputs[0]: xte[i:i + 1]})[g.outputs[0]].argmax()
             == interp.run(float_graph, {float_graph.inputs[0]: xte[i:i + 1]})[float_graph.outputs[0]].argmax()
             for i in range(100)]
    assert np.mean(agree) >= 0.97


@pytest.mark.qemu
def test_deploy_onnx_quantized_on_emulated_stm32(digits_onnx, tmp_path):
    model, calib, xte, _ = digits_onnx
    np.save(tmp_path / "x.npy", xte[:1])
    p = run_cli("deploy", model, "--board=stm32", "--emulate", "--quantize", "int8", "--calibration", calib,
                "--input", tmp_path / "x.npy", "--output", tmp_path / "y.npy", "-o", tmp_path / "proj")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "outputs match reference: yes" in p.stdout
    _assert_device_equals_litert(tmp_path / "proj" / "digits_int8.tflite", xte[:1], tmp_path / "y.npy")


def _activation_scales(path) -> dict[str, float]:
    g = load_model(path)
    return {n: g.tensors[n].quant.s for n in g.tensors
            if g.tensors[n].dtype == "int8" and not g.tensors[n].is_const and g.tensors[n].quant.axis is None}


def test_method_flag_picks_the_range_selection(digits, tmp_path):
    """--method reaches the quantizer: each method's model is the API's for that method, and
    min-max and MSE choose different activation ranges."""
    from support import flows

    model, calib, _, _ = digits
    scales = {}
    for method in ("minmax", "mse"):
        out = tmp_path / f"{method}.tflite"
        p = run_cli("quantize", model, "--calibration", calib, "-o", out, "--method", method)
        assert p.returncode == 0, p.stderr
        assert f"calibration method {method}" in p.stdout
        scales[method] = _activation_scales(out)
        api = flows.quantize(model, calib, tmp_path / f"{method}_api.tflite", method=method)
        assert scales[method] == _activation_scales(tmp_path / f"{method}_api.tflite")
    assert scales["minmax"].keys() == scales["mse"].keys()
    assert any(scales["minmax"][k] != scales["mse"][k] for k in scales["minmax"])


def test_sqnr_threshold_flags_the_layers_below_it(digits, tmp_path):
    model, calib, _, _ = digits
    for threshold, flagged in ((200, 3), (-50, 0)):   # fc, fc, softmax
        p = run_cli("quantize", model, "--calibration", calib, "-o", tmp_path / "q.tflite",
                    "--sqnr-threshold", threshold)
        assert p.returncode == 0, p.stderr
        assert p.stdout.count("<< below threshold") == flagged
        assert f"3 layers, {flagged} below {threshold:g} dB" in p.stdout


def test_keep_float_leaves_the_op_float_between_dequantize_and_quantize(tmp_path):
    """pad_v2 has no int8 kernel: refused without --keep-float (test_unquantizable_op_exits_2),
    kept in float32 with it, and the model still runs in LiteRT exactly as in our interpreter."""
    rng = np.random.default_rng(0)
    t = {n: Tensor(n, s, "float32") for n, s in (("x", (1, 8)), ("h", (1, 6)), ("p", (1, 8)), ("y", (1, 4)))}
    t["w1"] = Tensor("w1", (6, 8), "float32", data=rng.normal(0, 0.5, (6, 8)).astype(np.float32))
    t["w2"] = Tensor("w2", (4, 8), "float32", data=rng.normal(0, 0.5, (4, 8)).astype(np.float32))
    nodes = (Node("fully_connected", "fc1", ("x", "w1", ""), ("h",), {"activation": "RELU"}),
             Node("pad_v2", "pad", ("h",), ("p",), {"pads": ((0, 0), (1, 1)), "value": 0.5}),
             Node("fully_connected", "fc2", ("p", "w2", ""), ("y",), {"activation": "NONE"}))
    model = tmp_path / "m.tflite"
    model.write_bytes(write_tflite(Graph("m", t, nodes, ("x",), ("y",))))
    np.save(tmp_path / "c.npy", rng.normal(0, 1, (16, 8)).astype(np.float32))
    out = tmp_path / "q.tflite"
    p = run_cli("quantize", model, "--calibration", tmp_path / "c.npy", "-o", out, "--keep-float", "pad_v2")
    assert p.returncode == 0, p.stderr
    g = load_model(out)
    dtypes = [(n.op, g.tensors[n.outputs[0]].dtype) for n in g.nodes if n.op in ("fully_connected", "pad_v2")]
    assert dtypes == [("fully_connected", "int8"), ("pad_v2", "float32"), ("fully_connected", "int8")]
    pad = next(n for n in g.nodes if n.op == "pad_v2")
    producer = {o: n for n in g.nodes for o in n.outputs}
    assert producer[pad.inputs[0]].op == "dequantize"
    assert [n.op for n in g.nodes if pad.outputs[0] in n.inputs] == ["quantize"]
    for k in range(4):
        x = rng.normal(0, 1, (1, 8)).astype(np.float32)
        assert np.array_equal(interp.run(g, {g.inputs[0]: x})[g.outputs[0]],
                              run_reference(out.read_bytes(), {g.inputs[0]: x})[g.outputs[0]])
