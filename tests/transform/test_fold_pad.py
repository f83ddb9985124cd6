"""fold_pad: an explicit PAD before a convolution or a max pool becomes the consumer's padding,
bit-exact against LiteRT running the PAD and the consumer as written.

Cases (declarative, seeded): conv2d / depthwise (int8, float32) after PAD, a max pool after
PADV2 with the lowest value, asymmetric pads added to the consumer's own padding; and the
PADs that must stay (an average pool, a non-zero fill, a padded channel axis, a graph output).
"""

import pathlib
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent

from support.c_harness import run_on_host  # noqa: E402
from litert_ref import run_reference  # noqa: E402
from support.op_cases import _Builder, random_inputs  # noqa: E402

from microcompile.frontend.tflite.writer import write_tflite  # noqa: E402
from microcompile.ir import Graph, Node, ops, verify  # noqa: E402
from microcompile.ir.compare import compare  # noqa: E402
from microcompile.reference import interp  # noqa: E402
from microcompile.transform.fold_pad import FoldPad  # noqa: E402

CASES = [dict(op=op, dtype=dt, pads=pads, own=own, seed=i) for i, (op, dt, pads, own) in enumerate([
    ("conv2d", "int8", ((1, 1), (1, 1)), "VALID"), ("conv2d", "int8", ((0, 1), (2, 0)), "SAME"),
    ("depthwise_conv2d", "int8", ((1, 1), (1, 1)), "VALID"), ("depthwise_conv2d", "int8", ((0, 1), (0, 1)), "VALID"),
    ("conv2d", "float32", ((2, 1), (1, 2)), "VALID"), ("depthwise_conv2d", "float32", ((1, 0), (1, 1)), "SAME"),
    ("max_pool2d", "int8", ((1, 1), (0, 1)), "VALID"), ("max_pool2d", "float32", ((1, 0), (1, 1)), "VALID")])]


def padded(case, consumer=None, value=None, channel_pad=0) -> Graph:
    """PAD (PADV2 when `value` is given) then the case's op, as a converter writes them."""
    b = _Builder(dict(case))
    (pt, pb), (pl, pr) = case["pads"]
    h, w, c = 6, 7, 3
    x = b.act("x", (1, h, w, c))
    xq = b.tensors[x].quant
    ph, pw = h + pt + pb, w + pl + pr
    b.act("p", (1, ph, pw, c + channel_pad), xq)
    op = consumer or case["op"]
    k, s = 3, (1, 1) if case["seed"] % 2 else (2, 1)
    hw = (ph, pw)
    if case["own"] == "SAME":
        (t0, b0), (l0, r0) = (ops.same_padding(hw[i], k, s[i], 1) for i in (0, 1))
        own = (t0, l0, b0, r0)
    else:
        own = (0, 0, 0, 0)
    oh, ow = ((hw[i] + own[i] + own[i + 2] - k) // s[i] + 1 for i in (0, 1))
    attrs = dict(ops.get(op).attrs, stride=s, padding=own)
    if op in ("max_pool2d", "average_pool2d"):
        inputs, cout = ("p",), c + channel_pad
        attrs["filter"] = (k, k)
        yq = xq
    elif op == "conv2d":
        wt = b.weights("w", (4, k, k, c + channel_pad), 4, True, 0)
        inputs, cout = ("p", wt, b.bias("bias", 4, x, wt)), 4
        yq = b.output_quant(None, x, wt)
    else:
        wt = b.weights("w", (1, k, k, c + channel_pad), c + channel_pad, True, 3)
        inputs, cout = ("p", wt, b.bias("bias", c + channel_pad, x, wt)), c + channel_pad
        yq = b.output_quant(None, x, wt)
    b.act("y", (1, oh, ow, cout), yq)
    pads = ((0, 0), (pt, pb), (pl, pr), (0, channel_pad))
    pad = (Node("pad_v2", "pad", (x,), ("p",), {"pads": pads, "value": value}) if value is not None
           else Node("pad", "pad", (x,), ("p",), {"pads": pads}))
    return verify(Graph(f"padded{case['seed']}", b.tensors, (pad, Node(op, "op", inputs, ("y",), attrs)), (x,), ("y",)))


def _lowest(case):
    return -128 if case["dtype"] == "int8" else float("-inf")


def _graph(case) -> Graph:
    return padded(case, value=_lowest(case) if case["op"] == "max_pool2d" else None)


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c['op']}-{c['dtype']}-{c['seed']}")
def test_pad_folds_into_the_consumer(case):
    g = _graph(case)
    after = verify(FoldPad()(g))
    (node,) = after.nodes
    (pt, pb), (pl, pr) = case["pads"]
    t, l, b, r = g.nodes[1].attrs["padding"]
    assert node.op == case["op"] and node.inputs[0] == "x" and node.attrs["padding"] == (t + pt, l + pl, b + pb, r + pr)
    assert "p" not in after.tensors and len(node.origin) == len(g.nodes[0].origin) + len(g.nodes[1].origin)
    ins = random_inputs(g, case["seed"])
    ref, got = interp.run(g, ins)["y"], interp.run(after, ins)["y"]
    if ref.dtype == np.int8:
        assert np.array_equal(got, ref)
    else:
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6 * float(np.abs(ref).max()))


@pytest.mark.parametrize("why, graph", [
    ("average pool counts only real pixels", lambda: padded(CASES[0], consumer="average_pool2d")),
    ("a fill that is not the zero point", lambda: padded(CASES[0], value=5)),
    ("max pool after a zero-point fill", lambda: padded(CASES[6])),
    ("a padded channel axis", lambda: padded(CASES[0], channel_pad=1)),
])
def test_pads_that_must_stay(why, graph):
    g = graph()
    assert [n.op for n in FoldPad()(g).nodes] == [n.op for n in g.nodes], why


def test_pad_that_is_a_graph_output_stays():
    g = _graph(CASES[0])
    g = g.replace(outputs=("y", "p"))
    assert [n.op for n in FoldPad()(g).nodes] == ["pad", "conv2d"]


def test_folded_c_is_bit_exact_against_litert(tmp_path):
    """The folded graphs, compiled to C and run on the host, against LiteRT running PAD + op."""
    graphs = [_graph(c) for c in CASES]
    folded = [FoldPad()(g) for g in graphs]
    failures = []
    for (out, host), g in zip(run_on_host(folded, tmp_path, seed=4), graphs):
        ref = run_reference(write_tflite(g), host.inputs)["y"]
        result = compare(out, ref)
        if not result.equal:
            failures.append(f"{g.name}: {result}")
    assert not failures, "\n".join(failures)
