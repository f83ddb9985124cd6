"""Deploy single-op graphs to a QEMU board and compare the device output with LiteRT's
reference kernels, for the target-specific lowerings (SSAT on Armv7-M, DSP paths on
Armv7E-M) that host gcc cannot run."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


from litert_ref import run_reference  # noqa: E402

from support import flows  # noqa: E402
from microcompile.frontend.tflite.writer import write_tflite  # noqa: E402
from microcompile.ir import Graph  # noqa: E402
from microcompile.ir.compare import compare  # noqa: E402


def assert_matches_litert(model: Path, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray],
                          where: str) -> None:
    """Every device output equals LiteRT BUILTIN_REF on the same .tflite and inputs (int8
    byte for byte, float32 within ir.compare's 1e-5): the oracle is TFLite, not our interpreter."""
    reference = run_reference(Path(model).read_bytes(), inputs)
    assert set(reference) == set(outputs), (sorted(reference), sorted(outputs))
    for name, want in reference.items():
        got = outputs[name]
        c = compare(got, want.reshape(got.shape))
        assert c.equal, f"{where}: output {name} differs from LiteRT BUILTIN_REF: {c}"


def deploy_graph(g: Graph, inputs: dict[str, np.ndarray], board: str, work: Path) -> dict:
    """Deploy `g` on `board`'s emulated twin with `inputs`, check the device outputs against
    LiteRT (assert_matches_litert) and return the deploy report ("verified" is the
    comparison with our interpreter)."""
    work.mkdir(parents=True, exist_ok=True)
    model = work / "model.tflite"
    model.write_bytes(write_tflite(g))
    np.savez(work / "inputs.npz", **inputs)
    result = flows.deploy(model, board, work / "project", emulate=True, input_path=work / "inputs.npz",
                           progress=lambda s: None)
    assert_matches_litert(model, inputs, result.outputs, f"{g.name} on {board}")
    return result.report


def merged_inputs(per_graph: list[dict[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """The inputs of merge_graphs' graph: graph k's input `name` is "g<k>.<name>" there."""
    return {_renamed(k, name): x for k, inputs in enumerate(per_graph) for name, x in inputs.items()}


def _renamed(k: int, tensor: str) -> str:
    return f"g{k}.{tensor}" if tensor else tensor


def merge_graphs(graphs: list[Graph], name: str = "merged") -> Graph:
    """Independent graphs side by side in one Graph (tensor and node names prefixed "g<k>.")
    so that one firmware build and one QEMU run check all of them."""
    from microcompile.ir import verify

    tensors, nodes, inputs, outputs = {}, [], [], []

    for k, g in enumerate(graphs):
        tensors.update({_renamed(k, n): t.replace(name=_renamed(k, n)) for n, t in g.tensors.items()})
        nodes += [n.replace(name=_renamed(k, n.name), inputs=tuple(_renamed(k, i) for i in n.inputs),
                            outputs=tuple(_renamed(k, o) for o in n.outputs)) for n in g.nodes]
        inputs += [_renamed(k, i) for i in g.inputs]
        outputs += [_renamed(k, o) for o in g.outputs]
    return verify(Graph(name, tensors, tuple(nodes), tuple(inputs), tuple(outputs)))
