"""SOFTMAX with int8 input and int16 output (TFLite's Softmax<int8_t, int16_t>; TFLM's
keyword_scrambled models end with one), over random shapes, input scales and betas: the
reference interpreter against LiteRT BUILTIN_REF and TFLM's interpreter, then the host C and
the Cortex-M C against the reference."""

from __future__ import annotations

import numpy as np
import pytest

import microcompile as mc
from litert_ref import run_reference
from support.c_harness import run_on_host
from tflm_ref import run_tflm
from microcompile.ir.fixedpoint import KernelParamsError
from microcompile.frontend.tflite import load_tflite
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, QuantParams, Tensor, verify
from microcompile.reference import interp

RNG = np.random.default_rng(16)
OUT_Q = QuantParams((1 / 65536,), (-32768,))


def _graph(k: int, out_q: QuantParams = OUT_Q) -> Graph:
    shape = tuple(int(v) for v in RNG.integers(1, 5, RNG.integers(1, 4))) + (int(RNG.integers(1, 40)),)
    qi = QuantParams((float(np.float32(10 ** RNG.uniform(-2, 0))),), (int(RNG.integers(-20, 20)),))
    t = {"x": Tensor("x", shape, "int8", quant=qi), "y": Tensor("y", shape, "int16", quant=out_q)}
    beta = float(np.float32([1.0, 0.5, 2.0][k % 3]))
    return verify(Graph(f"softmax{k}", t, (Node("softmax", "sm", ("x",), ("y",), {"beta": beta}),), ("x",), ("y",)))


GRAPHS = [_graph(k) for k in range(10)]


def _x(g: Graph, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, g.tensors["x"].shape, dtype=np.int8)


@pytest.mark.parametrize("g", GRAPHS, ids=lambda g: g.name)
def test_the_reference_equals_litert_and_tflm(g):
    model = write_tflite(g)
    back = load_tflite(model)
    assert back.tensors[back.outputs[0]].dtype == "int16"
    x = _x(g, 1)
    got = interp.run(g, {"x": x})["y"]
    assert got.dtype == np.int16
    assert np.array_equal(got, run_reference(model, {"x": x})["y"])
    assert np.array_equal(got, run_tflm(model, [x])[0])


def test_the_host_c_equals_the_reference(tmp_path):
    for out, case in run_on_host(GRAPHS, tmp_path):
        assert np.array_equal(out, interp.run(case.graph, case.inputs)["y"]), case.graph.name


@pytest.mark.qemu
def test_the_cortex_m_c_equals_the_reference(tmp_path):
    g = GRAPHS[0]
    x = _x(g, 2)
    r = mc.compile(g, "mps2-an386").deploy(tmp_path / "p", inputs=x, emulate=True)
    assert r.verified and np.array_equal(r.outputs["y"], interp.run(g, {"x": x})["y"])


def test_an_int16_output_other_than_1_65536_is_refused_by_name():
    g = _graph(0, QuantParams((1 / 32768,), (0,)))
    with pytest.raises(KernelParamsError, match="scale 1/65536, zero point -32768"):
        interp.run(g, {"x": _x(g, 0)})
