"""The int8 softmax's exp table (schedule/tabulate.py softmax_exp_table): the kernels that look
the exp of each difference up in a 256-entry table computed on the host (mc_softmax_s8_table,
mc_softmax_s8_s16_table) equal the ones that compute it, and LiteRT: int8 and int16 outputs,
random shapes up to attention rows, scales and betas, on the host and on the Cortex-M4 twin
(one firmware); the flash budget decides whether a softmax gets its table; a table that does
not fit the parameters is caught by the interpreter."""

from __future__ import annotations

import numpy as np
import pytest

from litert_ref import run_reference
from support.c_harness import run_on_host
from support.qemu_cases import deploy_graph, merge_graphs
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, QuantParams, Tensor, verify
from microcompile.lower import lower_node
from microcompile.reference import interp
from microcompile.schedule.default import default_schedule
from microcompile.tir import intrinsics
from microcompile.tir.interp import run_primfunc

RNG = np.random.default_rng(28)


def _graph(k: int) -> Graph:
    rows = tuple(int(v) for v in RNG.integers(1, 5, RNG.integers(1, 3)))
    shape = rows + (int(RNG.choice([1, 7, 65, 200])),)
    qi = QuantParams((float(np.float32(10 ** RNG.uniform(-2, 0.3))),), (int(RNG.integers(-20, 20)),))
    out = "int16" if k % 3 == 2 else "int8"
    qo = QuantParams((1 / 65536,), (-32768,)) if out == "int16" else QuantParams((1 / 256,), (-128,))
    t = {"x": Tensor("x", shape, "int8", quant=qi), "y": Tensor("y", shape, out, quant=qo)}
    beta = float(np.float32([1.0, 0.5, 2.0][k % 3]))
    return verify(Graph(f"softmax{k}_{out}", t, (Node("softmax", f"sm{k}", ("x",), ("y",), {"beta": beta}),),
                        ("x",), ("y",)))


GRAPHS = [_graph(k) for k in range(9)]


def _scheduled(g: Graph, wide: bool):
    return default_schedule(lower_node(g, g.nodes[0]), None, wide=wide)


def test_the_table_schedule_swaps_the_kernel_and_the_budget_can_refuse_it():
    for g in GRAPHS:
        f, trace = _scheduled(g, True)
        kernels = {n.name for n in _calls(f)}
        assert kernels <= {"mc_softmax_s8_table", "mc_softmax_s8_s16_table"} and len(kernels) == 1
        assert any(d.primitive == "softmax_exp_table" for d in trace.decisions)
        f0, trace0 = _scheduled(g, False)
        assert {n.name for n in _calls(f0)} <= {"mc_softmax_s8", "mc_softmax_s8_s16"} and not trace0.decisions


def _calls(f):
    from microcompile.tir.nodes import Call, walk
    return [n for n in walk(f.body) if isinstance(n, Call)]


def test_the_loop_ir_of_both_forms_equals_the_reference():
    for k, g in enumerate(GRAPHS):
        x = np.random.default_rng(k).integers(-128, 128, g.tensors["x"].shape, dtype=np.int8)
        want = interp.run(g, {"x": x})["y"]
        for wide in (False, True):
            f, _ = _scheduled(g, wide)
            got = run_primfunc(f, {"x": x})["y"]
            assert np.array_equal(got.reshape(want.shape), want), (g.name, wide)


def test_a_table_that_does_not_fit_the_parameters_is_caught():
    f, _ = _scheduled(GRAPHS[0], True)
    table = next(b for b in f.buffers if b.name == "exp_table")
    bad = table.data.copy()
    bad[3] += 1
    p = dict(next(c for c in _calls(f)).args[-1].fields)
    with pytest.raises(AssertionError, match="exp table"):
        intrinsics.REGISTRY["mc_softmax_s8_table"].impl(
            (np.zeros(p["rows"] * p["depth"], np.int8), 0), (np.zeros(p["rows"] * p["depth"], np.int8), 0), (bad, 0), p)
    assert np.array_equal(table.data, intrinsics.softmax_exp_table(p["input_multiplier"], p["input_left_shift"]))


def test_the_reference_equals_litert():
    for k, g in enumerate(GRAPHS):
        x = np.random.default_rng(k).integers(-128, 128, g.tensors["x"].shape, dtype=np.int8)
        want = run_reference(write_tflite(g), {"x": x})["y"]
        assert np.array_equal(interp.run(g, {"x": x})["y"], want), g.name


def test_the_host_c_with_tables_equals_the_reference(tmp_path):
    for out, case in run_on_host(GRAPHS, tmp_path):
        assert np.array_equal(out, interp.run(case.graph, case.inputs)["y"]), case.graph.name


@pytest.mark.qemu
def test_the_cortex_m4_kernels_with_tables_equal_litert(tmp_path):
    g = merge_graphs(GRAPHS, "softmax_tables")
    inputs = {f"g{k}.x": np.random.default_rng(k).integers(-128, 128, sub.tensors["x"].shape, dtype=np.int8)
              for k, sub in enumerate(GRAPHS)}
    report = deploy_graph(g, inputs, "mps2-an386", tmp_path)
    assert report["verified"]
    code = (tmp_path / "project" / "model" / "model.c").read_text()
    # every softmax took its table (the board's flash has room)
    assert code.count("mc_softmax_s8_table(") + code.count("mc_softmax_s8_s16_table(") == len(GRAPHS)
