"""Deploy single-op graphs to a QEMU board and compare with the numpy interpreter, for the
target-specific lowerings (SSAT on Armv7-M, DSP paths on Armv7E-M) that host gcc cannot run."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from microcompile import driver
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph


def deploy_graph(g: Graph, inputs: dict[str, np.ndarray], board: str, work: Path) -> dict:
    """The deploy report of `g` on `board`'s emulated twin with `inputs` ("verified" is
    the bit-exact comparison with the interpreter)."""
    work.mkdir(parents=True, exist_ok=True)
    model = work / "model.tflite"
    model.write_bytes(write_tflite(g))
    np.savez(work / "inputs.npz", **inputs)
    return driver.deploy(model, board, work / "project", emulate=True, input_path=work / "inputs.npz",
                         progress=lambda s: None).report
