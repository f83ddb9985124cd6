"""Reader specifics of the shape / data-movement family (round trips of every op are in
tests/ir/test_interp_ops.py and tests/e2e/test_ops_host_vs_litert.py via op_cases_shape)."""

import pathlib
import sys

import numpy as np
import pytest


from litert_ref import run_reference  # noqa: E402

from microcompile.errors import UnsupportedOpError  # noqa: E402
from microcompile.frontend.tflite.reader import load_tflite  # noqa: E402
from microcompile.frontend.tflite.writer import write_tflite  # noqa: E402
from microcompile.ir import Graph, Node, QuantParams, Tensor
from microcompile.reference import interp  # noqa: E402


def _q(s, zp):
    return QuantParams((s,), (zp,))


def test_split_v_minus_one_size_takes_the_rest():
    t = {"x": Tensor("x", (2, 7), "float32"), "a": Tensor("a", (2, 2), "float32"),
         "b": Tensor("b", (2, 5), "float32")}
    # Written unverified on purpose: TFLite's -1 ("the rest") never appears in our IR.
    g = Graph("g", t, (Node("split_v", "s", ("x",), ("a", "b"), {"axis": 1, "sizes": (2, -1)}),), ("x",), ("a", "b"))
    model = write_tflite(g)
    read = load_tflite(model)
    assert read.nodes[0].attrs == {"axis": 1, "sizes": (2, 5)}
    x = np.arange(14, dtype=np.float32).reshape(2, 7)
    ref, got = run_reference(model, {"x": x}), interp.run(read, {"x": x})
    for name in ("a", "b"):
        np.testing.assert_array_equal(got[name], ref[name])


def test_requantizing_joins_are_all_reported_at_once():
    """LiteRT refuses int8 CONCATENATION/PACK whose inputs differ from the output's
    quantization; the reader names every such layer in one error."""
    t = {"a": Tensor("a", (1, 3), "int8", _q(0.1, 0)), "b": Tensor("b", (1, 3), "int8", _q(0.2, 1)),
         "cat": Tensor("cat", (1, 6), "int8", _q(0.1, 0)), "packed": Tensor("packed", (2, 1, 3), "int8", _q(0.1, 0))}
    g = Graph("g", t, (Node("concatenation", "c", ("a", "b"), ("cat",), {"axis": 1}),
                       Node("pack", "p", ("a", "b"), ("packed",), {"axis": 0})), ("a", "b"), ("cat", "packed"))
    with pytest.raises(UnsupportedOpError) as e:
        load_tflite(write_tflite(g))
    msg = str(e.value)
    assert "2 unsupported" in msg and "CONCATENATION" in msg and "PACK" in msg and "layer 1" in msg


def test_multi_output_node_feeds_later_nodes():
    """unpack -> concatenation of its outputs in reverse: multi-output nodes in the middle."""
    t = {"x": Tensor("x", (3, 4), "float32"), "y": Tensor("y", (12,), "float32")}
    t.update({f"u{k}": Tensor(f"u{k}", (4,), "float32") for k in range(3)})
    g = Graph("g", t, (Node("unpack", "u", ("x",), ("u0", "u1", "u2"), {"axis": 0}),
                       Node("concatenation", "c", ("u2", "u1", "u0"), ("y",), {"axis": 0})), ("x",), ("y",))
    model = write_tflite(g)
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    np.testing.assert_array_equal(interp.run(load_tflite(model), {"x": x})["y"], run_reference(model, {"x": x})["y"])
