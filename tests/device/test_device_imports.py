"""`from microcompile.device import Session` runs on a lab PC with the standard library and pyserial:
it imports no numpy and none of the compiler's packages."""

import json
import subprocess
import sys

import pytest


def _modules_after(statement: str) -> set[str]:
    code = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(r.stdout))


def test_session_imports_only_stdlib_and_the_device_package():
    mods = _modules_after("from microcompile.device import Session, SerialTransport, SocketTransport")
    ours = {m for m in mods if m.startswith("microcompile")}
    assert ours <= {"microcompile", "microcompile.errors", "microcompile.escape", "microcompile.device",
                    "microcompile.device.frame",
                    "microcompile.device.protocol", "microcompile.device.session",
                    "microcompile.device.transport"}, ours
    heavy = {"numpy", "jinja2", "onnx", "tflite", "flatbuffers", "tqdm", "serial"}
    assert not heavy & {m.split(".")[0] for m in mods}, heavy & {m.split(".")[0] for m in mods}


def test_the_check_sees_a_heavy_import():
    """The same check does fail where the compiler is imported."""
    mods = _modules_after("import microcompile.api")
    assert "numpy" in mods and "microcompile.ir" in mods


@pytest.mark.parametrize("blocked", ["numpy", "serial"])
def test_session_works_without_numpy_or_pyserial_installed(blocked):
    """With numpy (or pyserial) made unimportable, the device package still imports and frames."""
    code = (f"import sys; sys.modules[{blocked!r}] = None\n"
            "from microcompile.device import Session, frame\n"
            "assert frame.parse(frame.encode(1, 2, b'x')[:-1]).payload == b'x'\nprint('ok')")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr
