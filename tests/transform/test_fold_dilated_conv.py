"""fold_dilated_conv: the converter's SPACE_TO_BATCH_ND -> conv -> BATCH_TO_SPACE_ND sandwich
becomes one dilated convolution, bit-exact against LiteRT running the sandwich.

Cases (declarative, seeded): conv2d / depthwise, int8 / float32, SAME / VALID, dilation 2..3,
odd sizes that need the converter's extra padding and crops.
"""

import pathlib
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent

from support.c_harness import run_on_host  # noqa: E402
from litert_ref import run_reference  # noqa: E402
from support.op_cases import _Builder, random_inputs  # noqa: E402

from microcompile.frontend.tflite.reader import load_tflite  # noqa: E402
from microcompile.frontend.tflite.writer import write_tflite  # noqa: E402
from microcompile.ir import Graph, Node, ops, verify
from microcompile.reference import interp  # noqa: E402
from microcompile.ir.compare import compare  # noqa: E402
from microcompile.transform import pipeline  # noqa: E402
from microcompile.transform.fold_dilated_conv import FoldDilatedConv  # noqa: E402

CASES = [dict(op=op, dtype=dt, hw=hw, k=k, d=d, padding=pad, c=c, seed=i)
         for i, (op, dt, hw, k, d, pad, c) in enumerate([
             ("conv2d", "int8", (9, 9), 3, 2, "SAME", 3), ("conv2d", "int8", (7, 10), 3, 3, "SAME", 4),
             ("conv2d", "int8", (12, 12), 2, 2, "VALID", 2), ("conv2d", "int8", (5, 8), 3, 2, "SAME", 1),
             ("depthwise_conv2d", "int8", (10, 9), 3, 2, "SAME", 4),
             ("depthwise_conv2d", "int8", (11, 11), 5, 2, "VALID", 3),
             ("conv2d", "float32", (9, 7), 3, 2, "SAME", 3), ("conv2d", "float32", (12, 12), 3, 4, "VALID", 2),
             ("depthwise_conv2d", "float32", (8, 8), 3, 3, "SAME", 5)])]


def sandwich(case) -> Graph:
    """What the TFLite converter emits for a dilated conv (tf.nn.atrous_conv2d's padding rule)."""
    b = _Builder(dict(case))
    d, k = case["d"], case["k"]
    h, w = case["hw"]
    x = b.act("x", (1, h, w, case["c"]))
    pads, crops = [], []
    for size in (h, w):
        lo, hi = ops.same_padding(size, k, 1, d) if case["padding"] == "SAME" else (0, 0)
        extra = (d - (size + lo + hi) % d) % d   # the phases need a padded size divisible by d
        pads.append((lo, hi + extra))
        crops.append((0, extra))
    ph, pw = (h + sum(pads[0])) // d, (w + sum(pads[1])) // d
    xq = b.tensors[x].quant
    b.act("s2b", (d * d, ph, pw, case["c"]), xq)
    if case["op"] == "conv2d":
        cout, wt = 4, b.weights("w", (4, k, k, case["c"]), 4, True, 0)
        attrs = dict(ops.get("conv2d").attrs)
    else:
        cout, wt = case["c"], b.weights("w", (1, k, k, case["c"]), case["c"], True, 3)
        attrs = dict(ops.get("depthwise_conv2d").attrs)
    bias = b.bias("b", cout, x, wt)
    yq = b.output_quant(None, x, wt)
    b.act("conv", (d * d, ph - k + 1, pw - k + 1, cout), yq)
    out_h, out_w = (ph - k + 1) * d - crops[0][1], (pw - k + 1) * d - crops[1][1]
    b.act("y", (1, out_h, out_w, cout), b.tensors["conv"].quant)
    nodes = (Node("space_to_batch_nd", "s2b", (x,), ("s2b",), {"block_shape": (d, d), "paddings": tuple(pads)}),
             Node(case["op"], "conv", ("s2b", wt, bias), ("conv",), attrs),
             Node("batch_to_space_nd", "b2s", ("conv",), ("y",), {"block_shape": (d, d), "crops": tuple(crops)}))
    return verify(Graph(f"dilated{case['seed']}", b.tensors, nodes, (x,), ("y",)))


def test_rewrite_before_after():
    g = load_tflite(write_tflite(sandwich(CASES[0])))
    assert [n.op for n in g.nodes] == ["space_to_batch_nd", "conv2d", "batch_to_space_nd"]
    after = verify(FoldDilatedConv()(g))
    (conv,) = after.nodes
    assert conv.op == "conv2d" and conv.attrs["dilation"] == (2, 2) and conv.attrs["padding"] == (2, 2, 2, 2)
    assert conv.inputs[0] == g.inputs[0] and conv.outputs == g.outputs
    assert len(conv.origin) == 3   # it stands for the three source layers


def test_left_alone_when_conv_output_is_used_twice():
    g = sandwich(CASES[0])
    extra = Node("relu", "tap", ("conv",), ("tap",), {})
    g = verify(g.replace(nodes=g.nodes + (extra,), outputs=("y", "tap"),
                         tensors=dict(g.tensors, tap=g.tensors["conv"].replace(name="tap"))))
    assert [n.op for n in FoldDilatedConv()(g).nodes] == [n.op for n in g.nodes]


@pytest.mark.heavy
def test_rewrite_is_bit_exact_against_litert(tmp_path):
    models = [write_tflite(sandwich(c)) for c in CASES]
    graphs = [pipeline.run(load_tflite(m, name=f"d{k}")) for k, m in enumerate(models)]
    assert all([n.op for n in g.nodes] == [c["op"]] for g, c in zip(graphs, CASES))
    failures = []
    for (out, host), model, c, g in zip(run_on_host(graphs, tmp_path, seed=3), models, CASES, graphs):
        ref = run_reference(model, host.inputs)["y"]
        original = load_tflite(model)   # the sandwich itself, through the interpreter
        for label, got in (("host C", out), ("interp, folded", interp.run(g, host.inputs)["y"]),
                           ("interp, sandwich", interp.run(original, host.inputs)["y"])):
            result = compare(got, ref)
            if not result.equal:
                failures.append(f"{c} {label}: {result}")
    assert not failures, "\n".join(failures)


def test_random_inputs_cover_both_graph_forms():
    # The interpreter runs the unfolded sandwich too (space_to_batch_nd / batch_to_space_nd kernels).
    g = sandwich(CASES[-1])
    ins = random_inputs(g, 0)
    ref = interp.run(g, ins)["y"]
    assert compare(interp.run(FoldDilatedConv()(g), ins)["y"], ref).equal
