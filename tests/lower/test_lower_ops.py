"""Every op family lowers to a verified PrimFunc that computes what the numpy interpreter
computes (int8 bit-exact, float32 rtol 1e-5), run through the loop-IR interpreter."""

from __future__ import annotations

import pytest

from support.lower_cases import (FLOAT_ONLY_OPS, FUSED_OPS, KERNEL_OPS, PLAIN_INT_OPS, build_graph, cases, hybrid_conv_graph, matches, random_inputs, reference,
                         run_lowered)
from support.op_cases import PLANS16
from microcompile.errors import UnsupportedOpError
from microcompile.ir import Graph, Node, Tensor, ops
from microcompile.tir import nodes as tir
from microcompile.lower import LOWERINGS, lower_graph, lower_node, needs_kernel

CASES = [c for op in KERNEL_OPS for dt in ("int8", "float32") for c in cases(op, dt, 6, seed=11)]
# 16x8: every int16 variant, for the portable target (None) and a DSP core (the micro-kernels'
# Python semantics; the C of both variants runs in test_ops_host_vs_litert and QEMU).
CASES16 = [c for op in PLANS16 if not ops.get(op).is_view for c in cases(op, "int16", 4, seed=11)]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['op']}-{c['dtype']}-{c['index']}")
def test_lowering_matches_interpreter(case):
    g = build_graph(case)
    f = lower_node(g, g.nodes[0])
    ins = random_inputs(g, case["seed"])
    assert matches(run_lowered(g, f, ins), reference(g, ins))


@pytest.mark.parametrize("dsp", [False, True])
@pytest.mark.parametrize("case", CASES16, ids=lambda c: f"{c['op']}-int16-{c['index']}")
def test_int16_lowering_matches_interpreter(case, dsp):
    from microcompile.target import load_board
    g = build_graph(case)
    f = lower_node(g, g.nodes[0], load_board("mps2-an386").target if dsp else None)
    ins = random_inputs(g, case["seed"])
    assert matches(run_lowered(g, f, ins), reference(g, ins))


@pytest.mark.parametrize("padding", ["SAME", "VALID"])
def test_hybrid_conv2d_matches_interpreter(padding):
    g = hybrid_conv_graph(seed=2, padding=padding)
    f = lower_node(g, g.nodes[0])
    assert f.scratch_bytes == 2 * 5 * 6 * 3 + 12     # the quantized input, 16-byte aligned
    ins = random_inputs(g, 5)
    ins["x"][1] = 0                                   # an all-zero batch: range 0 is special
    assert matches(run_lowered(g, f, ins), reference(g, ins))


def test_registry_covers_every_kernel_op():
    assert {k for k in LOWERINGS if isinstance(k, str)} == set(KERNEL_OPS) | set(FLOAT_ONLY_OPS) | set(PLAIN_INT_OPS) \
        | set(FUSED_OPS)
    # int16 variants: every 16x8 op that computes (the byte movers share int8's lowering)
    movers = {"concatenation", "pad", "strided_slice", "reshape", "transpose", "squeeze", "expand_dims", "split",
              "split_v", "slice", "pack", "unpack", "gather"}
    assert {op for op, _ in (k for k in LOWERINGS if isinstance(k, tuple))} == set(PLANS16) - movers


def test_reshape_is_a_view():
    g = build_graph(cases("reshape", "int8", 1)[0])
    assert not needs_kernel(g.nodes[0]) and lower_graph(g) == []


def test_unpadded_int8_conv_has_no_bounds_check_and_folded_zero_point():
    case = dict(cases("conv2d", "int8", 1)[0], padding="VALID", hw=8, kernel=3, dilation=1)
    g = build_graph(case)
    f = lower_node(g, g.nodes[0])
    assert not any(isinstance(n, (tir.Select, tir.IfThenElse)) for n in tir.walk(f.body))
    # the zero point lives in the bias constant, not in the inner loop
    assert not any(isinstance(n, tir.BinOp) and n.op == "sub" and isinstance(n.a, tir.Cast)
                   for n in tir.walk(f.body))


def test_unsupported_op_is_a_user_error():
    g = Graph("g", {"x": Tensor("x", (1,), "float32")}, (), ("x",), ("x",))
    with pytest.raises(UnsupportedOpError, match="no lowering"):
        lower_node(g, Node("no_such_op", "mp", ("x",), ("y",)))
