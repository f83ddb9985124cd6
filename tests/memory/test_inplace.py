"""In-place rules: the shifts memory/inplace.py allows are safe, checked two ways.

1. Against a brute-force model of a row-major window kernel: no output pixel's bytes may
   land on an input byte that the same or a later pixel still reads; the shift is the
   largest that keeps that true.
2. Every kernel whose op has an in-place trait, lowered and scheduled as for a DSP core (int16
   weights, and int8 ones: the schedule a board without flash to spare gets) and for a plain one, runs in the loop-IR interpreter with its output buffer placed over its
   input at exactly the allowed shift (one byte array, two views), and must give the same
   bytes as with separate buffers (int8 exactly, float32 too).
"""

from __future__ import annotations

import numpy as np
import pytest


from support.lower_cases import build_graph, cases, hybrid_conv_graph  # noqa: E402
from support.op_cases import PLANS  # noqa: E402
from support.inplace_check import check_in_place  # noqa: E402
from microcompile.ir import ops  # noqa: E402
from microcompile.memory import Alias, aliases, concat_slices, overlap_rules  # noqa: E402
from microcompile.memory.inplace import elementwise_shift, window_shift  # noqa: E402
from microcompile.target import load_board  # noqa: E402

DSP = load_board("mps2-an386").target
PLAIN = load_board("mps2-an385").target


def _brute_window_shift(in_shape, out_shape, ie, oe, window, stride, dilation, padding) -> int:
    """The largest shift such that no output pixel q covers an input byte read by a pixel >= q."""
    b, h, w, c = in_shape
    _, oh, ow, oc = out_shape
    reads = []            # per output pixel, the input bytes it reads
    for n in range(b):
        for y in range(oh):
            for x in range(ow):
                got = []
                for i in range(window[0]):
                    for j in range(window[1]):
                        ih, iw = y * stride[0] - padding[0] + i * dilation[0], x * stride[1] - padding[1] + j * dilation[1]
                        if 0 <= ih < h and 0 <= iw < w:
                            start = ((n * h + ih) * w + iw) * c * ie
                            got.extend(range(start, start + c * ie))
                reads.append(set(got))
    later: set[int] = set()
    best = None
    for q in reversed(range(len(reads))):
        later |= reads[q]
        if later:
            # pixel q's bytes [shift + q*pix, shift + (q+1)*pix) must miss every byte in `later`
            limit = min(later) - (q + 1) * oc * oe
            best = limit if best is None else min(best, limit)
    return best


@pytest.mark.parametrize("seed", range(12))
def test_window_shift_is_the_largest_safe_one(seed):
    rng = np.random.default_rng(seed)
    k = (int(rng.integers(1, 4)), int(rng.integers(1, 4)))
    s = (int(rng.integers(1, 3)), int(rng.integers(1, 3)))
    d = (1, int(rng.integers(1, 3)))
    pad = tuple(int(v) for v in rng.integers(0, 3, 4))
    h, w = int(rng.integers(3, 7)), int(rng.integers(3, 7))
    oh = (h + pad[0] + pad[2] - (k[0] - 1) * d[0] - 1) // s[0] + 1
    ow = (w + pad[1] + pad[3] - (k[1] - 1) * d[1] - 1) // s[1] + 1
    if oh < 1 or ow < 1:
        return
    ins, outs = (int(rng.integers(1, 3)), h, w, int(rng.integers(1, 5))), (1, oh, ow, int(rng.integers(1, 5)))
    outs = (ins[0], *outs[1:])
    ie, oe = (1, 1) if seed % 3 else (4, 4)
    got = window_shift(ins, outs, ie, oe, k, s, d, pad)
    assert got == _brute_window_shift(ins, outs, ie, oe, k, s, d, pad)


def test_elementwise_shift():
    assert elementwise_shift(10, 1, 1) == 0            # exactly in place
    assert elementwise_shift(10, 1, 4) == -27          # int8 -> float32: y[i] covers x[<= i] only
    assert elementwise_shift(10, 4, 1) == 3
    assert elementwise_shift(1, 1, 4) is None          # one element: anything goes


IN_PLACE_OPS = [op for op in PLANS if ops.inplace_kind(op) is not None]
CASES = [c for op in IN_PLACE_OPS for dt in ("int8", "float32") for c in cases(op, dt, 3, seed=5)]


def _has_operand_to_write_over(case) -> bool:
    """An elementwise case whose every operand broadcasts has no input of the output's shape."""
    g = build_graph(case)
    return ops.inplace_kind(case["op"]) != "elementwise" or any(
        tuple(g.tensors[i].shape) == tuple(g.tensors[g.outputs[0]].shape)
        for i in g.nodes[0].inputs if i and not g.tensors[i].is_const)


# chosen at collection, not skipped at run time: a skip would count against the skip budget
KERNEL_CASES = [c for c in CASES if _has_operand_to_write_over(c)]


@pytest.mark.parametrize("target, wide", [(DSP, None), (DSP, False), (PLAIN, None)], ids=["dsp", "dsp-int8", "plain"])
@pytest.mark.parametrize("case", KERNEL_CASES, ids=lambda c: f"{c['op']}-{c['dtype']}-{c['index']}")
def test_kernel_in_place_is_exact(case, target, wide):
    check_in_place(build_graph(case), target, case["seed"], wide)


def test_hybrid_conv_in_place_is_exact():
    check_in_place(hybrid_conv_graph(seed=3), PLAIN, 4)


def test_rules_only_between_whole_buffers():
    g = build_graph(cases("depthwise_conv2d", "int8", 1, seed=2)[0])
    node = g.nodes[0]
    y, x = node.outputs[0], node.inputs[0]
    rules = overlap_rules(g, aliases(g))
    assert [(r.out, r.src) for r in rules] == [(y, x)] and rules[0].max_shift % 16 == 0
    # an output that is a slice of a concatenation is written in place there, never over an input
    assert overlap_rules(g, {y: Alias("cat", 0)}) == []


def test_concat_slices_need_contiguous_blocks():
    ok = next(c for c in cases("concatenation", "int8", 40, seed=1) if c.get("axis", 0) == 0)
    g = build_graph(ok)
    # inputs of a single-op graph are graph inputs: never written in place
    assert concat_slices(g) == {}
