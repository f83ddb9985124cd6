"""float32 batch_matmul, gelu and sqrt (the PyTorch frontend's attention, GELU and layer norm)
over random shapes: the reference interpreter against torch, the lowered loop IR against the
interpreter, and the host C against the interpreter. The Cortex-M C runs in
tests/frontend/test_pytorch.py (the keyword transformer in QEMU)."""

from __future__ import annotations

import numpy as np
import pytest

from support.c_harness import run_on_host
from support.lower_cases import run_lowered
from microcompile.ir import Graph, Node, Tensor, verify
from microcompile.ir.compare import compare
from microcompile.lower import lower_node
from microcompile.reference import interp

torch = pytest.importorskip("torch", reason="not-installed: torch (the oracle of these float ops)")

RNG = np.random.default_rng(25)


def _matmul_cases(n: int) -> list[dict]:
    cases = []
    for k in range(n):
        batch_a = tuple(int(v) for v in RNG.integers(1, 4, RNG.integers(0, 3)))
        batch_b = tuple(1 if RNG.random() < 0.3 else d for d in batch_a)[int(RNG.integers(0, len(batch_a) + 1)):]
        m, depth, cols = (int(v) for v in RNG.integers(1, 9, 3))
        adj_x, adj_y = bool(k % 2), bool(k // 2 % 2)
        cases.append(dict(a=(*batch_a, *((depth, m) if adj_x else (m, depth))),
                          b=(*batch_b, *((cols, depth) if adj_y else (depth, cols))), adj_x=adj_x, adj_y=adj_y,
                          const_b=k % 3 == 2))
    return cases


def _matmul_graph(c: dict, k: int) -> Graph:
    out = (*np.broadcast_shapes(c["a"][:-2], c["b"][:-2]), c["a"][-1] if c["adj_x"] else c["a"][-2],
           c["b"][-2] if c["adj_y"] else c["b"][-1])
    data = RNG.normal(0, 1, c["b"]).astype(np.float32) if c["const_b"] else None
    t = {"a": Tensor("a", c["a"], "float32"), "b": Tensor("b", c["b"], "float32", data=data),
         "y": Tensor("y", tuple(out), "float32")}
    node = Node("batch_matmul", "bmm", ("a", "b"), ("y",), {"adj_x": c["adj_x"], "adj_y": c["adj_y"]})
    return verify(Graph(f"bmm{k}", t, (node,), ("a",) if c["const_b"] else ("a", "b"), ("y",)))


def _unary_graph(op: str, shape: tuple, attrs: dict, k: int) -> Graph:
    t = {"x": Tensor("x", shape, "float32"), "y": Tensor("y", shape, "float32")}
    return verify(Graph(f"{op}{k}", t, (Node(op, op, ("x",), ("y",), attrs),), ("x",), ("y",)))


def _inputs(g: Graph) -> dict[str, np.ndarray]:
    scale = 3.0 if g.nodes[0].op == "gelu" else 1.0
    ins = {i: (RNG.normal(0, scale, g.tensors[i].shape)).astype(np.float32) for i in g.inputs}
    if g.nodes[0].op == "sqrt":
        ins["x"] = np.abs(ins["x"]) * 10
    return ins


def _torch(g: Graph, ins: dict) -> np.ndarray:
    n = g.nodes[0]
    t = {k: torch.from_numpy(v) for k, v in ins.items()}
    if n.op == "batch_matmul":
        a = t["a"]
        b = t["b"] if "b" in t else torch.from_numpy(g.tensors["b"].data)
        a = a.transpose(-1, -2) if n.attrs["adj_x"] else a
        b = b.transpose(-1, -2) if n.attrs["adj_y"] else b
        return torch.matmul(a, b).numpy()
    if n.op == "gelu":
        return torch.nn.functional.gelu(t["x"], approximate="tanh" if n.attrs["approximate"] else "none").numpy()
    return torch.sqrt(t["x"]).numpy()


def _graphs() -> list[Graph]:
    graphs = [_matmul_graph(c, k) for k, c in enumerate(_matmul_cases(12))]
    for k in range(6):
        shape = tuple(int(v) for v in RNG.integers(1, 7, RNG.integers(1, 5)))
        graphs += [_unary_graph("gelu", shape, {"approximate": bool(k % 2)}, k), _unary_graph("sqrt", shape, {}, k)]
    return graphs


GRAPHS = _graphs()


@pytest.mark.parametrize("g", GRAPHS, ids=lambda g: g.name)
def test_the_interpreter_equals_torch_and_the_loop_ir_equals_the_interpreter(g):
    ins = _inputs(g)
    ref = interp.run(g, ins)["y"]
    assert compare(ref, _torch(g, ins)).equal
    assert compare(run_lowered(g, lower_node(g, g.nodes[0]), ins), ref).equal


def test_the_host_c_equals_the_interpreter(tmp_path):
    """The harness's inputs are normal(0, 1): sqrt of a negative is NaN in C and numpy alike."""
    for out, case in run_on_host(GRAPHS, tmp_path):
        ref = interp.run(case.graph, case.inputs)["y"]
        nan = np.isnan(ref)
        assert np.array_equal(np.isnan(out), nan), case.graph.name
        assert compare(np.where(nan, 0, out), np.where(nan, 0, ref)).equal, case.graph.name
