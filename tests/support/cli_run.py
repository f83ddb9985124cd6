"""Running the CLI from tests: as a subprocess, in-process, or without root's file powers.

Every helper asserts that no Python traceback reached stderr: a user mistake gets exit 2 and
a message, and an internal error gets exit 3 and a crash log (the traceback is in the log).
"""

from __future__ import annotations

import contextlib
import ctypes
import io
import os
import pathlib
import subprocess
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def run_cli(*args, env=None, cwd=None, timeout=600, preexec_fn=None, stdin=subprocess.DEVNULL):
    p = subprocess.run([sys.executable, "-m", "microcompile", *map(str, args)], capture_output=True, text=True,
                       env=env, cwd=cwd or REPO, timeout=timeout, preexec_fn=preexec_fn, stdin=stdin)
    assert "Traceback" not in p.stderr, p.stderr
    return p


def run_cli_inprocess(*args) -> subprocess.CompletedProcess:
    """cli.main in this process (no interpreter start-up: most error paths need no other
    process); the result has returncode, stdout and stderr as run_cli's."""
    from microcompile import cli

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = cli.main([str(a) for a in args])
    assert "Traceback" not in err.getvalue(), err.getvalue()
    return subprocess.CompletedProcess(args, rc, out.getvalue(), err.getvalue())


_PR_CAPBSET_DROP = 24
_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH = 1, 2


def _drop_root_file_powers():
    """In the child, before exec: drop the capabilities that let root ignore file modes."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in (_CAP_DAC_OVERRIDE, _CAP_DAC_READ_SEARCH):
        if libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP)")


def run_cli_unprivileged(*args, **kw):
    """run_cli where file permissions apply: as root, without CAP_DAC_OVERRIDE/READ_SEARCH
    (so a chmod 000 file is unreadable, as it is for every other user)."""
    if os.geteuid() != 0:
        return run_cli(*args, **kw)
    if not sys.platform.startswith("linux"):
        pytest.skip("running as root, and dropping root's file powers needs Linux")
    return run_cli(*args, preexec_fn=_drop_root_file_powers, **kw)


def tiny_model(path: pathlib.Path) -> pathlib.Path:
    """A float32 softmax over 1x8, written with the project's own writer."""
    from microcompile.frontend.tflite.writer import write_tflite
    from microcompile.ir import Graph, Node, Tensor

    t = {n: Tensor(n, (1, 8), "float32") for n in ("x", "y")}
    g = Graph("tiny", t, (Node("softmax", "softmax", ("x",), ("y",), {"beta": 1.0}),), ("x",), ("y",))
    path.write_bytes(write_tflite(g))
    return path
