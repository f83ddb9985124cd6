"""Long chains are models too (unrolled recurrent models, generated graphs): no traversal may
recurse over the graph's length, and compile time must grow linearly with it. A 1,000-op chain
used to end in a RecursionError (exit 3) in the memory planner, and a 2,000-op chain took 100 s
(the planner's and the liveness analysis' all-pairs loops)."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest

import microcompile as mc
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, Tensor, ops
from microcompile.memory.liveness import Alias, BufferReq, aliases
from microcompile.memory.planner import live_together
from support.cli_run import run_cli, run_cli_inprocess


def chain_graph(n: int, between=("relu",)) -> Graph:
    """x -> ADD(const) -> RELU -> ADD -> RELU ...: n float ops. The RELUs fuse into the ADDs,
    which the planner lets write over their inputs: one in-place chain as long as the model,
    what made the planner recurse. `between` varies the ops between the ADDs."""
    t = {"x": Tensor("x", (1, 8), "float32")}
    nodes, prev = [], "x"
    for k in range(n):
        op = "add" if k % 2 == 0 else between[(k // 2) % len(between)]
        ins = (prev, f"c{k}") if op == "add" else (prev,)
        if op == "add":
            t[f"c{k}"] = Tensor(f"c{k}", (1, 8), "float32", data=np.full((1, 8), 0.01, np.float32))
        t[f"t{k}"] = Tensor(f"t{k}", (1, 8), "float32")
        nodes.append(Node(op, f"n{k}", ins, (f"t{k}",), dict(ops.get(op).attrs)))
        prev = f"t{k}"
    return Graph("chain", t, tuple(nodes), ("x",), (prev,))


def chain_tflite(n: int, path, between=("relu",)):
    path.write_bytes(write_tflite(chain_graph(n, between)))
    return path


def chain_onnx(n: int, path):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    nodes, inits, prev = [], [], "x"
    for k in range(n):
        if k % 2:
            nodes.append(helper.make_node("Relu", [prev], [f"t{k}"], name=f"n{k}"))
        else:
            inits.append(numpy_helper.from_array(np.full((1, 8), 0.01, np.float32), f"c{k}"))
            nodes.append(helper.make_node("Add", [prev, f"c{k}"], [f"t{k}"], name=f"n{k}"))
        prev = f"t{k}"
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 8])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), path)
    return path


def test_a_1000_op_chain_inspects_and_deploys_on_the_host(tmp_path):
    model = chain_tflite(1000, tmp_path / "chain.tflite")
    p = run_cli_inprocess("inspect", model)
    assert p.returncode == 0, p.stderr
    p = run_cli("deploy", model, "--board", "host", "-o", tmp_path / "p", timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "outputs match reference: yes" in p.stdout


@pytest.mark.parametrize("fmt", ["tflite", "onnx"])
def test_a_10000_op_chain_compiles(fmt, tmp_path):
    model = (chain_tflite if fmt == "tflite" else chain_onnx)(10000, tmp_path / f"chain.{fmt}")
    cm = mc.compile(model, "host")
    assert len(cm.kernels) >= 5000
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
    y = x.astype(np.float64)
    for k in range(10000):      # the chain by hand: its value must come out of the reference
        y = y + 0.01 if k % 2 == 0 else np.maximum(y, 0)
    np.testing.assert_allclose(cm.reference(x)[0], y, rtol=1e-4, atol=1e-4)


def test_a_chain_of_many_kinds_of_op_compiles(tmp_path):
    model = chain_tflite(3000, tmp_path / "mixed.tflite", between=("relu", "tanh", "logistic"))
    cm = mc.compile(model, "host")
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(1, 8)
    y = x.astype(np.float64)
    for k in range(3000):
        y = y + 0.01 if k % 2 == 0 else (np.maximum(y, 0), np.tanh(y), 1 / (1 + np.exp(-y)))[(k // 2) % 3]
    np.testing.assert_allclose(cm.reference(x)[0], y, rtol=1e-4, atol=1e-4)


def test_compile_time_grows_linearly_with_the_chain(tmp_path):
    """Twice the ops, about twice the time (quadratic would be four times): measured as the
    ratio of 8,000 to 2,000 ops, in one process, so a loaded machine slows both alike."""
    times = {}
    for n in (2000, 8000):
        model = chain_tflite(n, tmp_path / f"chain{n}.tflite")
        start = time.process_time()
        mc.compile(model, "host")
        times[n] = time.process_time() - start
    assert times[8000] / times[2000] < 8, times          # linear: ~4x; quadratic: ~16x


def test_live_together_finds_exactly_the_overlapping_pairs():
    rng = random.Random(3)
    for _ in range(50):
        reqs = []
        for i in range(rng.randrange(1, 60)):
            first = rng.randrange(0, 40)
            reqs.append(BufferReq(f"b{i}", 16, first, first + rng.randrange(0, 6)))
        brute = [(i, j) for i in range(len(reqs)) for j in range(i + 1, len(reqs))
                 if reqs[i].first <= reqs[j].last and reqs[j].first <= reqs[i].last]
        assert live_together(reqs) == brute


def test_a_long_chain_of_views_resolves_without_recursion():
    n = 20000
    t = {"x": Tensor("x", (1, 8), "float32")}
    nodes = []
    for k in range(n):
        t[f"v{k}"] = Tensor(f"v{k}", (1, 8), "float32")
        nodes.append(Node("reshape", f"r{k}", ("x" if k == 0 else f"v{k - 1}",), (f"v{k}",), {"shape": (1, 8)}))
    g = Graph("views", t, tuple(nodes), ("x",), (f"v{n - 1}",))
    assert aliases(g)[f"v{n - 1}"] == Alias("x", 0)


@pytest.mark.slow
def test_a_20000_op_chain_deploys_on_the_host(tmp_path):
    model = chain_tflite(20000, tmp_path / "chain.tflite")
    start = time.monotonic()
    cm = mc.compile(model, "host")
    assert time.monotonic() - start < 60
    assert cm.deploy(tmp_path / "p").verified
