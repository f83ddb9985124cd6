"""`microcompile verify`: every layer's device tensor against our interpreter and LiteRT.

Plans: the multi-op models of multi_op_models.py on the host and in QEMU (mps2-an386), and
every MLPerf Tiny model in QEMU; int8 must have zero differing elements in every layer,
float32 stay within 1e-5 relative (ir/compare.py). Plus: a corrupted weight is found at its
layer, and the CLI's exit codes, multi-input .npz, multi-output .npz and inspect output.
"""

import json
import re
import subprocess
import sys

import numpy as np
import pytest

from microcompile import project
from support import flows
from microcompile.report import layers as vl
from microcompile.errors import DeviceError
from microcompile.ir.compare import compare
from tests.conftest import ALL_MODELS, model_path
from support import multi_op_models as M
from tests.litert_ref import run_reference

BOARDS = [pytest.param("host", id="host"), pytest.param("mps2-an386", id="mps2-an386", marks=pytest.mark.qemu)]


def _model(name, tmp_path):
    return M.write(name, tmp_path)


def _inputs(path, seed=0) -> dict[str, np.ndarray]:
    from microcompile.frontend import load_tflite

    g, rng = load_tflite(path), np.random.default_rng(seed)
    return {n: rng.integers(-128, 128, g.tensors[n].shape).astype(np.int8) if g.tensors[n].dtype == "int8"
            else rng.uniform(-1, 1, g.tensors[n].shape).astype(np.float32) for n in g.inputs}


def _save(inputs, tmp_path):
    if len(inputs) == 1:
        np.save(tmp_path / "x.npy", next(iter(inputs.values())))
        return tmp_path / "x.npy"
    np.savez(tmp_path / "x.npz", **inputs)
    return tmp_path / "x.npz"


def _check(result, path, inputs):
    """Every layer equal to both references, every output equal to LiteRT."""
    assert result.report["tflite_compared"]
    for row in result.rows:
        assert row.vs_ref.equal, f"{row.node} differs from the interpreter: {row.vs_ref}\n{result.table}"
        assert row.vs_tflite is not None and row.vs_tflite.equal, f"{row.node} vs TFLite\n{result.table}"
        if row.dtype == "int8":
            assert row.vs_ref.n_diff == 0 and row.vs_tflite.n_diff == 0
    for name, ref in run_reference(path.read_bytes(), inputs).items():
        dev = result.deploy.outputs[name]
        assert dev.tobytes() == ref.tobytes() if ref.dtype == np.int8 else compare(dev, ref).equal, name
    assert result.report["verified"]


@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("name", list(M.MODELS))
def test_multi_op_model_verifies(name, board, tmp_path):
    path = _model(name, tmp_path)
    inputs = _inputs(path)
    result = flows.verify(path, board, tmp_path / "project", emulate=board != "host",
                                  input_path=_save(inputs, tmp_path), progress=lambda s: None)
    _check(result, path, inputs)
    # One row per compiled layer output, in order, and device outputs for every model output.
    graph = result.deploy.compiled.graph
    assert [r.tensor for r in result.rows] == [o for n in graph.nodes for o in n.outputs]
    assert set(result.deploy.outputs) == set(graph.outputs)


@pytest.mark.qemu
@pytest.mark.heavy
@pytest.mark.parametrize("model", ALL_MODELS)
def test_mlperf_model_verifies_in_qemu(model, tmp_path):
    path = model_path(model)
    result = flows.verify(path, "mps2-an386", tmp_path / "project", emulate=True, progress=lambda s: None)
    inputs = result.deploy.inputs
    _check(result, path, inputs)


def _corrupt_first_weight(project_dir, node: str) -> None:
    """Flip the first weight of `node`'s filter in the generated model_weights.bin (its
    MC_CONST line in model_weights.c gives the offset; the filter is int8 or int16)."""
    text = (project_dir / "model" / "model_weights.c").read_text()
    m = re.search(rf"^MC_CONST\((\w+), (\d+), (\d+)\);  /\* {re.escape(node)} filter ", text, re.M)
    assert m, f"no filter of {node} in model_weights.c"
    path = project_dir / "model" / "model_weights.bin"
    data = bytearray(path.read_bytes())
    offset = int(m.group(2))
    data[offset] = 0x81 if data[offset] < 0x80 else 0x7F   # the low byte: a large change either way
    path.write_bytes(bytes(data))


def test_a_corrupted_layer_is_the_first_mismatch(tmp_path):
    path = _model("residual_int8", tmp_path)
    inputs = _inputs(path, seed=3)
    good = flows.verify(path, "host", tmp_path / "p", input_path=_save(inputs, tmp_path),
                                progress=lambda s: None)
    assert good.report["verified"]
    victim = good.rows[1].node   # the block's first convolution
    _corrupt_first_weight(tmp_path / "p", victim)
    project.build(tmp_path / "p", progress=lambda s: None)
    run = project.run_host(tmp_path / "p")
    manifest = project.load_manifest(tmp_path / "p")
    traced = [(e.kernel, e.output, a) for e, a in zip(project.trace_entries(manifest),
                                                      project.parse_trace(run.console, manifest))]
    compiled = good.deploy.compiled
    nodes = [n for n, _, _ in compiled.kernels]
    device = vl.device_tensors(compiled.graph, nodes, traced, inputs)
    rows = vl.compare_layers(compiled.graph, nodes, device, inputs, vl.tflite_tensors(path, inputs))
    bad = [r for r in rows if not r.equal]
    assert bad and bad[0].node == victim and all(r.equal for r in rows[:1])
    assert bad[0].vs_ref.n_diff > 0 and bad[0].vs_tflite.n_diff == bad[0].vs_ref.n_diff
    assert bad[0].vs_ref.first_mismatch is not None
    table = vl.format_layer_table(rows, True)
    assert f"the first is #1 {victim}" in table


def test_parse_trace_refuses_a_firmware_without_trace():
    manifest = {"kernels": [{"name": "k0_relu", "outputs": [
        {"name": "y", "shape": [2], "dtype": "int8", "offset": 0, "bytes": 2}]}]}
    assert project.parse_trace("MC-TENSOR 0 7f\nMC-TENSOR 0 80\n", manifest)[0].tolist() == [127, -128]
    with pytest.raises(DeviceError, match="trace build"):
        project.parse_trace("MC-BEGIN\nMC-END\n", manifest)
    with pytest.raises(DeviceError, match="garbled"):
        project.parse_trace("MC-TENSOR 0 7g\n", manifest)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "microcompile", *map(str, args)], capture_output=True,
                          text=True, timeout=600)


def test_cli_verify_multi_io_and_deploy_npz(tmp_path):
    path = _model("multi_io_int8", tmp_path)
    inputs = _inputs(path, seed=5)
    x = _save(inputs, tmp_path)
    assert x.suffix == ".npz"
    p = _cli("verify", path, "--board=host", "--input", x, "-o", tmp_path / "v", "--report", tmp_path / "r.json")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "all 9 layers match" in p.stdout and "max|diff|" in p.stdout and "TFLite" in p.stdout
    # --report: the same 9 rows as JSON, each compared with both references, all exact (int8)
    report = json.loads((tmp_path / "r.json").read_text())
    assert (report["model"], report["board"], report["verified"], report["tflite_compared"]) == \
        ("multi_io_int8", "host", True, True)
    assert len(report["layers"]) == 9 and [r["index"] for r in report["layers"]] == list(range(9))
    for row in report["layers"]:
        assert row["equal"] and row["dtype"] == "int8", row
        for ref in ("vs_reference", "vs_tflite"):
            assert row[ref] == {"equal": True, "max_abs_diff": 0.0, "n_diff": 0, "first_mismatch": None}, row
        assert row["tensor"] in p.stdout or row["node"] in p.stdout
    assert set(report["outputs"]) == set(run_reference(path.read_bytes(), inputs))
    p = _cli("deploy", path, "--board=host", "--input", x, "--output", tmp_path / "y.npz", "-o", tmp_path / "d")
    assert p.returncode == 0, p.stdout + p.stderr
    y, ref = np.load(tmp_path / "y.npz"), run_reference(path.read_bytes(), inputs)
    assert set(y.files) == set(ref) and len(ref) == 3
    for name in ref:
        assert y[name].tobytes() == ref[name].tobytes(), name


