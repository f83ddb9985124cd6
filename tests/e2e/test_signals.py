"""Signals: microcompile stopped by SIGTERM, SIGHUP, SIGINT or SIGKILL leaves no process behind.

Covered: `deploy --emulate` (make and gcc; the self-test's QEMU) and `run --emulate` (the
host agent's QEMU, talking over a TCP console).

`timeout`, a CI cancellation and a closed terminal send SIGTERM or SIGHUP to microcompile
alone, not to its process group; QEMU used to keep running at full CPU with parent 1. Here
an emulated deploy of a model that runs for seconds in QEMU (float convolutions on the
Cortex-M3, which has no FPU) is stopped at a chosen moment: while make and gcc build the
firmware, or while QEMU runs it. Every process it started must be gone afterwards, and the
exit code says which signal stopped it (128 + the signal number; -9 for SIGKILL, which
nothing can catch: there the kernel's parent-death signal stops the children).
"""

from __future__ import annotations

import os
import pathlib
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from support.cli_run import REPO

pytestmark = [
    pytest.mark.qemu,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads the process tree from /proc"),
    pytest.mark.skipif(shutil.which("qemu-system-arm") is None or shutil.which("arm-none-eabi-gcc") is None,
                       reason="needs qemu-system-arm and arm-none-eabi-gcc"),
]


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except (FileNotFoundError, ProcessLookupError):
        return []


def descendants(pid: int) -> list[int]:
    kids = _children(pid)
    return kids + [d for k in kids for d in descendants(k)]


def comm(pid: int) -> str:
    try:
        return pathlib.Path(f"/proc/{pid}/comm").read_text().strip()
    except (FileNotFoundError, ProcessLookupError):
        return ""


