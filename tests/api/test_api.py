"""The public Python API, driven as a notebook would, on the model the project makes itself
and on kws_ref_model: compile, reference, the QEMU twin (float and int8 inputs, a batch),
profile, tensor, build, deploy, quantize, tune (tiny), boards; and the CLI's reports equal the
API's for deploy, run and profile (the CLI is a layer over the API)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import microcompile as mc
from tests.conftest import REPO, model_path
from support.cli_run import run_cli

from support.digits import build_graph, load_digits_split, train  # noqa: E402

BOARD = "mps2-an386"


@pytest.fixture(scope="module")
def digits(tmp_path_factory):
    from microcompile.frontend.tflite.writer import write_tflite

    tmp = tmp_path_factory.mktemp("api")
    (xtr, ytr), (xte, yte) = load_digits_split()
    path = tmp / "digits_mlp.tflite"
    path.write_bytes(write_tflite(build_graph(train(xtr, ytr, epochs=60))))
    return path, xtr, xte, yte, tmp


def test_the_public_names_are_what_they_say(digits):
    """mc.quantize and mc.tune stay the functions after every subpackage is loaded."""
    import microcompile.autotune.run  # noqa: F401
    import microcompile.quantization  # noqa: F401

    assert callable(mc.quantize) and mc.quantize.__module__ == "microcompile.api.quantize"
    assert callable(mc.tune) and mc.tune.__module__ == "microcompile.api.tune"
    assert set(mc.__all__) >= {"compile", "quantize", "tune", "boards", "CompiledModel", "Device", "UserError",
                               "ModelError", "BoardError", "DoesNotFit", "DeviceError"}
    out = subprocess.run([sys.executable, "-m", "microcompile", "--version"], capture_output=True, text=True)
    assert out.stdout.strip() == f"microcompile {mc.__version__}"


def test_errors_are_one_hierarchy(digits, tmp_path):
    path = digits[0]
    with pytest.raises(mc.BoardError, match="esp32-toaster"):
        mc.compile(path, "esp32-toaster")
    (tmp_path / "bad.tflite").write_bytes(b"not a model")
    with pytest.raises(mc.ModelError) as e:
        mc.compile(tmp_path / "bad.tflite", BOARD)
    assert isinstance(e.value, mc.UserError) and e.value.hint
    with pytest.raises(mc.UserError, match="3 array"):
        mc.compile(path, "host").reference([np.zeros((1, 64))] * 3)


def test_the_reference_takes_a_batch_as_the_device_does(digits):
    path, _, xte, _, _ = digits
    cm = mc.compile(path, "host")
    one_by_one = np.stack([cm.reference(xte[k].reshape(1, 64))[0] for k in range(7)])
    for batch in (xte[:7].reshape(7, 1, 64), xte[:7], {"pixels": xte[:7]}):
        got = cm.reference(batch)[0]
        assert got.shape == (7, 1, 10) and np.array_equal(got, one_by_one)
    assert cm.reference(xte[:1])[0].shape == (1, 10)        # the model's own shape: one sample
    with pytest.raises(mc.UserError, match="a batch is"):
        cm.reference(xte[:7, :60])


@pytest.mark.qemu
def test_a_notebook_session_on_the_example_model(digits, tmp_path):
    path, xtr, xte, yte, _ = digits
    cm = mc.compile(path, board=BOARD)
    assert isinstance(cm, mc.CompiledModel) and cm.memory.arena_bytes >= cm.memory.lower_bound > 0
    assert [s.name for s in cm.inputs] == list(cm.graph.inputs) and cm.inputs[0].shape == (1, 64)
    assert "fully_connected" in cm.summary() and cm.report["arena_bytes"] == cm.memory.arena_bytes
    x = xte[:1].reshape(1, 64)
    ref = cm.reference(x)[0]
    with cm.emulate() as dev:
        y = dev.run(x)[0]
        batch = dev.run(xte[:5].reshape(5, 1, 64))[0]
        prof = dev.profile(x)
        hidden = cm.graph.nodes[0].outputs[0]
        t = dev.tensor(hidden, x)
    np.testing.assert_allclose(y, ref, rtol=0, atol=1e-5 * np.abs(ref).max())
    assert batch.shape == (5, 1, 10)
    for k in range(5):
        np.testing.assert_allclose(batch[k], cm.reference(xte[k].reshape(1, 64))[0], rtol=0, atol=1e-5)
    assert prof.unit == "instructions" and len(prof.rows) == len(cm.kernels)
    assert sum(r.count for r in prof.rows) <= prof.total
    np.testing.assert_allclose(t, np.maximum(x @ _weights(cm, 0).T + _bias(cm, 0), 0), rtol=1e-5, atol=1e-5)
    fw = cm.build(tmp_path / "project")
    assert fw.elf.is_file() and fw.fit.fits and (tmp_path / "project" / "Makefile").is_file()
    result = cm.deploy(tmp_path / "deployed", emulate=True, inputs=x)
    assert result.verified and result.report["instructions"] > 0


def _weights(cm, k):
    n = cm.graph.nodes[k]
    return cm.graph.tensors[n.inputs[1]].data


def _bias(cm, k):
    n = cm.graph.nodes[k]
    return cm.graph.tensors[n.inputs[2]].data


@pytest.mark.qemu
def test_quantize_compile_and_run_float_and_int8_inputs(digits, tmp_path):
    path, xtr, xte, _, _ = digits
    q = mc.quantize(path, calibration=xtr[:100].reshape(100, 1, 64))
    assert q.graph.tensors[q.graph.inputs[0]].dtype == "float32"      # io float32 by default
    q8 = mc.quantize(path, calibration=xtr[:100].reshape(100, 1, 64), io="int8")
    q8.save(tmp_path / "q8.tflite")
    cm = mc.compile(tmp_path / "q8.tflite", BOARD)
    spec = cm.inputs[0]
    assert spec.dtype == "int8" and spec.scale > 0
    x = xte[:1].reshape(1, 64)
    xq = np.clip(np.sign(x / spec.scale) * np.floor(np.abs(x / spec.scale) + 0.5) + spec.zero_point,
                 -128, 127).astype(np.int8)
    with cm.emulate() as dev:
        from_float = dev.run(x)[0]                   # quantized with the input's scale and zero point
        from_int8 = dev.run(xq)[0]
        deq = dev.run(xq, dequantize=True)[0]
    assert np.array_equal(from_float, from_int8) and np.array_equal(from_int8, cm.reference(xq)[0])
    out = cm.outputs[0]
    np.testing.assert_allclose(deq, (from_int8.astype(np.float32) - out.zero_point) * out.scale)


@pytest.mark.qemu
def test_tiny_tune_then_compile_with_its_records(digits, tmp_path):
    path, xtr, _, _, _ = digits
    q = mc.quantize(path, calibration=xtr[:50].reshape(50, 1, 64), io="int8")
    cm = mc.compile(q, BOARD)
    records = mc.tune(cm, trials=2, records=tmp_path / "r.jsonl")
    assert isinstance(records, mc.Records) and len(records) >= 2 and records.result.trials == 2
    again = mc.compile(q, BOARD, records=records)
    assert again.deploy(tmp_path / "p", emulate=True).verified


def test_boards():
    boards = mc.boards()
    assert "mps2-an386" in {b.name for b in boards} and mc.board("stm32").name == "nucleo-f446re"
    assert all(isinstance(b, mc.Board) for b in boards)


def assert_same_run_report(cli: dict, ours: dict):
    """Equal but for the count, which two runs of one build may give one counter tick apart
    (`count_resolution`: where the tick falls depends on when the host's bytes arrived)."""
    a, b = cli.pop("count_per_inference"), ours.pop("count_per_inference")
    assert cli == ours
    assert cli["count_resolution"] > 0 and abs(a - b) <= cli["count_resolution"] + 0.5


@pytest.mark.qemu
@pytest.mark.heavy
def test_the_cli_reports_equal_the_apis_on_kws(tmp_path):
    """deploy, run and profile: what the CLI writes is what the API returns, bit for bit."""
    path = model_path("kws_ref_model")
    cm = mc.compile(path, BOARD)
    x = np.random.default_rng(3).integers(-128, 128, cm.inputs[0].shape).astype(np.int8)
    np.save(tmp_path / "x.npy", x)

    api = cm.deploy(tmp_path / "api-deploy", emulate=True, inputs=x)
    p = run_cli("deploy", path, "--board", BOARD, "--emulate", "--input", tmp_path / "x.npy", "-o",
                tmp_path / "cli-deploy", "--report", tmp_path / "deploy.json", "--output", tmp_path / "y.npy")
    assert p.returncode == 0, p.stderr
    cli = json.loads((tmp_path / "deploy.json").read_text())
    ours = json.loads(json.dumps(api.report))
    for k in ("project_dir", "fit"):
        cli.pop(k), ours.pop(k)
    assert cli == ours         # the self-test firmware starts from reset: its counts are exact
    assert np.array_equal(np.load(tmp_path / "y.npy"), api.outputs[cm.graph.outputs[0]])

    with cm.emulate(tmp_path / "api-agent") as dev:
        checked = dev.check(x)
        prof = dev.profile(x)
        tick = dev.info.resolution()
    p = run_cli("run", path, "--board", BOARD, "--emulate", "--input", tmp_path / "x.npy", "-o", tmp_path / "cli-run",
                "--report", tmp_path / "run.json")
    assert p.returncode == 0, p.stderr
    cli = json.loads((tmp_path / "run.json").read_text())
    ours = json.loads(json.dumps(checked.report))
    cli.pop("project_dir"), ours.pop("project_dir")
    assert_same_run_report(cli, ours)
    p = run_cli("profile", path, "--board", BOARD, "--emulate", "--input", tmp_path / "x.npy", "-o",
                tmp_path / "cli-agent", "--json", tmp_path / "p.json")
    assert p.returncode == 0, p.stderr
    cli = json.loads((tmp_path / "p.json").read_text())
    # Each kernel's count is a difference of two counter reads, so two runs may give it one tick
    # apart (`Info.resolution`): the layers must be the same, each count within one tick.
    assert [(r["name"], r["op"], r["macs"]) for r in cli["layers"]] == \
        [(r["name"], r["op"], r["macs"]) for r in prof.report["layers"]] and cli["unit"] == prof.unit
    for a, b in zip(cli["layers"], prof.report["layers"]):
        assert abs(a["count"] - b["count"]) <= tick + 0.5
