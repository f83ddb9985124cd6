"""The int8 unary ops of the elementwise family lower to one table lookup per element: a
256-entry constant and no arithmetic helper calls in the loop (reference.elementwise.int8_table
holds the reference arithmetic; tests/ir/test_elementwise_tables.py checks it over all
inputs against LiteRT)."""

from __future__ import annotations

import numpy as np
import pytest

from support.lower_cases import build_graph, cases, random_inputs, reference, run_lowered
from microcompile.tir import nodes as tir
from microcompile.lower import lower_node

TABLE_OPS = ("leaky_relu", "logistic", "tanh", "hard_swish", "abs", "quantize", "dequantize")


@pytest.mark.parametrize("op", TABLE_OPS)
def test_int8_unary_op_is_one_table_lookup(op):
    g = build_graph(cases(op, "int8", 1, seed=3)[0])
    f = lower_node(g, g.nodes[0])
    (table,) = [b for b in f.buffers if b.scope == "const"]
    assert table.shape == (256,)
    assert not any(isinstance(n, tir.Call) for n in tir.walk(f.body))
    ins = random_inputs(g, 1)
    np.testing.assert_array_equal(run_lowered(g, f, ins), reference(g, ins))


def test_float_quantize_has_no_table():
    g = build_graph(cases("quantize", "float32", 1, seed=3)[0])
    f = lower_node(g, g.nodes[0])
    assert not [b for b in f.buffers if b.scope == "const"]
    assert any(isinstance(n, tir.Call) and n.name == "roundf" for n in tir.walk(f.body))
