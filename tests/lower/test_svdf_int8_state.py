"""TFLite Micro's int8 SVDF variant (int8 weights_time and state: its
EvalIntegerSvdfReference<int8_t>, as in TFLM's keyword_scrambled_8bit model), over random
shapes and scales: the reference interpreter against TFLM's interpreter over several
invocations (the state carries over), and the host C and the Cortex-M C against the
reference. LiteRT has no such variant."""

from __future__ import annotations

import numpy as np
import pytest

import microcompile as mc
from support.c_harness import run_on_host
from support.op_cases import build_graph, cases, random_inputs
from tflm_ref import tflm_interpreter
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, QuantParams, verify
from microcompile.reference import interp


def _int8_state(g: Graph, seed: int) -> Graph:
    """The int8 SVDF case `g` with int8 weights_time and state; the state's scale is chosen so
    that the new entries saturate the int8 range now and then (the variant's one difference)."""
    rng = np.random.default_rng(seed)
    n = g.nodes[0]
    wt, state = g.tensors[n.inputs[2]], g.tensors[n.inputs[4]]
    wt8 = wt.replace(dtype="int8", data=rng.integers(-127, 128, wt.shape, dtype=np.int8),
                     quant=QuantParams((float(np.float32(wt.quant.s * 256)),), (0,)))
    state8 = state.replace(dtype="int8", quant=QuantParams((float(np.float32(state.quant.s * 256 * rng.uniform(0.05, 0.5))),), (0,)))
    t = dict(g.tensors, **{wt.name: wt8, state.name: state8})
    if n.inputs[3]:     # the bias is scaled by state * weights_time
        b = g.tensors[n.inputs[3]]
        t[b.name] = b.replace(quant=QuantParams((float(np.float32(state8.quant.s) * np.float32(wt8.quant.s)),), (0,)))
    return verify(g.replace(tensors=t, name=g.name + "_s8state"))


GRAPHS = [_int8_state(build_graph(c), k) for k, c in enumerate(cases("svdf", "int8", 6, seed=8))]


@pytest.mark.parametrize("g", GRAPHS, ids=lambda g: g.name)
def test_the_reference_equals_tflm_over_invocations(g):
    tflm = tflm_interpreter(write_tflite(g))
    state = interp.initial_state(g)
    saturated = 0
    for k in range(4):
        x = random_inputs(g, 10 + k)[g.inputs[0]]
        tflm.set_input(x, 0)
        tflm.invoke()
        want = np.array(tflm.get_output(0), copy=True)
        got = interp.run(g, {g.inputs[0]: x}, state=state)[g.outputs[0]]
        assert np.array_equal(got, want), k
        saturated += int(np.isin(next(iter(state.values())), (-128, 127)).sum())
    assert saturated, "the plan must reach the int8 state's saturation"


def test_the_host_c_equals_the_reference(tmp_path):
    for out, case in run_on_host(GRAPHS, tmp_path):
        assert np.array_equal(out, interp.run(case.graph, case.inputs)[case.graph.outputs[0]]), case.graph.name


@pytest.mark.qemu
def test_the_cortex_m_c_equals_the_reference(tmp_path):
    g = GRAPHS[0]
    x = random_inputs(g, 3)[g.inputs[0]]
    r = mc.compile(g, "mps2-an386").deploy(tmp_path / "p", inputs=x, emulate=True)
    assert r.verified and np.array_equal(r.outputs[g.outputs[0]], interp.run(g, {g.inputs[0]: x})[g.outputs[0]])
