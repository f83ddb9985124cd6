"""float32 batch_matmul, gelu, sqrt, rsqrt and erf (attention, GELU and layer norm; TFLite has no ERF)
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
    if g.nodes[0].op in ("sqrt", "rsqrt"):
        ins["x"] = np.abs(ins["x"]) * 10 + 1e-3
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
    return {"sqrt": torch.sqrt, "rsqrt": torch.rsqrt, "erf": torch.erf}[n.op](t["x"]).numpy()


def _graphs() -> list[Graph]:
    graphs = [_matmul_graph(c, k) for k, c in enumerate(_matmul_cases(12))]
    for k in range(6):
        shape = tuple(int(v) for v in RNG.integers(1, 7, RNG.integers(1, 5)))
        graphs += [_unary_graph("gelu", shape, {"approximate": bool(k % 2)}, k), _unary_graph("sqrt", shape, {}, k),
                   _unary_graph("rsqrt", shape, {}, k), _unary_graph("erf", shape, {}, k)]
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


@pytest.mark.parametrize("g", [g for g in GRAPHS if g.nodes[0].op != "erf"], ids=lambda g: g.name)
def test_tflite_writes_and_reads_them_and_litert_agrees(g):
    """BATCH_MATMUL, GELU and SQRT in .tflite: read back as written, and LiteRT BUILTIN_REF
    computes what the interpreter does (float32 tolerance)."""
    from litert_ref import run_reference
    from microcompile.frontend.tflite import load_tflite
    from microcompile.frontend.tflite.writer import write_tflite

    model = write_tflite(g)
    back = load_tflite(model)
    assert [(n.op, n.attrs) for n in back.nodes] == [(n.op, {**n.attrs}) for n in g.nodes]
    ins = _inputs(g)
    got = interp.run(back, ins)["y"]
    want = run_reference(model, ins)["y"]
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert compare(np.where(nan, 0, got), np.where(nan, 0, want)).equal


def _int8(g: Graph, k: int) -> Graph:
    """The float batch_matmul case `g` in int8: random per-tensor scales and zero points, the
    output scale set so that the sums fill the int8 range without saturating all of it."""
    from microcompile.ir import QuantParams
    rng = np.random.default_rng(100 + k)
    depth = g.tensors["a"].shape[-2 if g.nodes[0].attrs["adj_x"] else -1]
    qa = QuantParams((float(np.float32(10 ** rng.uniform(-2, 0))),), (int(rng.integers(-40, 40)),))
    qb = QuantParams((float(np.float32(10 ** rng.uniform(-2, 0))),), (int(rng.integers(-40, 40)),))
    qo = QuantParams((float(np.float32(qa.s * qb.s * 128 * 64 * np.sqrt(depth) / 127 * rng.uniform(0.3, 1.5))),),
                     (int(rng.integers(-20, 20)),))
    t = dict(g.tensors)
    t["a"] = t["a"].replace(dtype="int8", quant=qa)
    b = t["b"]
    t["b"] = b.replace(dtype="int8", quant=qb,
                       data=rng.integers(-128, 128, b.shape, dtype=np.int8) if b.is_const else None)
    t["y"] = t["y"].replace(dtype="int8", quant=qo)
    return verify(g.replace(tensors=t, name=g.name + "_int8"))


INT8 = [_int8(g, k) for k, g in enumerate(GRAPHS) if g.nodes[0].op == "batch_matmul"]


def _int8_inputs(g: Graph, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {i: rng.integers(-128, 128, g.tensors[i].shape, dtype=np.int8) for i in g.inputs}


@pytest.mark.parametrize("g", INT8, ids=lambda g: g.name)
def test_int8_batch_matmul_equals_litert_and_its_loop_ir(g):
    from litert_ref import run_reference
    from microcompile.frontend.tflite import load_tflite
    from microcompile.frontend.tflite.writer import write_tflite

    model = write_tflite(g)
    back = load_tflite(model)
    ins = _int8_inputs(g, 7)
    ref = interp.run(back, ins)["y"]
    assert ref.dtype == np.int8 and np.array_equal(ref, run_reference(model, ins)["y"])
    assert np.array_equal(run_lowered(g, lower_node(g, g.nodes[0]), ins), ref)


def test_int8_batch_matmul_host_c_equals_the_interpreter(tmp_path):
    for out, case in run_on_host(INT8, tmp_path):
        assert np.array_equal(out, interp.run(case.graph, case.inputs)["y"]), case.graph.name


@pytest.mark.qemu
def test_batch_matmul_float_and_int8_on_the_m4(tmp_path):
    import microcompile as mc
    for g, ins in ((GRAPHS[0], _inputs(GRAPHS[0])), (INT8[1], _int8_inputs(INT8[1], 9))):
        r = mc.compile(g, "mps2-an386").deploy(tmp_path / g.name, inputs=[ins[i] for i in g.inputs], emulate=True)
        assert r.verified and compare(r.outputs["y"], interp.run(g, ins)["y"]).equal


def _int8_gelu(k: int) -> Graph:
    from microcompile.ir import QuantParams
    rng = np.random.default_rng(300 + k)
    qi = QuantParams((float(np.float32(10 ** rng.uniform(-2.5, -0.5))),), (int(rng.integers(-60, 60)),))
    qo = QuantParams((float(np.float32(10 ** rng.uniform(-2.5, -0.5))),), (int(rng.integers(-60, 60)),))
    t = {"x": Tensor("x", (256,), "int8", quant=qi), "y": Tensor("y", (256,), "int8", quant=qo)}
    node = Node("gelu", "gelu", ("x",), ("y",), {"approximate": bool(k % 2)})
    return verify(Graph(f"gelu_int8_{k}", t, (node,), ("x",), ("y",)))


GELU8 = [_int8_gelu(k) for k in range(16)]


@pytest.mark.parametrize("g", GELU8, ids=lambda g: g.name)
def test_int8_gelu_equals_litert_on_every_input(g):
    """LiteRT's int8 GELU is a 256-entry table of its float formula; ours equals it on all 256
    inputs, for random input and output scales, exact and tanh forms."""
    from litert_ref import run_reference
    from microcompile.frontend.tflite.writer import write_tflite

    x = np.arange(-128, 128, dtype=np.int8)
    got = interp.run(g, {"x": x})["y"]
    assert np.array_equal(got, run_reference(write_tflite(g), {"x": x})["y"])
    assert np.array_equal(run_lowered(g, lower_node(g, g.nodes[0]), {"x": x}), got)


def test_int8_gelu_host_c_equals_the_interpreter(tmp_path):
    for out, case in run_on_host(GELU8[:4], tmp_path):
        assert np.array_equal(out, interp.run(case.graph, case.inputs)["y"]), case.graph.name


def _attention_int8(k: int, adj_y: bool) -> Graph:
    """Attention-shaped int8 matmuls: Q K^T (depth 16 per head, 65 tokens, adj_y) and P V
    (depth 65, 16 columns), 3 heads."""
    from microcompile.ir import QuantParams
    rng = np.random.default_rng(400 + k)
    a, b = ((3, 65, 16), (3, 65, 16)) if adj_y else ((3, 65, 65), (3, 65, 16))
    out = (3, 65, 65) if adj_y else (3, 65, 16)
    q = [QuantParams((float(np.float32(10 ** rng.uniform(-2, -0.5))),), (int(rng.integers(-30, 30)),))
         for _ in range(3)]
    t = {"a": Tensor("a", a, "int8", quant=q[0]), "b": Tensor("b", b, "int8", quant=q[1]),
         "y": Tensor("y", out, "int8", quant=q[2])}
    node = Node("batch_matmul", "bmm", ("a", "b"), ("y",), {"adj_x": False, "adj_y": adj_y})
    return verify(Graph(f"attention_int8_{k}", t, (node,), ("a", "b"), ("y",)))


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an385"])
def test_int8_batch_matmuls_equal_litert_on_the_dsp_and_the_portable_kernel(board, tmp_path):
    """Every int8 case (all adj_x/adj_y and broadcast combinations, depths and column counts
    off the kernel's groups of four) and two attention-shaped ones in one firmware: the M4's
    SMLAD path and the M3's portable one of mc_matmul_s8, against LiteRT."""
    from support.qemu_cases import deploy_graph, merge_graphs, merged_inputs
    graphs = INT8 + [_attention_int8(0, True), _attention_int8(1, False)]
    inputs = merged_inputs([_int8_inputs(sub, 20 + k) for k, sub in enumerate(graphs)])
    report = deploy_graph(merge_graphs(graphs, "bmm_int8"), inputs, board, tmp_path)
    assert report["verified"]
