"""Patch stages: a chain of convolutions, depthwise convolutions, pools and elementwise ops at
the start of a CNN, run band by band so that the large feature maps between them never exist
whole (MCUNetV2's patch-based inference, with the overlap cached instead of recomputed).

  patch_stage  found by transform/patch_stage.py (chosen by compiler/patches.py): its `body`
               (a PatchStage) is the chain; the node reads the chain's input whole and writes
               its output whole, `rows` output rows per band, top to bottom.

The patches are full-width bands (a grid of n x 1). Each tensor between two ops of the chain is
a window of a few rows in scratch: the rows the next op reads for this band. Rows two bands
share (a 3x3 filter's overlap) stay in the window and move to its top before the band, so no
value is computed twice: the stage does the MACs of its ops and no more. What a band adds is
the call and loop overhead of its kernels and the copy of the kept rows.

Every value is exact: a band's ops are the whole layer's ops on fewer rows, with the padding of
the image border where the band touches it (a band's first tap row is the layer's own), so each
output pixel sums the same products in the same order. The interpreter runs the body whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from .graph import Graph, Node
from .ops import OpDef, get, register
from .ops_fused import body_infer, body_macs, body_problem

# Ops a band can run: one non-constant NHWC input, rows of the output from a window of rows of
# the input (conv2d, depthwise_conv2d, pools) or row for row (elementwise).
WINDOW_OPS = ("conv2d", "depthwise_conv2d", "max_pool2d", "average_pool2d")


def vertical(g: Graph, n: Node, axis: int = 1) -> tuple[int, int, int, int]:
    """(filter size, stride, dilation, leading padding) of `n` along the image's rows (axis 1) or
    columns (axis 2)."""
    if n.op in WINDOW_OPS:
        k = n.attrs["filter"][axis - 1] if "filter" in n.attrs else g.tensors[n.inputs[1]].shape[axis]
        return (k, n.attrs.get("stride", (1, 1))[axis - 1], n.attrs.get("dilation", (1, 1))[axis - 1],
                n.attrs.get("padding", (0, 0, 0, 0))[axis - 1])
    return 1, 1, 1, 0


def bandable(g: Graph, n: Node) -> bool:
    """Whether `n` can be one op of a stage: batch-1 NHWC in and out, one non-constant input,
    and no constant operand that differs from row to row (an ADD of a whole [1,H,W,C] constant,
    a Keras PReLU's [H,W,C] alpha: a band would read the constant's first rows)."""
    x = [i for i in n.inputs if i and not g.tensors[i].is_const]
    if len(x) != 1 or len(n.outputs) != 1:
        return False
    xt, yt = g.tensors[x[0]], g.tensors[n.outputs[0]]
    if len(xt.shape) != 4 or len(yt.shape) != 4 or xt.shape[0] != 1 or xt.variable:
        return False
    if n.op in WINDOW_OPS:
        return n.op != "depthwise_conv2d" or n.attrs.get("depth_multiplier", 1) >= 1
    consts = [g.tensors[i] for i in n.inputs if i and g.tensors[i].is_const]
    rowwise = any(len(c.shape) >= 3 and c.shape[-3] != 1 for c in consts)
    return get(n.op).layout == "elementwise" and tuple(xt.shape) == tuple(yt.shape) and not rowwise


@dataclass(frozen=True)
class Band:
    """What one band does. Per op j (output tensor j+1): `out[j]`, its output rows [lo, hi)
    (empty: the op has nothing to do in this band); `need[j]`, the rows of its input it reads
    [lo, hi) (padding rows outside the image are the kernel's `pads[j]` (top, bottom));
    `start[t]` for each tensor t between two ops (1..k-1): the tensor row at the top of its
    window in this band."""

    out: tuple[tuple[int, int], ...]
    need: tuple[tuple[int, int], ...]
    pads: tuple[tuple[int, int], ...]
    start: tuple[int, ...]


@dataclass(frozen=True, eq=False)
class PatchStage:
    """The body of a patch_stage node: `graph`, the chain (inputs: the node's one input;
    outputs: its one output); `rows`, output rows per band."""

    graph: Graph
    rows: int

    @property
    def nodes(self) -> list[Node]:
        return self.graph.nodes

    def tensor(self, j: int) -> str:
        """Tensor j of the chain: 0 the input, k the output, j the output of op j-1."""
        return self.graph.inputs[0] if j == 0 else self.graph.nodes[j - 1].outputs[0]

    def height(self, j: int) -> int:
        return self.graph.tensors[self.tensor(j)].shape[1]

    def row_bytes(self, j: int) -> int:
        t = self.graph.tensors[self.tensor(j)]
        return t.nbytes // t.shape[1]

    @cached_property
    def bands(self) -> tuple[Band, ...]:
        """The static schedule: each op produces, band after band, every row of its output the
        next op needs and it has not produced yet; the last op `rows` rows per band."""
        g, k = self.graph, len(self.graph.nodes)
        done = [0] * (k + 1)                 # rows of tensor j produced before this band
        start = [0] * (k + 1)                # window tops (tensors 1..k-1)
        out_h = self.height(k)
        bands = []
        for b0 in range(0, out_h, self.rows):
            out, need, pads = [None] * k, [None] * k, [(0, 0)] * k
            lo, hi = b0, min(out_h, b0 + self.rows)
            for j in range(k - 1, -1, -1):
                if hi <= lo:                 # nothing new is needed downstream: op j rests
                    out[j], need[j] = (done[j + 1],) * 2, (done[j],) * 2
                    continue
                out[j] = (lo, hi)
                kh, s, d, top = vertical(g, g.nodes[j])
                first, last = lo * s - top, (hi - 1) * s - top + (kh - 1) * d + 1
                n_lo, n_hi = max(0, first), min(self.height(j), last)
                need[j], pads[j] = (n_lo, n_hi), (n_lo - first, last - n_hi)
                lo, hi = done[j], max(done[j], n_hi)      # what tensor j must gain in this band
            for t in range(1, k):
                if need[t][1] > need[t][0]:
                    # the window holds what op t reads and what op t-1 writes in this band
                    top_row = min(need[t][0], done[t])
                    assert top_row >= start[t], (t, top_row, start[t])
                    start[t] = top_row
            bands.append(Band(tuple(out), tuple(need), tuple(pads), tuple(start[1:k])))
            for j in range(k):
                done[j + 1] = max(done[j + 1], out[j][1])
        return tuple(bands)

    def moves(self, i: int) -> tuple[tuple[int, int] | None, ...]:
        """Before band i, for each tensor t between two ops (1..k-1): (rows the window's top
        moves down, rows it keeps, which move to its top), or None when nothing moves."""
        if i == 0:
            return (None,) * (len(self.nodes) - 1)
        b, prev = self.bands[i], self.bands[i - 1]
        out = []
        for t in range(1, len(self.nodes)):
            top, old = b.start[t - 1], prev.start[t - 1]
            kept = prev.out[t - 1][1] - top          # rows of t made up to now, below the new top
            out.append((top - old, kept) if top > old and kept > 0 else None)
        return tuple(out)

    def window_rows(self, t: int) -> int:
        """Rows of the window of tensor t (1..k-1): the most any band holds."""
        return max(b.out[t - 1][1] - b.start[t - 1] for b in self.bands)

    def window_bytes(self) -> int:
        return sum(self.window_rows(t) * self.row_bytes(t) for t in range(1, len(self.nodes)))

    def write_shift(self) -> int | None:
        """How far above its input the output may start (bytes; negative: below), bands in
        order, each reading its input rows before it writes its output rows: the smallest gap,
        over bands b, between the end of b's output rows and the lowest input byte a band b'
        >= b reads (memory/inplace.py's rule for window kernels, a band for a pixel)."""
        k, low, best = len(self.nodes), None, None
        for b in reversed(self.bands):
            if b.need[0][1] > b.need[0][0]:
                here = b.need[0][0] * self.row_bytes(0)
                low = here if low is None else min(low, here)
            if low is not None and b.out[k - 1][1] > b.out[k - 1][0]:
                gap = low - b.out[k - 1][1] * self.row_bytes(k)
                best = gap if best is None else min(best, gap)
        return best

    def __str__(self) -> str:
        return f"{len(self.bands)} bands of {self.rows} rows of [{', '.join(n.op for n in self.nodes)}]"

    __repr__ = __str__


def _check(g: Graph, n: Node) -> str | None:
    problem = body_problem(n, PatchStage)
    if problem is None and n.attrs["body"].rows < 1:
        return f"{n.attrs['body'].rows} rows per band"
    return problem


register(OpDef("patch_stage", ("input",), attrs={"body": None}, infer=body_infer, macs=body_macs, check=_check,
               inplace="bands"))
