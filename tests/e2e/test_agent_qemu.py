"""The host agent on the QEMU twins of every board (mps2-an386, mps2-an385 and the stm32's
netduinoplus2): run, profile, tensors, a reset mid-session and a wrong build over the socket;
`profile` of kws against `deploy`; and no QEMU left behind after Ctrl-C or SIGTERM."""

import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from microcompile import project
from support import flows
from microcompile.deploy import Link, open_session
from microcompile.device import BuildIdMismatch, frame as fr, protocol as P
from microcompile.reference import interp
from microcompile.target import load_board
from tests.conftest import model_path
from support import multi_op_models as M

QUIET = lambda s: None  # noqa: E731
BOARDS = ["mps2-an386", "mps2-an385", "stm32"]


def _inputs(path, seed, n=None):
    from microcompile.frontend import load_tflite

    g = load_tflite(path)
    t = g.tensors[g.inputs[0]]
    shape = t.shape if n is None else (n, *t.shape[1:])
    return np.random.default_rng(seed).integers(-128, 128, shape).astype(np.int8)


@pytest.fixture(scope="module")
def residual(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("residual")
    path = M.write("residual_int8", tmp)
    np.save(tmp / "x.npy", _inputs(path, 3))
    return tmp, path


@pytest.mark.qemu
@pytest.mark.parametrize("board", BOARDS)
def test_run_profile_tensors_and_recovery_on_the_twin(board, residual, tmp_path):
    tmp, path = residual
    result = flows.run(path, board, tmp_path / "p", emulate=True, input_path=tmp / "x.npy", progress=QUIET)
    assert result.report["verified"] and result.report["unit"] == "instructions"
    compiled = flows.compile_model(path, load_board(board), tmp_path / "artifact")
    x = np.load(tmp / "x.npy")
    ref = interp.run(compiled.graph, {compiled.graph.inputs[0]: x}, keep_all=True)
    with open_session(tmp_path / "p", load_board(board), Link(emulate=True), QUIET) as s:
        info = s.info()
        assert info.build_id == project.read_marker(tmp_path / "p")["build_id"]
        assert info.per_count == (1 if board == "stm32" else 40)
        out = s.run([x])
        plain = s.last_ticks * info.per_count
        prof = s.profile()
        assert abs(sum(prof.counts) - prof.total) <= 0.01 * prof.total
        assert abs(prof.total - plain) <= 0.01 * plain
        assert out[0].data == ref[compiled.graph.outputs[0]].tobytes()
        name = compiled.kernels[1][0].outputs[0]                      # read right after kernel 1
        assert s.tensor(name).data == ref[name].tobytes()
        # The device restarts behind the session's back: the next run opens it again.
        s.transport.write(b"\0" + fr.encode(P.CMD_RESET, s._seq, b""))
        again = s.run([x])
        assert s.link.restarts == 1 and again[0].data == out[0].data
        assert s.stats().runs == 1
        # A session expecting another build is told which one runs.
        s.expect_build_id = "00000000deadbeef"
        with pytest.raises(BuildIdMismatch, match=f"runs build {info.build_id}.*this build is 00000000deadbeef"):
            s.open()


@pytest.mark.qemu
def test_profile_of_kws_agrees_with_deploy(tmp_path):
    path = model_path("kws_ref_model")
    deployed = flows.deploy(path, "mps2-an386", tmp_path / "selftest", emulate=True, progress=QUIET)
    p = subprocess.run([sys.executable, "-m", "microcompile", "profile", str(path), "--board=mps2-an386", "--emulate",
                        "-o", str(tmp_path / "agent"), "--json", str(tmp_path / "p.json"),
                        "--csv", str(tmp_path / "p.csv")], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    report = json.loads((tmp_path / "p.json").read_text())
    assert set(report) == {"unit", "total", "layers"} and report["unit"] == "instructions"
    assert all(set(row) == {"name", "op", "macs", "count", "estimated_cycles"} for row in report["layers"])
    # the agent's per-kernel estimates add up to the self-test's whole-inference estimate
    estimated = sum(r["estimated_cycles"] for r in report["layers"])
    assert abs(estimated - deployed.report["estimated_cycles"]) <= 0.01 * deployed.report["estimated_cycles"]
    assert [r["name"] for r in report["layers"]] == [n.name for n, _, _ in deployed.compiled.kernels]
    total, summed = report["total"], sum(r["count"] for r in report["layers"])
    assert abs(summed - total) <= 0.01 * total
    assert abs(total - deployed.report["instructions"]) <= 0.01 * deployed.report["instructions"]
    assert sum(r["macs"] for r in report["layers"]) == deployed.report["macs"]
    rows = (tmp_path / "p.csv").read_text().splitlines()
    assert rows[0].startswith("name,layers,op,output_shape,macs,count") and len(rows) == len(report["layers"]) + 1
    assert "conv_2d_0" in p.stdout and "hook overhead" in p.stdout and "MACs/instr" in p.stdout
    assert "est. cycles" in p.stdout and "not a measurement" in p.stdout


def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
                if int(fields[1]) == pid:
                    out.append(int(entry))
            except (OSError, IndexError, ValueError):
                continue
    return out


def _qemu_children(pid: int) -> list[int]:
    found = []
    for child in _children(pid):
        try:
            with open(f"/proc/{child}/cmdline", "rb") as f:
                if b"qemu-system-arm" in f.read():
                    found.append(child)
        except OSError:
            continue
    return found


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.qemu
@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_no_qemu_is_left_after_ctrl_c_or_sigterm(sig, code, residual):
    tmp, path = residual
    batch = tmp / "batch.npy"
    if not batch.exists():
        np.save(batch, _inputs(path, 4, n=2000))
    proc = subprocess.Popen([sys.executable, "-m", "microcompile", "run", str(path), "--board=mps2-an386", "--emulate",
                             "-o", str(tmp / "sig"), "--input", str(batch), "--repeat", "2000"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        qemu = []
        while not qemu and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            qemu = _qemu_children(proc.pid)
        assert qemu, "microcompile run never started QEMU"
        time.sleep(1.0)                       # well inside the session
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == code, err
        assert "Traceback" not in err
        for pid in qemu:
            for _ in range(50):
                if not _alive(pid):
                    break
                time.sleep(0.1)
            assert not _alive(pid), f"QEMU {pid} outlived microcompile"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