def start_time(pid: int) -> int | None:
    """The process's start time (field 22 of /proc/PID/stat): with the pid, it names one process,
    so a pid the kernel has given to another process since (this machine is busy) is not ours."""
    try:
        return int(pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (FileNotFoundError, ProcessLookupError, IndexError, ValueError):
        return None


def alive(pid: int, started_at: int | None = None) -> bool:
    """`pid` runs and is not a zombie (and, given `started_at`, is still the process seen then)."""
    try:
        fields = pathlib.Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return fields[0] != "Z" and (started_at is None or int(fields[19]) == started_at)


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains `text` (our project directory)."""
    found = []
    for entry in pathlib.Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if text.encode() in (entry / "cmdline").read_bytes() and alive(int(entry.name)):
                    found.append(int(entry.name))
            except (FileNotFoundError, ProcessLookupError, PermissionError):
                pass
    return found


@pytest.fixture(scope="module")
def slow_model(tmp_path_factory) -> pathlib.Path:
    """float32 1x32x32x16 -> four 3x3 convolutions: 9.4 M float MACs, run twice by the self-test in
    soft-float (the Cortex-M3 has no FPU): many seconds of QEMU, so that on a busy machine too the
    signal arrives while it runs (with 0.3 M MACs a run could end before a late signal)."""
    from microcompile.frontend.tflite.writer import write_tflite
    from microcompile.ir import Graph, Node, Tensor

    rng = np.random.default_rng(3)
    t = {"x": Tensor("x", (1, 32, 32, 16), "float32")}
    nodes, prev = [], "x"
    for k in range(4):
        t[f"w{k}"] = Tensor(f"w{k}", (16, 3, 3, 16), "float32", None,
                            rng.normal(0, 0.1, (16, 3, 3, 16)).astype(np.float32))
        t[f"y{k}"] = Tensor(f"y{k}", (1, 32, 32, 16), "float32")
        nodes.append(Node("conv2d", f"conv{k}", (prev, f"w{k}", ""), (f"y{k}",),
                          {"stride": (1, 1), "padding": (1, 1, 1, 1), "activation": "RELU"}))
        prev = f"y{k}"
    path = tmp_path_factory.mktemp("slow") / "slow_convs.tflite"
    path.write_bytes(write_tflite(Graph("slow_convs", t, tuple(nodes), ("x",), (prev,))))
    return path


@pytest.fixture(scope="module")
def project_dir(tmp_path_factory) -> pathlib.Path:
    return tmp_path_factory.mktemp("signals") / "project"


@pytest.fixture(scope="module")
def agent_dir(tmp_path_factory) -> pathlib.Path:
    return tmp_path_factory.mktemp("signals") / "agent"


def _stop_deploy_during(model, out: pathlib.Path, phase: str, sig: int, command: str = "deploy"
                       ) -> tuple[int, dict[int, int | None], str]:
    """Start `<command> --emulate` (deploy: the self-test in QEMU; run: the agent's QEMU on a
    TCP console), wait until a process named `phase` runs under it, send `sig` to microcompile
    alone; returns (exit code, the processes it had started, stderr)."""
    proc = subprocess.Popen([sys.executable, "-m", "microcompile", command, str(model), "--board=mps2-an385",
                             "--emulate", "-o", str(out)], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        started: dict[int, int | None] = {}
        while time.monotonic() < deadline and proc.poll() is None:
            tree = descendants(proc.pid)
            started.update((p, start_time(p)) for p in tree if p not in started)
            if any(comm(p).startswith(phase) for p in tree):
                break
            time.sleep(0.02)
        else:
            pytest.fail(f"no {phase} process appeared under microcompile (exit {proc.poll()}): "
                        f"{proc.stderr.read() if proc.poll() is not None else ''}")
        time.sleep(0.3)                            # let it get going (gcc under make, the guest under QEMU)
        started.update((p, start_time(p)) for p in descendants(proc.pid) if p not in started)
        assert any(alive(p) and comm(p).startswith(phase) for p in descendants(proc.pid)), \
            f"{phase} ended before the signal was sent: the test needs a longer run"
        proc.send_signal(sig)
        rc = proc.wait(timeout=60)
        return rc, started, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _assert_nothing_left(started: dict[int, int | None], out: pathlib.Path) -> None:
    deadline = time.monotonic() + 15              # bounds a failure only; a pass returns at once
    while time.monotonic() < deadline:
        left = [p for p, t in started.items() if t is not None and alive(p, t)] + processes_mentioning(str(out))
        if not left:
            return
        time.sleep(0.05)
    pytest.fail(f"processes left behind: {[(p, comm(p)) for p in left]}")


EXIT = {signal.SIGTERM: 143, signal.SIGHUP: 129, signal.SIGINT: 130, signal.SIGKILL: -signal.SIGKILL}


def test_sigterm_while_make_and_gcc_build(slow_model, project_dir):
    rc, started, err = _stop_deploy_during(slow_model, project_dir, "make", signal.SIGTERM)
    assert rc == 143, err
    assert "Traceback" not in err and "SIGTERM" in err
    _assert_nothing_left(started, project_dir)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGKILL],
                         ids=["SIGTERM", "SIGHUP", "SIGINT", "SIGKILL"])
def test_signal_while_qemu_runs(slow_model, project_dir, sig):
    rc, started, err = _stop_deploy_during(slow_model, project_dir, "qemu-system", sig)
    assert rc == EXIT[sig], err
    assert "Traceback" not in err
    _assert_nothing_left(started, project_dir)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGKILL],
                         ids=["SIGTERM", "SIGHUP", "SIGINT", "SIGKILL"])
def test_signal_while_the_agents_qemu_runs(slow_model, agent_dir, sig):
    """`run --emulate`: the host agent's QEMU (project/launch.py) is stopped the same way."""
    rc, started, err = _stop_deploy_during(slow_model, agent_dir, "qemu-system", sig, command="run")
    assert rc == EXIT[sig], err
    assert "Traceback" not in err
    _assert_nothing_left(started, agent_dir)
