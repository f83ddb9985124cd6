"""TRANSPOSE_CONV whose output_shape operand is a model input (TFLite Micro's seanet
integration models): the kernel runs from the output tensor's stored shape, as TFLM does, and
the shape input is read by nothing. Built from our own 16x8 and int8 transpose convolutions
with the operand turned into a model input; TFLM's interpreter is the oracle (it is what
runs such models), then the C on the host and on the M4's QEMU twin."""

from __future__ import annotations

import numpy as np
import pytest

import microcompile as mc
from support.op_cases import build_graph, cases, random_inputs
from tflm_ref import run_tflm
from microcompile.errors import UnsupportedOpError
from microcompile.frontend.tflite import load_tflite
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, Tensor, verify
from microcompile.reference import interp


def _with_shape_input(g: Graph) -> Graph:
    """`g` (one transpose_conv2d) with its output shape taken from a new int32 [4] model input."""
    n = g.nodes[0]
    shape = Tensor("out_shape", (4,), "int32")
    node = n.replace(attrs=dict(n.attrs, output_shape_input="out_shape"))
    return verify(g.replace(tensors={**g.tensors, "out_shape": shape}, nodes=(node,),
                            inputs=("out_shape", *g.inputs)))


GRAPHS = [_with_shape_input(build_graph(c)) for dtype in ("int16", "int8") for c in cases("transpose_conv2d", dtype, 3)]


@pytest.mark.parametrize("g", GRAPHS, ids=lambda g: g.name)
def test_tflm_runs_what_the_reader_reads(g):
    model = write_tflite(g)
    back = load_tflite(model)
    assert back.inputs[0] == "out_shape" and back.nodes[0].attrs["output_shape_input"] == "out_shape"
    assert any("read by nothing" in note for note in back.notes)
    ins = random_inputs(back, 3)
    ins["out_shape"] = np.array(g.tensors[g.outputs[0]].shape, np.int32)
    want = run_tflm(model, [ins[i] for i in back.inputs])[0]
    assert np.array_equal(interp.run(back, ins)[back.outputs[0]], want)


@pytest.mark.qemu
def test_the_host_and_the_m4_run_it(tmp_path):
    g = GRAPHS[0]
    ins = random_inputs(g, 5)
    ins["out_shape"] = np.zeros(4, np.int32)      # read by nothing: any value gives the same output
    want = interp.run(g, ins)[g.outputs[0]]
    for board in ("host", "mps2-an386"):
        cm = mc.compile(write_tflite(g), board)
        r = cm.deploy(tmp_path / board, inputs=[ins[i] for i in g.inputs], emulate=board != "host")
        assert r.verified and np.array_equal(r.outputs[cm.graph.outputs[0]], want)


def test_a_constant_shape_reads_as_before():
    plain = load_tflite(write_tflite(build_graph(cases("transpose_conv2d", "int8", 1)[0])))
    assert not plain.nodes[0].attrs.get("output_shape_input")
    assert not any("read by nothing" in note for note in plain.notes)


def test_a_shape_an_op_computes_is_still_refused():
    """Only a model input may stand for the shape: one computed by an op (SHAPE of another
    input here) is refused, naming the operand."""
    g = build_graph(cases("transpose_conv2d", "int8", 1)[0])
    n = g.nodes[0]
    out = g.tensors[g.outputs[0]]
    like = Tensor("like", out.shape, "int8", quant=out.quant)
    shape = Tensor("out_shape", (4,), "int32")
    nodes = (Node("shape", "shape_of", ("like",), ("out_shape",), {}),
             n.replace(attrs=dict(n.attrs, output_shape_input="out_shape")))
    computed = verify(g.replace(tensors={**g.tensors, "like": like, "out_shape": shape}, nodes=nodes,
                                inputs=("like", *g.inputs), outputs=(*g.outputs, "out_shape")))
    with pytest.raises(UnsupportedOpError, match="non-constant output_shape"):
        load_tflite(write_tflite(computed))
