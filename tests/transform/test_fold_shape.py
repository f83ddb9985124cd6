"""fold_shape (+ fold_constants, remove_dead): the converter's Flatten-with-dynamic-batch chain
SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE folds away, and the model still equals LiteRT."""

import pathlib
import sys

import dataclasses

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent

from litert_ref import run_reference  # noqa: E402
from support.op_cases import _Builder, random_inputs  # noqa: E402

from microcompile.frontend.tflite import writer as tflite_writer  # noqa: E402
from microcompile.frontend.tflite.reader import load_tflite  # noqa: E402
from microcompile.ir import Graph, Node, Tensor, verify
from microcompile.ir.compare import compare
from microcompile.reference import interp  # noqa: E402
from microcompile.transform import pipeline  # noqa: E402
from microcompile.transform.fold_constants import FoldConstants  # noqa: E402
from microcompile.transform.fold_shape import FoldShape  # noqa: E402

_SLICE = {"begin": (0,), "end": (1,), "strides": (1,), "begin_mask": 0, "end_mask": 0, "ellipsis_mask": 0,
          "new_axis_mask": 0, "shrink_axis_mask": 1, "offset": False}


def flatten_model(dtype: str) -> bytes:
    """x[1,4,4,3] -> Flatten as the converter writes it (RESHAPE's shape computed at run time)
    -> FULLY_CONNECTED."""
    b = _Builder({"dtype": dtype, "seed": 7})
    x = b.act("x", (1, 4, 4, 3))
    q = b.tensors[x].quant
    b.act("flat", (1, 48), q)
    w = b.weights("w", (5, 48), 5, False, 0)
    bias = b.bias("b", 5, x, w)
    b.act("y", (1, 5), b.output_quant(None, x, w))
    b.tensors.update({
        "shape": Tensor("shape", (4,), "int32"), "batch": Tensor("batch", (), "int32"),
        "minus1": Tensor("minus1", (), "int32", data=np.array(-1, np.int32)),
        "new_shape": Tensor("new_shape", (2,), "int32")})
    nodes = (Node("shape", "shape", (x,), ("shape",)),
             Node("strided_slice", "batch", ("shape",), ("batch",), dict(_SLICE)),
             Node("pack", "pack", ("batch", "minus1"), ("new_shape",), {"axis": 0}),
             Node("reshape", "flatten", (x, "new_shape"), ("flat",), {"shape": (1, 48)}),
             Node("fully_connected", "fc", ("flat", w, bias), ("y",), {"activation": "NONE", "keep_num_dims": False}))
    g = Graph("flatten", b.tensors, nodes, (x,), ("y",))
    # Our RESHAPE has one input; write the converter's form, whose shape operand is the PACK.
    with pytest.MonkeyPatch.context() as mp:
        entry = tflite_writer.WRITERS["reshape"]
        mp.setitem(tflite_writer.WRITERS, "reshape", dataclasses.replace(entry, inputs=None))
        return tflite_writer.write_tflite(g)


@pytest.mark.parametrize("dtype", ["int8", "float32"])
def test_flatten_chain_folds_and_matches_litert(dtype):
    model = flatten_model(dtype)
    g = load_tflite(model)
    assert [n.op for n in g.nodes] == ["shape", "strided_slice", "pack", "reshape", "fully_connected"]
    folded = verify(FoldConstants()(verify(FoldShape()(g))))
    assert [n.op for n in folded.nodes] == ["reshape", "fully_connected"]
    assert folded.tensors["new_shape"].data.tolist() == [1, -1]   # PACK(STRIDED_SLICE(SHAPE(x)), -1)
    final = pipeline.run(g)
    assert [n.op for n in final.nodes] == ["reshape", "fully_connected"] and "new_shape" not in final.tensors
    ins = random_inputs(g, 1)
    ref = run_reference(model, ins)["y"]
    for graph in (g, final):
        got = interp.run(graph, ins)["y"]
        c = compare(got, ref)     # int8 byte-equal, float32 within 1e-5
        assert c.equal, str(c)


def test_new_ops_fold_when_all_inputs_are_constant():
    data = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = {"c": Tensor("c", (2, 3, 4), "float32", data=data), "ct": Tensor("ct", (4, 2, 3), "float32"),
         "x": Tensor("x", (4, 2, 3), "float32"), "y": Tensor("y", (8, 2, 3), "float32")}
    nodes = (Node("transpose", "t", ("c",), ("ct",), {"perm": (2, 0, 1)}),
             Node("concatenation", "cat", ("ct", "x"), ("y",), {"axis": 0}))
    g = verify(Graph("g", t, nodes, ("x",), ("y",)))
    folded = verify(FoldConstants()(g))
    assert [n.op for n in folded.nodes] == ["concatenation"]
    np.testing.assert_array_equal(folded.tensors["ct"].data, data.transpose(2, 0, 1))
