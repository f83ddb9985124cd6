"""16x8 details the random op plans cannot pin down: TFLite's sigmoid table (measured
again through LiteRT), int16 logistic / tanh over every one of the 65536 inputs, and the
int64 requantization's rounding."""

from __future__ import annotations

import numpy as np
import pytest

from litert_ref import run_reference
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, QuantParams, Tensor, fixedpoint as fp, fixedpoint16 as fp16, verify
from microcompile.reference import interp

ALL_INT16 = np.arange(-32768, 32768, dtype=np.int16)


def _unary(op: str, in_scale: float, out_scale: float = 1 / 32768) -> Graph:
    t = {"x": Tensor("x", (ALL_INT16.size,), "int16", QuantParams((float(np.float32(in_scale)),), (0,))),
         "y": Tensor("y", (ALL_INT16.size,), "int16", QuantParams((out_scale,), (0,)))}
    return verify(Graph(op, t, (Node(op, op, ("x",), ("y",)),), ("x",), ("y",)))


def test_sigmoid_table_is_litert_s():
    """tanh with input scale 4/3 * 2^-13 feeds the table index k exactly at x = 128 k (no
    interpolation), so each output is table[k] - 32768; the last entry shows as the slope."""
    g = _unary("tanh", 4.0 / 3.0 / 2 ** 13)
    y = run_reference(write_tflite(g), {"x": ALL_INT16})["y"].astype(np.int64)[32768:]
    measured = [int(y[128 * k]) + 32768 for k in range(255)]
    measured.append(measured[254] + int(y[128 * 254 + 127]) - int(y[128 * 254]))
    assert measured == fp16.SIGMOID_TABLE.tolist()


@pytest.mark.parametrize("op", ["logistic", "tanh"])
@pytest.mark.parametrize("in_scale", [2 ** -12, 2 ** -13, 2 ** -10, 3.1e-4, 1.7e-3, 9e-5])
def test_logistic_and_tanh_match_litert_on_every_input(op, in_scale):
    g = _unary(op, in_scale)
    ref = run_reference(write_tflite(g), {"x": ALL_INT16})["y"]
    assert np.array_equal(interp.run(g, {"x": ALL_INT16})["y"], ref)


def test_int64_requantization_rounds_once_ties_up():
    # multiplier 2^30 (0.5) reduces to 2^14: x * 2^14 >> 15 = x / 2, ties toward +inf.
    got = fp.multiply_by_quantized_multiplier_int64(np.array([3, -3, 5, -5]), 1 << 30, 0)
    assert got.tolist() == [2, -1, 3, -2]
    # accumulators beyond int32 (16x8 sums) keep their precision: 2^40 * 0.5 * 2^-10 = 2^29
    assert int(fp.multiply_by_quantized_multiplier_int64(2**40, 1 << 30, -10)) == 2**29
    # the 31-bit multiplier is rounded to 15 bits first: 0x7FFF0000 and above saturate
    assert fp.reduced_multiplier(np.array([(1 << 30) + (1 << 15), 0x7FFF0000, 0x7FFFFFFF])).tolist() == \
        [(1 << 14) + 1, 0x7FFF, 0x7FFF]


def test_every_int16_op_has_a_plan_and_nothing_else_claims_int16():
    """The OpDef trait the reader and PTQ trust is exactly the set the 16x8 plans test."""
    from support.op_cases import PLANS16
    from microcompile.ir import ops

    assert {n for n, o in ops.REGISTRY.items() if o.int16} == set(PLANS16)


def test_an_int16_op_without_a_16x8_kernel_is_refused():
    from microcompile.errors import UnsupportedOpError
    from microcompile.frontend.tflite.reader import load_tflite

    t = {"x": Tensor("x", (1, 4, 4, 2), "int16", QuantParams((0.01,), (0,))),
         "y": Tensor("y", (1, 2, 2, 2), "int16", QuantParams((0.01,), (0,)))}
    g = verify(Graph("pool16", t, (Node("max_pool2d", "pool", ("x",), ("y",), {"filter": (2, 2), "stride": (2, 2), "padding": (0, 0, 0, 0)}),),
                     ("x",), ("y",)))
    with pytest.raises(UnsupportedOpError, match="MAX_POOL_2D with 16-bit activations"):
        load_tflite(write_tflite(g))
