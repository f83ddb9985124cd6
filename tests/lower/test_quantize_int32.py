"""QUANTIZE between int16 and int32 (TFLM's seanet integration models: an int32 op's output
requantized to int16, and back), over random shapes and scales: the reference interpreter
against TFLite Micro's interpreter (LiteRT has no int32 QUANTIZE input), the host C and the
Cortex-M C (QEMU) against the reference."""

from __future__ import annotations

import numpy as np
import pytest

import microcompile as mc
from support.c_harness import run_on_host
from tflm_ref import run_tflm
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, QuantParams, Tensor, VerifyError, verify
from microcompile.reference import interp

RNG = np.random.default_rng(28)
RANGE = {"int16": (-(1 << 15), (1 << 15) - 1), "int32": (-(1 << 31), (1 << 31) - 1)}


def _graph(k: int, src: str, dst: str) -> Graph:
    shape = tuple(int(v) for v in RNG.integers(1, 6, RNG.integers(1, 5)))
    # scales as in seanet: an int32 accumulator scale ~1e-7, int16 activations ~1e-3; the
    # ratio spans both directions (multipliers above and below one)
    s_small, s_big = float(10 ** RNG.uniform(-8, -6)), float(10 ** RNG.uniform(-4, -2))
    qi = QuantParams((s_small if src == "int32" else s_big,), (0,))
    qo = QuantParams((s_big * float(10 ** RNG.uniform(-1, 1)) if dst == "int16" else s_small,), (0,))
    t = {"x": Tensor("x", shape, src, quant=qi), "y": Tensor("y", shape, dst, quant=qo)}
    return verify(Graph(f"q{k}_{src}_{dst}", t, (Node("quantize", "q", ("x",), ("y",), {}),), ("x",), ("y",)))


def _input(g: Graph) -> np.ndarray:
    t = g.tensors["x"]
    lo, hi = RANGE[t.dtype]
    x = RNG.integers(lo, hi, t.shape, dtype=np.int64, endpoint=True)
    x.flat[:2] = [lo, hi][: x.size]          # the extremes: saturation of the int16 output
    return x.astype(t.dtype)


CASES = [_graph(k, src, dst) for k in range(8) for src, dst in (("int32", "int16"), ("int16", "int32"))]


@pytest.mark.parametrize("g", CASES, ids=lambda g: g.name)
def test_the_reference_equals_tflm(g):
    x = _input(g)
    want = run_tflm(write_tflite(g), [x])[0]
    got = interp.run(g, {"x": x})["y"]
    assert got.dtype == want.dtype and np.array_equal(got, want)


def test_the_host_c_equals_the_reference(tmp_path):
    for out, case in run_on_host(CASES, tmp_path):
        assert np.array_equal(out, interp.run(case.graph, case.inputs)["y"]), case.graph.name


@pytest.mark.qemu
def test_cortex_m_c_equals_the_reference(tmp_path):
    for g in (CASES[0], CASES[1]):
        x = _input(g)
        r = mc.compile(g, "mps2-an386").deploy(tmp_path / g.name, inputs=x, emulate=True)
        assert r.verified and np.array_equal(r.outputs["y"], interp.run(g, {"x": x})["y"])


def test_int32_to_int8_is_refused_by_name():
    t = {"x": Tensor("x", (4,), "int32", quant=QuantParams((1e-6,), (0,))),
         "y": Tensor("y", (4,), "int8", quant=QuantParams((0.01,), (0,)))}
    with pytest.raises(VerifyError, match="quantize of int32 to int8 is not supported"):
        verify(Graph("q", t, (Node("quantize", "q", ("x",), ("y",), {}),), ("x",), ("y",)))
