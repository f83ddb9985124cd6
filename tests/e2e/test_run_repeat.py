"""`microcompile run --repeat N` evaluates a batch over one session (host agent): agreement with the
reference interpreter, top-1 accuracy against labels, stacked outputs."""

import subprocess
import sys

import numpy as np

from support import flows
from microcompile.reference import interp
from microcompile.target import load_board
from support import multi_op_models as M


def test_repeat_over_one_session_with_labels(tmp_path):
    path = M.write("residual_int8", tmp_path)
    x = np.random.default_rng(7).integers(-128, 128, (6, 8, 8, 3)).astype(np.int8)   # [N, H, W, C] for [1, H, W, C]
    np.save(tmp_path / "x.npy", x)
    compiled = flows.compile_model(path, load_board("host"), tmp_path / "a")
    g = compiled.graph
    assert tuple(g.tensors[g.inputs[0]].shape) == (1, 8, 8, 3)
    refs = [interp.run(g, {g.inputs[0]: x[k:k + 1]})[g.outputs[0]] for k in range(6)]
    labels = np.array([int(np.argmax(r)) for r in refs])
    labels[:2] = (labels[:2] + 1) % refs[0].size                                         # two wrong on purpose
    np.save(tmp_path / "y.npy", labels)
    p = subprocess.run([sys.executable, "-m", "microcompile", "run", str(path), "--board=host", "--input",
                        str(tmp_path / "x.npy"), "--repeat", "5", "--labels", str(tmp_path / "y.npy"),
                        "--output", str(tmp_path / "out.npy"), "-o", str(tmp_path / "p")],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    assert "samples      5 over one session" in p.stdout
    assert "agreement    100.00%" in p.stdout and "top-1 60.00%" in p.stdout
    out = np.load(tmp_path / "out.npy")
    assert out.shape == (5, *refs[0].shape) and all(out[k].tobytes() == refs[k].tobytes() for k in range(5))
    p = subprocess.run([sys.executable, "-m", "microcompile", "run", str(path), "--board=host", "--input",
                        str(tmp_path / "x.npy"), "--repeat", "9", "-o", str(tmp_path / "p")],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 2 and "9 samples asked for but" in p.stderr and "Traceback" not in p.stderr


def test_deploy_with_the_agent_reports_like_deploy(tmp_path):
    path = M.write("multi_io_int8", tmp_path)
    p = subprocess.run([sys.executable, "-m", "microcompile", "deploy", str(path), "--board=host", "--agent",
                        "-o", str(tmp_path / "p"), "--report", str(tmp_path / "r.json"),
                        "--output", str(tmp_path / "y.npz")], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    import json

    r = json.loads((tmp_path / "r.json").read_text())
    assert r["verified"] and r["instructions"] is None and len(r["outputs"]) == 3
    assert "main.c" in (tmp_path / "p" / ".microcompile-project").read_text()
    assert "mc_agent_serve" in (tmp_path / "p" / "main.c").read_text()
    assert sorted(np.load(tmp_path / "y.npz").files) == sorted(r["outputs"])
