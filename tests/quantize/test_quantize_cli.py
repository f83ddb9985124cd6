"""`microcompile quantize` and `deploy --quantize int8` end to end, and their user errors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "digits"))

from make_model import build_graph, load_digits_split, train  # noqa: E402

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
                "--input", tmp_path / "x.npy", "-o", tmp_path / "proj")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "outputs match reference: yes" in p.stdout
    assert (tmp_path / "proj" / "digits_int8.tflite").is_file()


@pytest.fixture(scope="module")
def digits_onnx(tmp_path_factory, trained):
    """The same digits MLP exported to ONNX with onnx.helper (benchmarks/digits_models.py)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import onnx
    from digits_models import onnx_model

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
                "--input", tmp_path / "x.npy", "-o", tmp_path / "proj")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "outputs match reference: yes" in p.stdout
