"""Plain-integer ops (reference/plain.py): TFLite's int32 ADD, SUB, MUL, DIV, MAXIMUM and
MINIMUM with broadcasting and fused activations, and CAST between int8, int16, int32, uint32
and float32: the reference against LiteRT BUILTIN_REF over random shapes and values, and the
host C against the reference, the edge cases LiteRT leaves undefined (x / 0, INT32_MIN / -1,
float32 out of range or NaN to an integer) included."""

from __future__ import annotations

import numpy as np
import pytest

from litert_ref import run_reference
from support import c_harness
from support.c_harness import run_on_host
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, Tensor, verify
from microcompile.reference import interp, plain

BINARY = ("add", "sub", "mul", "div", "maximum", "minimum")
CASTS = (("int16", "int32"), ("int32", "int16"), ("int32", "int8"), ("int8", "int32"), ("int32", "uint32"),
         ("uint32", "int32"), ("int16", "float32"), ("int32", "float32"), ("float32", "int32"),
         ("float32", "int16"), ("float32", "int8"), ("int8", "int16"), ("int16", "int8"))


def _binary_graph(op: str, rng, const_rhs: bool) -> Graph:
    rank = int(rng.integers(1, 5))
    shape = tuple(int(d) for d in rng.integers(1, 6, rank))
    rhs_shape = tuple(d if rng.random() < 0.6 else 1 for d in shape)[int(rng.integers(0, rank)):]
    rhs = None
    if const_rhs:
        rhs = rng.integers(-1000, 1000, rhs_shape).astype(np.int32)
        if op == "div":
            rhs[rhs == 0] = 7
    ts = {"a": Tensor("a", shape, "int32"), "b": Tensor("b", rhs_shape, "int32", data=rhs),
          "y": Tensor("y", shape, "int32")}
    attrs = {}
    if op in ("add", "sub", "mul", "div"):
        attrs["activation"] = str(rng.choice(["NONE", "NONE", "RELU", "RELU6", "RELU_N1_TO_1"]))
    inputs = ("a",) if const_rhs else ("a", "b")
    return verify(Graph(f"{op}_{len(shape)}d_{'c' if const_rhs else 'v'}", ts, (Node(op, op, ("a", "b"), ("y",), attrs),),
                        inputs, ("y",)))


def _cast_graph(src: str, dst: str, shape=(3, 17)) -> Graph:
    ts = {"x": Tensor("x", shape, src), "y": Tensor("y", shape, dst)}
    return verify(Graph(f"cast_{src}_{dst}", ts, (Node("cast", "cast", ("x",), ("y",), {"to": dst}),), ("x",), ("y",)))


def _inputs(g: Graph, rng, magnitude: int) -> dict[str, np.ndarray]:
    out = {}
    for name in g.inputs:
        t = g.tensors[name]
        if t.dtype == "float32":
            out[name] = (rng.normal(0, 1, t.shape) * rng.choice([1.0, 100.0, 30000.0, 1e9], t.shape)).astype(np.float32)
        else:
            info = np.iinfo(np.dtype(t.dtype))
            lo, hi = max(int(info.min), -magnitude), min(int(info.max), magnitude)
            out[name] = rng.integers(lo, hi + 1, t.shape, dtype=np.int64).astype(t.dtype)
    return out


def _legal_for_litert(g: Graph, ins: dict) -> dict:
    """LiteRT's DIV traps on a zero divisor and on INT32_MIN / -1 (a host SIGFPE): keep them out."""
    if g.nodes[0].op == "div" and "b" in ins:
        ins["b"] = np.where(ins["b"] == 0, 3, ins["b"]).astype(np.int32)
        ins["a"] = np.where(ins["a"] == -2**31, 5, ins["a"]).astype(np.int32)
    return ins


GRAPHS = [_binary_graph(op, np.random.default_rng(k * 7 + j), const_rhs=bool(j % 2))
          for k, op in enumerate(BINARY) for j in range(4)]
CAST_GRAPHS = [_cast_graph(s, d) for s, d in CASTS]


@pytest.mark.parametrize("g", GRAPHS + CAST_GRAPHS, ids=lambda g: g.name)
def test_the_reference_equals_litert(g):
    rng = np.random.default_rng(len(g.name))
    model = write_tflite(g)
    for magnitude in (100, 2**16, 2**31):     # small values, products that wrap, the whole range
        ins = _legal_for_litert(g, _inputs(g, rng, magnitude))
        want = run_reference(model, ins)["y"]
        got = interp.run(g, ins)["y"]
        assert got.dtype == want.dtype and np.array_equal(got, want), (magnitude, ins, got, want)


def test_the_host_c_equals_the_reference_on_every_case(tmp_path):
    graphs = GRAPHS + CAST_GRAPHS
    for out, case in run_on_host(graphs, tmp_path):
        want = interp.run(case.graph, case.inputs)[case.graph.outputs[0]]
        assert out.dtype == want.dtype and np.array_equal(out, want), case.graph.name


def test_the_edge_cases_litert_leaves_undefined():
    a = np.array([7, -7, 5, -2**31, -2**31, 2**31 - 1], np.int32)
    b = np.array([2, 2, 0, -1, 1, -1], np.int32)
    assert plain.binary_int32("div", a, b).tolist() == [3, -3, 0, -2**31, -2**31, -(2**31 - 1)]
    assert plain.binary_int32("add", np.array([2**31 - 1], np.int32), np.array([1], np.int32)).tolist() == [-2**31]
    x = np.array([3.9e9, -3.9e9, np.nan, -2.7, 2.7, 70000.5], np.float32)
    assert plain.cast(x, "int32").tolist() == [2**31 - 1, -2**31, 2**31 - 1, -2, 2, 70000]
    assert plain.cast(x, "int16").tolist() == [32767, -32768, 32767, -2, 2, 32767]
    assert plain.cast(x, "uint32").tolist() == [3900000000, 0, 2**32 - 1, 0, 2, 70000]


def test_the_host_c_meets_the_edge_cases(tmp_path, monkeypatch):
    shape = (6,)
    ts = {n: Tensor(n, shape, "int32") for n in "aby"}
    div = verify(Graph("div_edges", ts, (Node("div", "div", ("a", "b"), ("y",), {}),), ("a", "b"), ("y",)))
    edges = {div.name: {"a": np.array([7, -7, 5, -2**31, -2**31, 2**31 - 1], np.int32),
                        "b": np.array([2, 2, 0, -1, 1, -1], np.int32)}}
    graphs = [div]
    for dst in ("int8", "int16", "int32", "uint32"):
        g = _cast_graph("float32", dst, shape)
        edges[g.name] = {"x": np.array([3.9e9, -3.9e9, np.nan, -2.7, 2.7, 70000.5], np.float32)}
        graphs.append(g)
    monkeypatch.setattr(c_harness, "random_inputs", lambda g, seed: edges[g.name])
    for out, case in run_on_host(graphs, tmp_path):
        want = interp.run(case.graph, edges[case.graph.name])[case.graph.outputs[0]]
        assert np.array_equal(out, want), (case.graph.name, out, want)
