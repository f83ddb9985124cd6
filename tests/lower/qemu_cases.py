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


def merge_graphs(graphs: list[Graph], name: str = "merged") -> Graph:
    """Independent graphs side by side in one Graph (tensor and node names prefixed "g<k>.")
    so that one firmware build and one QEMU run check all of them."""
    from microcompile.ir import verify

    tensors, nodes, inputs, outputs = {}, [], [], []

    def ren(k, t):
        return f"g{k}.{t}" if t else t

    for k, g in enumerate(graphs):
        tensors.update({ren(k, n): t.replace(name=ren(k, n)) for n, t in g.tensors.items()})
        nodes += [n.replace(name=ren(k, n.name), inputs=tuple(ren(k, i) for i in n.inputs),
                            outputs=tuple(ren(k, o) for o in n.outputs)) for n in g.nodes]
        inputs += [ren(k, i) for i in g.inputs]
        outputs += [ren(k, o) for o in g.outputs]
    return verify(Graph(name, tensors, tuple(nodes), tuple(inputs), tuple(outputs)))
