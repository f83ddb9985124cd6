"""float32 DIV end to end: registry, interpreter, TFLite writer/reader, lowering + host C,
each against LiteRT BUILTIN_REF (the ONNX importer maps Div with a runtime divisor here)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest


from support.c_harness import run_on_host  # noqa: E402
from litert_ref import run_reference  # noqa: E402
from microcompile.errors import UserError  # noqa: E402
from microcompile.frontend import load_tflite  # noqa: E402
from microcompile.frontend.tflite.writer import write_tflite  # noqa: E402
from microcompile.ir import Graph, Node, Tensor, VerifyError, verify
from microcompile.reference import interp  # noqa: E402
from microcompile.ir.compare import compare  # noqa: E402

PLAN = [((1, 4, 4, 3), (1, 4, 4, 3), "NONE"), ((2, 5), (5,), "RELU"), ((1, 3, 1, 2), (1, 3, 6, 1), "RELU6"),
        ((7,), (1, 2, 7), "RELU_N1_TO_1"), ((3, 4), (1,), "NONE")]


def _graph(a_shape, b_shape, act, const_rhs=False, seed=0) -> Graph:
    out = tuple(np.broadcast_shapes(a_shape, b_shape))
    rng = np.random.default_rng(seed)
    # Divisors away from 0, both signs: the quotient stays well conditioned.
    data = (rng.uniform(0.5, 2.0, b_shape) * rng.choice([-1, 1], b_shape)).astype(np.float32) if const_rhs else None
    t = {"a": Tensor("a", a_shape, "float32"), "b": Tensor("b", b_shape, "float32", data=data),
         "y": Tensor("y", out, "float32")}
    g = Graph(f"div_{len(a_shape)}_{len(b_shape)}_{act}", t, (Node("div", "div0", ("a", "b"), ("y",),
                                                                  {"activation": act}),),
              ("a",) if const_rhs else ("a", "b"), ("y",))
    return verify(g)


def _inputs(g: Graph, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    ins = {"a": rng.normal(0, 1.5, g.tensors["a"].shape).astype(np.float32)}
    if "b" in g.inputs:
        shape = g.tensors["b"].shape
        ins["b"] = (rng.uniform(0.5, 2.0, shape) * rng.choice([-1, 1], shape)).astype(np.float32)
    return ins


CASES = [(a, b, act, const) for a, b, act in PLAN for const in (False, True)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}/{c[1]}-{c[2]}-{'const' if c[3] else 'rt'}")
def test_div_interp_and_reader_match_litert(case):
    g = _graph(*case)
    ins = _inputs(g, 1)
    model = write_tflite(g)
    ref = run_reference(model, ins)["y"]
    assert compare(interp.run(g, ins)["y"], ref).equal
    back = load_tflite(model)
    assert [n.op for n in back.nodes] == ["div"] and back.nodes[0].attrs["activation"] == case[2]


def test_div_host_c_matches_interp(tmp_path):
    graphs = [_graph(*c, seed=k) for k, c in enumerate(CASES)]
    for out, case in run_on_host(graphs, tmp_path):
        assert compare(out, interp.run(case.graph, case.inputs)["y"]).equal, case.graph.name


def test_int8_div_is_rejected():
    g = _graph((2, 3), (2, 3), "NONE")
    from microcompile.ir import QuantParams
    q = QuantParams((0.1,), (0,))
    t = {k: v.replace(dtype="int8", quant=q) for k, v in g.tensors.items()}
    with pytest.raises((VerifyError, UserError)):
        verify(g.replace(tensors=t))
