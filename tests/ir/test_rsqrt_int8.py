"""int8 RSQRT (every TFLite int8 layer norm has one) against LiteRT BUILTIN_REF: LiteRT's
fixed-point 1/sqrt as a 256-entry table (reference.elementwise), over every valid input byte
for random and power-of-two scales and zero points; what LiteRT does with inputs at and below
the zero point; the .tflite reader and writer; the lowering (one table lookup) and its host
C; and PTQ of a TFLite-style layer norm, whose RSQRT now becomes int8."""

from __future__ import annotations

import numpy as np
import pytest

from litert_ref import run_reference
from support.c_harness import run_on_host
from support.lower_cases import run_lowered
from microcompile.frontend.tflite import load_tflite, write_tflite
from microcompile.ir import Graph, Node, QuantParams, Tensor, fixedpoint as fp, verify
from microcompile.lower import lower_node
from microcompile.reference import elementwise as qe, interp
from microcompile.tir import nodes as tir

ALL_BYTES = np.arange(-128, 128, dtype=np.int8)


def _graph(k: int, zp_in: int | None = None) -> Graph:
    """Set k: input scale 1e-4..3, output scale 1e-3..3 (power-of-two every fourth set),
    random zero points (the input's -128, as the converter gives a variance, every third)."""
    rng = np.random.default_rng([k, 7])
    s_in, s_out = 10 ** rng.uniform(-4, 0.5), 10 ** rng.uniform(-3, 0.5)
    if k % 4 == 3:
        s_in, s_out = 2.0 ** np.round(np.log2(s_in)), 2.0 ** np.round(np.log2(s_out))
    zi = int(rng.integers(-128, 128)) if zp_in is None else zp_in
    if zp_in is None and k % 3 == 0:
        zi = -128
    qi = QuantParams((float(np.float32(s_in)),), (zi,))
    qo = QuantParams((float(np.float32(s_out)),), (int(rng.integers(-128, 128)),))
    t = {"x": Tensor("x", (256,), "int8", qi), "y": Tensor("y", (256,), "int8", qo)}
    return verify(Graph(f"rsqrt_int8_{k}", t, (Node("rsqrt", "rsqrt", ("x",), ("y",)),), ("x",), ("y",)))


GRAPHS = [_graph(k) for k in range(48)]


def _valid_bytes(g: Graph) -> np.ndarray:
    """Every input byte LiteRT accepts (x >= zp_in), repeated to fill the 256 elements."""
    zp = g.tensors["x"].quant.zp
    return np.resize(ALL_BYTES[ALL_BYTES >= zp], 256).astype(np.int8)


def test_fixed_point_inverse_sqrt_is_within_2e_6_of_one_over_sqrt():
    v = np.concatenate([np.arange(2, 5000), np.array([1 << 27, (1 << 29) - 1, 1 << 29, (1 << 31) - 1])])
    mult, shift = fp.get_inv_sqrt_quantized_multiplier_exp(v, -1)
    approx = mult.astype(np.float64) * 2.0 ** (shift - 31)
    assert np.all(np.abs(approx * np.sqrt(v) - 1) < 2e-6)
    assert fp.get_inv_sqrt_quantized_multiplier_exp(np.array([0, 1]), -1)[0].tolist() == [fp.INT32_MAX] * 2


@pytest.mark.parametrize("g", GRAPHS, ids=lambda g: g.name)
def test_int8_rsqrt_equals_litert_on_every_valid_input(g):
    assert qe.uses_table(g, g.nodes[0])
    x = _valid_bytes(g)
    ref = run_reference(write_tflite(g), {"x": x})["y"]
    got = interp.run(g, {"x": x})["y"]
    bad = np.nonzero(got != ref)[0]
    assert bad.size == 0, f"inputs {x[bad]} give {got[bad]}, LiteRT {ref[bad]}"
    assert np.array_equal(run_lowered(g, lower_node(g, g.nodes[0]), {"x": x}), got)


def test_litert_fails_below_the_zero_point_and_the_table_holds_127_there_and_at_it():
    g = _graph(1, zp_in=-20)
    for x in (-21, -128):
        with pytest.raises(RuntimeError, match="Rsqrt is only defined for positive values"):
            run_reference(write_tflite(g), {"x": np.full(256, x, np.int8)})
    table = qe.int8_table(g, g.nodes[0])
    assert np.all(table[:128 - 20 + 1] == 127)          # inputs -128 .. -20 (the zero point)
    at_zp = run_reference(write_tflite(g), {"x": np.full(256, -20, np.int8)})["y"]
    assert np.all(at_zp == 127)                          # x = zp: LiteRT's "max output value"


def test_an_absurd_scale_ratio_is_refused():
    t = {"x": Tensor("x", (4,), "int8", QuantParams((4.0,), (-128,))),
         "y": Tensor("y", (4,), "int8", QuantParams((4096.0,), (0,)))}
    g = verify(Graph("g", t, (Node("rsqrt", "rsqrt", ("x",), ("y",)),), ("x",), ("y",)))
    with pytest.raises(fp.KernelParamsError, match="rsqrt"):
        qe.int8_table(g, g.nodes[0])


