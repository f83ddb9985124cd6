"""On a real board, when one is attached: build the example model for it, open the probe's USB
serial port (found by the board's USB VID/PID), flash through the probe, and read the self-test's
MC-OUTPUT lines back; the outputs must equal the reference interpreter's.

Marked `hardware`: the default run deselects it (pyproject's addopts), and `pytest -m hardware`
skips it when no probe of a known board is attached. It has never run here: there is no hardware
in this project's CI. Once the serial host agent exists it should run the agent instead of the
self-test."""

import subprocess
import sys
import time

import numpy as np
import pytest

from support import flows
from microcompile.project import flash, load_manifest, parse_output
from microcompile.project import flash_runners as fr
from microcompile.reference import interp
from microcompile.target import list_boards, load_board
from tests.conftest import REPO
from tests.skip_budget import NO_HARDWARE


def _attached():
    """(board, probe) of the first known board whose probe is attached and reports its chip."""
    for name in list_boards():
        board = load_board(name)
        if not board.flash_runners:
            continue
        _, seen, _ = fr.find_probes(board)
        for probes in seen.values():
            for p in probes:
                if p.matches:
                    return board, p
    return None, None


def _serial_port(board):
    from serial.tools import list_ports

    for port in list_ports.comports():
        if board.probe and (port.vid, port.pid) == (board.probe.usb_vid, board.probe.usb_pid):
            return port.device
    return None


@pytest.mark.hardware
def test_flash_and_run_the_example_model_on_the_attached_board(tmp_path):
    board, probe = _attached()
    if board is None:
        pytest.skip(f"{NO_HARDWARE}: no probe of a known board is attached")
    port = _serial_port(board)
    if port is None:
        pytest.skip(f"{NO_HARDWARE} with a serial console: {board.name}'s probe is attached but its USB serial port "
                    f"({board.probe.usb_vid:04x}:{board.probe.usb_pid:04x}) is not")
    subprocess.run([sys.executable, str(REPO / "examples" / "digits" / "make_model.py"), "-o", str(tmp_path)],
                   check=True, cwd=REPO)
    built = flows.build(tmp_path / "digits_mlp.tflite", board, tmp_path / "p",
                                  input_path=tmp_path / "sample.npy", progress=print)
    import serial

    with serial.Serial(port, board.console.get("baud", 115200), timeout=0.5) as tty:
        tty.reset_input_buffer()
        flash(tmp_path / "p", board, probe=probe.id)    # resets the board: the self-test runs once
        text, deadline = "", time.monotonic() + 60
        while "MC-END" not in text and time.monotonic() < deadline:
            text += tty.read(4096).decode(errors="replace")
    assert "MC-END" in text, f"no complete self-test output on {port}:\n{text[-2000:]}"
    outputs, ticks = parse_output(text, load_manifest(tmp_path / "p"))
    reference = interp.run(built.compiled.graph, built.inputs)
    for out, name in zip(outputs, built.compiled.graph.outputs):
        np.testing.assert_allclose(out, reference[name], rtol=1e-5, atol=1e-5 * float(np.abs(reference[name]).max()))
    assert ticks > 0
