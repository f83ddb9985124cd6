"""What the README and docs/cli.md promise about the command line, each claim tested where it could fail:
exit code 1 on a mismatch (deploy and verify), the report's per-layer instructions and
`benchmarks/mlperf_tiny.py --layers`, "model too big" through the CLI, and `scripts/demo`."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from microcompile import cli
from microcompile.frontend import load_model
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, Tensor
from microcompile.reference import interp
from tests.conftest import REPO, model_path
from support import multi_op_models as M
from tests.litert_ref import run_reference


def run_cli(*args, env=None, timeout=600):
    p = subprocess.run([sys.executable, "-m", "microcompile", *map(str, args)], capture_output=True, text=True,
                       env=env, cwd=REPO, timeout=timeout)
    assert "Traceback" not in p.stderr, p.stderr
    return p


@pytest.fixture
def wrong_reference(monkeypatch):
    """Our reference interpreter off by one on every graph output: the device, which is right,
    now disagrees with it, as it would with a broken kernel."""
    real = interp.run

    def off_by_one(graph, inputs, keep_all=False):
        values = dict(real(graph, inputs, keep_all))
        for name in graph.outputs:
            v = values[name]
            values[name] = (v.astype(np.int16) + 1).clip(-128, 127).astype(np.int8) if v.dtype == np.int8 else v + 1
        return values
    monkeypatch.setattr(interp, "run", off_by_one)


def test_deploy_and_verify_exit_1_on_a_mismatch(wrong_reference, tmp_path, capsys):
    path = M.write("residual_int8", tmp_path)
    assert cli.main(["deploy", str(path), "--board=host", "-o", str(tmp_path / "d"),
                     "--report", str(tmp_path / "d.json")]) == 1
    out = capsys.readouterr().out
    assert "outputs match reference: NO" in out
    report = json.loads((tmp_path / "d.json").read_text())
    assert report["verified"] is False and all(o["n_diff"] > 0 for o in report["outputs"].values())
    assert cli.main(["verify", str(path), "--board=host", "-o", str(tmp_path / "v"),
                     "--report", str(tmp_path / "v.json")]) == 1
    rows = json.loads((tmp_path / "v.json").read_text())["layers"]
    # the last layer differs from the (wrong) interpreter and still equals LiteRT
    assert not rows[-1]["equal"] and rows[-1]["vs_reference"]["n_diff"] > 0 and rows[-1]["vs_tflite"]["equal"]
    assert all(r["equal"] for r in rows[:-1])


@pytest.mark.qemu
def test_report_has_per_layer_instructions(tmp_path):
    path = M.write("residual_int8", tmp_path)
    p = run_cli("deploy", path, "--board=mps2-an386", "--emulate", "-o", tmp_path / "p", "--report",
                tmp_path / "r.json")
    assert p.returncode == 0, p.stdout + p.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    layers = report["layers"]
    views = {"reshape"}
    assert all(isinstance(r["instructions"], int) for r in layers)
    assert all(r["instructions"] > 0 for r in layers if r["op"] not in views)
    assert all(r["instructions"] == 0 for r in layers if r["op"] in views)
    # the layers' kernels make up the inference (the rest is the runtime's call overhead)
    total = sum(r["instructions"] for r in layers)
    assert 0.8 * report["instructions"] <= total <= report["instructions"] * 1.01, (total, report["instructions"])
    conv = [r for r in layers if r["op"] == "conv2d"]
    assert max(r["instructions"] for r in conv) > 10 * min(r["instructions"] for r in layers if r["instructions"])


@pytest.mark.qemu
def test_mlperf_benchmark_layers_table():
    model_path("ad01_int8")
    p = subprocess.run([sys.executable, "benchmarks/mlperf_tiny.py", "--only", "ad01_int8", "--layers"], cwd=REPO,
                       capture_output=True, text=True, timeout=900, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert p.returncode == 0, p.stdout + p.stderr
    row = next(ln for ln in p.stdout.splitlines() if ln.startswith("ad01_int8 "))
    total = int(row.split()[2].replace(",", ""))
    assert row.split()[-3] == "yes"                              # bit-exact (then est. cycles, est. ms)
    assert int(row.split()[-2].replace(",", "")) > total          # the estimate prices loads above 1 cycle
    table = p.stdout[p.stdout.index("ad01_int8: per layer"):].splitlines()[2:]
    fc = [ln for ln in table if "fully_connected" in ln]
    assert len(fc) == 10
    per_layer = [int(re.split(r"\s+", ln.strip())[-3].replace(",", "")) for ln in fc]
    assert all(v > 0 for v in per_layer) and 0.8 * total <= sum(per_layer) <= total * 1.01, (per_layer, total)
    estimated = [int(re.split(r"\s+", ln.strip())[-1].replace(",", "")) for ln in fc]
    assert all(e > v for e, v in zip(estimated, per_layer)), (estimated, per_layer)


def test_model_too_big_for_the_board_exits_2(tmp_path):
    """614 KB of float32 weights for a 512 KiB flash: refused before anything is built."""
    rng = np.random.default_rng(0)
    w = rng.normal(0, 0.05, (600, 256)).astype(np.float32)
    t = {"x": Tensor("x", (1, 256), "float32"), "y": Tensor("y", (1, 600), "float32"),
         "w": Tensor("w", w.shape, "float32", data=w)}
    g = Graph("big", t, (Node("fully_connected", "fc", ("x", "w", ""), ("y",), {"activation": "NONE"}),),
              ("x",), ("y",))
    path = tmp_path / "big.tflite"
    path.write_bytes(write_tflite(g))
    p = run_cli("deploy", path, "--board=stm32", "--emulate", "-o", tmp_path / "out")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "does not fit nucleo-f446re" in p.stderr and "flash bank FLASH needs 602.3 KiB" in p.stderr
    assert "nucleo-f446re has 512 KiB (over by 90.3 KiB): weights 602.3 KiB" in p.stderr
    # a float model: quantizing comes first among the hints, then a board that fits
    assert "hint: quantize it to int8" in p.stderr and "; a board that fits:" in p.stderr
    assert "Traceback" not in p.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.qemu
def test_scripts_demo(tmp_path):
    """The README's first command (docs/getting-started.md), as it is (setup skipped: scripts/test has just run it)."""
    env = dict(os.environ, MICROCOMPILE_DEMO_DIR=str(tmp_path / "digits"), MICROCOMPILE_DEMO_NO_SETUP="1",
               MICROCOMPILE_DEMO_PYTHON=sys.executable)
    p = subprocess.run([str(REPO / "scripts" / "demo")], capture_output=True, text=True, env=env, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    said = re.search(r"device says: digit (\d) \(probability ([0-9.]+)\)", p.stdout)
    assert said, p.stdout
    out = tmp_path / "digits"
    x = np.load(out / "sample.npy")
    g = load_model(out / "digits_mlp.tflite")
    (want,) = run_reference((out / "digits_mlp.tflite").read_bytes(), {g.inputs[0]: x}).values()
    assert int(said.group(1)) == int(want.argmax())
    assert json.loads((out / "report.json").read_text())["verified"] is True
    assert (out / "project" / "firmware.elf").is_file()