def test_the_reader_reads_what_the_writer_writes():
    for g in GRAPHS[:6]:
        back = load_tflite(write_tflite(g))
        (node,) = back.nodes
        assert node.op == "rsqrt"
        for a, b in zip((*node.inputs, *node.outputs), ("x", "y")):
            assert back.tensors[a].dtype == "int8" and back.tensors[a].quant.same_as(g.tensors[b].quant)
        assert np.array_equal(interp.run(back, {back.inputs[0]: ALL_BYTES})[back.outputs[0]],
                              interp.run(g, {"x": ALL_BYTES})["y"])


def test_int8_rsqrt_lowers_to_one_table_lookup():
    g = GRAPHS[0]
    f = lower_node(g, g.nodes[0])
    (table,) = [b for b in f.buffers if b.scope == "const"]
    assert table.shape == (256,)
    assert not any(isinstance(n, tir.Call) for n in tir.walk(f.body))
    # every byte, those below the zero point included
    assert np.array_equal(run_lowered(g, f, {"x": ALL_BYTES}), interp.run(g, {"x": ALL_BYTES})["y"])


def test_int8_rsqrt_host_c_equals_the_interpreter(tmp_path):
    """Random bytes over the whole range: the C table equals the interpreter below the zero
    point too."""
    for out, case in run_on_host(GRAPHS[:6], tmp_path):
        assert np.array_equal(out, interp.run(case.graph, case.inputs)["y"]), case.graph.name


def test_ptq_of_a_tflite_layer_norm_makes_rsqrt_int8_equal_to_litert_and_as_accurate():
    """mc.quantize quantizes RSQRT to int8 (its calibrated output range); the int8 model equals
    LiteRT, and its SQNR against the float model is within 1 dB of keeping RSQRT float."""
    from support import row_group_models as m
    from microcompile.quantization.report import sqnr

    fg = m.layer_norm_tflite((1, 6, 16), 4)
    q_int8, q_float = m.int8(fg), m.int8(fg, keep_float=("rsqrt",))
    (node,) = [n for n in q_int8.nodes if n.op == "rsqrt"]
    assert q_int8.tensors[node.inputs[0]].dtype == q_int8.tensors[node.outputs[0]].dtype == "int8"
    assert q_int8.tensors[node.inputs[0]].quant.zp == -128           # a variance: non-negative
    assert not any(n.op in ("quantize", "dequantize") for n in q_int8.nodes)
    model = write_tflite(q_int8)
    got, want, got_float = [], [], []
    def run(q: Graph, sample: dict) -> tuple[np.ndarray, np.ndarray]:
        qx, qy = q.tensors[q.inputs[0]].quant, q.tensors[q.outputs[0]].quant
        x = {q.inputs[0]: np.clip(np.round(sample["x"] / qx.s) + qx.zp, -128, 127).astype(np.int8)}
        y = interp.run(q, x)[q.outputs[0]]
        return x, (y.astype(np.float64) - qy.zp) * qy.s

    for sample in m.samples(fg, 8, 1):
        x, y = run(q_int8, sample)
        ref = run_reference(model, x)[q_int8.outputs[0]]
        assert np.array_equal(interp.run(q_int8, x)[q_int8.outputs[0]], ref)
        got.append(y)
        got_float.append(run(q_float, sample)[1])
        want.append(interp.run(fg, sample)[fg.outputs[0]])
    want = np.concatenate([w.ravel() for w in want])
    int8_db = sqnr(want, np.concatenate([v.ravel() for v in got]))
    float_db = sqnr(want, np.concatenate([v.ravel() for v in got_float]))
    assert int8_db >= float_db - 1.0, (int8_db, float_db)


def test_an_int16_rsqrt_model_is_refused_by_the_reader():
    """LiteRT's int16 RSQRT is an interpolated 513-entry table, not supported here."""
    from microcompile.errors import UnsupportedOpError
    t = {"x": Tensor("x", (4,), "int16", QuantParams((0.001,), (0,))),
         "y": Tensor("y", (4,), "int16", QuantParams((0.01,), (0,)))}
    g = Graph("rsqrt16", t, (Node("rsqrt", "rsqrt", ("x",), ("y",)),), ("x",), ("y",))
    with pytest.raises(UnsupportedOpError, match="RSQRT"):
        load_tflite(write_tflite(g))


def test_a_ptq_int8_tflite_layer_norm_runs_in_host_c_as_the_interpreter(tmp_path):
    from support import row_group_models as m
    q = m.int8(m.layer_norm_tflite((2, 5, 24), 6))
    assert any(n.op == "rsqrt" and q.tensors[n.outputs[0]].dtype == "int8" for n in q.nodes)
    for out, case in run_on_host([q], tmp_path, seed=3):
        assert np.array_equal(out, interp.run(case.graph, case.inputs)[q.outputs[0]])
