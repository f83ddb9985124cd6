"""Fused row groups: a chain of ops that works row by row, run as one kernel one row at a time.

  layer_norm   the ops a LayerNorm becomes (TFLite's MEAN / SQUARED_DIFFERENCE / RSQRT / MUL /
               SUB / ADD, ONNX's and PyTorch's mean / sub / mul / sqrt / div, int8 with or
               without float steps), found by transform/fuse_rows.py
  attention    scores = Q K^T (scaled), softmax, times V, per head and query row

The node keeps the ops it stands for in its `body` attribute (a RowGroup): the same nodes,
tensors and quantization as before the fusion. The interpreter runs that body as it is, so
the fusion cannot change what the reference computes; the kernel (lower/fused.py) runs every
op of the body on one row of the leading `rows` dimensions at a time, with the tensors between
them held as one row in scratch instead of whole in the arena. That is exact because each op of
the body computes a row of its output from the same row of its inputs (elementwise ops, means
and softmaxes over the trailing axes, matmuls whose right operand is whole per head).
"""

from __future__ import annotations

from dataclasses import dataclass

from .budget import elements
from .graph import Graph, Node
from .ops import OpDef, get, register


@dataclass(frozen=True, eq=False)
class RowGroup:
    """The body of a fused node. `graph`: the fused ops with their tensors (inputs: the
    node's non-constant inputs; outputs: its one output). `rows`: how many leading dimensions
    of the output are iterated one element at a time. `whole`: (tensor, k) for inputs indexed
    by only the first k of those dimensions (attention's K and V: whole per head); every
    other tensor is indexed by all `rows` of them."""

    graph: Graph
    rows: int
    whole: tuple[tuple[str, int], ...] = ()

    def row_constants(self) -> list[str]:
        """Constants with a row of their own for some rows (an attention mask): the kernel reads
        them at each row's offset, as it reads its inputs."""
        g = self.graph
        return sorted(name for name, t in g.tensors.items()
                      if t.is_const and len(t.shape) > self.rows and any(d != 1 for d in t.shape[:self.rows]))

    def depth(self, tensor: str) -> int:
        """How many leading dimensions of `tensor` follow the iteration (the rest is one row)."""
        return dict(self.whole).get(tensor, self.rows)

    def written_over(self, tensor: str) -> bool:
        """Whether the output may sit exactly on input `tensor`: rows run in order, and row r of
        the output is written by the last op only, after every other op has read row r of
        `tensor` (read whole per head, as attention's K and V, it may not); the last op itself
        reads it, if at all, element by element (an elementwise op)."""
        g, last = self.graph, self.graph.nodes[-1]
        t, y = g.tensors[tensor], g.tensors[g.outputs[0]]
        return (self.depth(tensor) == self.rows and tuple(t.shape) == tuple(y.shape) and t.nbytes == y.nbytes
                and (tensor not in last.inputs or get(last.op).layout == "elementwise"))

    def row_shape(self, tensor: str) -> tuple[int, ...]:
        shape = tuple(self.graph.tensors[tensor].shape)
        k = self.depth(tensor)
        return (1,) * k + shape[k:]

    @property
    def iterations(self) -> tuple[int, ...]:
        return tuple(self.graph.tensors[self.graph.outputs[0]].shape[:self.rows])

    def __str__(self) -> str:
        # What the printer, `inspect` and the workload key show: the ops, not the weights.
        return f"{elements(self.iterations)} rows of [{', '.join(n.op for n in self.graph.nodes)}]"

    __repr__ = __str__


# What every op with a body (a graph of the ops it stands for, in attrs["body"].graph: these and
# ops_patch.py's patch_stage) infers, counts and checks the same way.

def body_infer(g: Graph, n: Node):
    body = n.attrs["body"].graph
    return [(tuple(body.tensors[o].shape), body.tensors[o].dtype) for o in body.outputs]


def body_macs(g: Graph, n: Node) -> int:
    body = n.attrs["body"].graph
    return sum(int(get(m.op).macs(body, m)) for m in body.nodes)


def body_problem(n: Node, kind: type) -> str | None:
    """Why `n`'s body is not a `kind` standing for exactly `n`'s inputs and outputs, or None."""
    body = n.attrs.get("body")
    if not isinstance(body, kind):
        return f"its body is not a {kind.__name__}"
    if tuple(n.inputs) != tuple(body.graph.inputs) or tuple(n.outputs) != tuple(body.graph.outputs):
        return "its inputs and outputs are not its body's"
    return None


def _check(g: Graph, n: Node) -> str | None:
    return body_problem(n, RowGroup)


for _name in ("layer_norm", "attention"):
    register(OpDef(_name, ("input",), attrs={"body": None}, infer=body_infer, macs=body_macs, check=_check, variadic=True,
                   inplace="rows"))