def test_cli_verify_on_a_real_board_explains_the_serial_link(tmp_path):
    path = _model("residual_int8", tmp_path)
    p = _cli("verify", path, "--board=stm32", "-o", tmp_path / "v")
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "--emulate" in p.stderr
    assert "serial link" in _cli("verify", "--help").stdout


def test_inspect_shows_tensor_bytes_fused_and_folded(tmp_path):
    p = _cli("inspect", _model("residual_int8", tmp_path))
    assert p.returncode == 0, p.stderr
    stem = next(ln for ln in p.stdout.splitlines() if "conv_2d_0" in ln)
    assert "out bytes" in p.stdout and stem.endswith(" 512"), stem   # 1x8x8x8 int8
    assert re.search(r"fused .*block/add \+ .*block/relu", p.stdout), p.stdout
    p = _cli("inspect", _model("flatten_dynamic_batch_int8", tmp_path))
    assert p.returncode == 0, p.stderr
    assert re.search(r"flatten/(shape|batch|target): (folded|removed)", p.stdout), p.stdout


def test_without_litert_only_the_interpreter_is_compared(tmp_path, monkeypatch):
    path = _model("residual_int8", tmp_path)
    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)   # import fails
    result = flows.verify(path, "host", tmp_path / "p", progress=lambda s: None)
    assert not result.report["tflite_compared"] and result.report["verified"]
    assert all(r.vs_tflite is None and r.vs_ref.equal for r in result.rows)
    assert "ai_edge_litert is not installed" in result.table


def test_concatenation_is_written_in_place(tmp_path):
    """The two branches write straight into their slices: no kernel for the concatenation, its
    inputs alias its buffer (test_multi_op_model_verifies[concat_int8-*] checks the bytes)."""
    compiled = flows.plan_model(_model("concat_int8", tmp_path), "host")
    assert "concatenation" not in [n.op for n, _, _ in compiled.kernels]
    cat = next(n for n in compiled.graph.nodes if n.op == "concatenation")
    plan, first = compiled.plan, compiled.graph.tensors[cat.inputs[0]].nbytes
    assert [plan.offset(i) for i in cat.inputs] == [plan.offset(cat.outputs[0]), plan.offset(cat.outputs[0]) + first]


def test_inspect_memory_prints_the_plan_and_plots_it(tmp_path, capsys, monkeypatch):
    from microcompile import cli

    path = _model("residual_int8", tmp_path)
    assert cli.main(["inspect", str(path), "--memory", "--board", "stm32"]) == 0
    out = capsys.readouterr().out
    m = re.search(r"arena ([\d,]+) bytes, lower bound ([\d,]+) bytes \(planner (\w+)", out)
    assert m and int(m.group(1).replace(",", "")) >= int(m.group(2).replace(",", "")), out
    assert "in place (output written over an input" in out      # the residual add, at least
    assert re.search(r"^\s+\d+\s+\S+\s+conv2d\s+[\d,]+\s+#+", out, re.M), out   # a timeline row with its bar
    # --plot: an SVG with matplotlib; without it, a user error naming the extra
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    assert cli.main(["inspect", str(path), "--plot", str(tmp_path / "m.svg")]) == 2
    assert "--plot needs matplotlib" in capsys.readouterr().err
    monkeypatch.undo()
    pytest.importorskip("matplotlib")
    assert cli.main(["inspect", str(path), "--plot", str(tmp_path / "m.svg")]) == 0
    assert (tmp_path / "m.svg").read_text().lstrip().startswith("<?xml")
