"""The 256-entry tables of the pure unary int8 ops (reference.elementwise.int8_table) against
LiteRT BUILTIN_REF over every possible input byte, for random and power-of-two scales.

The per-op plans feed random inputs; here each table entry is checked, so a table that is
wrong for a single input value fails.
"""

from __future__ import annotations

import numpy as np
import pytest

from litert_ref import run_reference
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, QuantParams, Tensor, verify
from microcompile.reference import interp
from microcompile.reference import elementwise as qe

# op -> fixed output quantization (LiteRT requires it), or None for a random one.
TABLE_OPS = {"leaky_relu": None, "logistic": ((1 / 256,), (-128,)), "tanh": ((1 / 128,), (0,)),
             "hard_swish": None, "abs": None, "quantize": None, "dequantize": None}
PARAM_SETS = 20


def _quant(rng, pot: bool) -> QuantParams:
    scale = 10 ** rng.uniform(-2.7, -0.3)
    if pot:
        scale = 2.0 ** np.round(np.log2(scale))
    return QuantParams((float(np.float32(scale)),), (int(rng.integers(-128, 128)),))


def _graph(op: str, k: int) -> Graph:
    rng = np.random.default_rng([k, len(op)])
    qi = _quant(rng, pot=k % 4 == 3)
    fixed = TABLE_OPS[op]
    qo = QuantParams(*fixed) if fixed else _quant(rng, pot=k % 4 == 3)
    out = (Tensor("out", (256,), "float32") if op == "dequantize" else Tensor("out", (256,), "int8", qo))
    attrs = {"alpha": float(np.float32(rng.choice([0.01, 0.2, 0.5, 0.99, 1.3])))} if op == "leaky_relu" else {}
    node = Node(op, op, ("x",), ("out",), attrs)
    return verify(Graph(f"{op}{k}", {"x": Tensor("x", (256,), "int8", qi), "out": out}, (node,), ("x",), ("out",)))


@pytest.mark.parametrize("op", sorted(TABLE_OPS))
def test_table_matches_litert_on_every_input(op):
    x = {"x": np.arange(-128, 128, dtype=np.int8)}
    for k in range(PARAM_SETS):
        g = _graph(op, k)
        assert qe.uses_table(g, g.nodes[0])
        ref = run_reference(write_tflite(g), x)["out"]
        got = interp.run(g, x)["out"]
        if got.dtype == np.float32:
            np.testing.assert_array_equal(got, ref)   # one float32 product: exact
        else:
            bad = np.nonzero(got != ref)[0]
            assert bad.size == 0, f"{op} set {k}: inputs {bad - 128} give {got[bad]}, LiteRT {ref[bad]}"
