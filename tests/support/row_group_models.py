"""Layer norms and attention heads as the importers and converters spell them, float and int8
(microcompile's own PTQ, calibrated on random inputs), for the tests of the row fusion
(transform/fuse_rows.py, lower/fused.py).

  layer_norm_onnx    mean, sub, mul, mean, add, sqrt, div, mul, add (ONNX's LayerNormalization
                     function body, and PyTorch's decomposition); int8 keeps div and sqrt float
                     as the transformer fixtures' PTQ does, so quantize/dequantize sit inside
  layer_norm_tflite  MEAN, SQUARED_DIFFERENCE, MEAN, ADD, RSQRT, MUL, MUL, MUL, SUB, ADD (what
                     TFLite's converter emits for a Keras LayerNormalization)
  attention          batch_matmul(Q, K, adj_y), MUL by a constant scale, SOFTMAX, batch_matmul(P, V)
"""

from __future__ import annotations

import numpy as np

from microcompile.ir import Graph, Node, Tensor, verify
from microcompile.quantization import QuantizeOptions, quantize


class _Builder:
    def __init__(self, name: str, rng: np.random.Generator):
        self.name, self.rng = name, rng
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []

    def input(self, name: str, shape) -> str:
        self.tensors[name] = Tensor(name, tuple(shape), "float32")
        return name

    def const(self, name: str, value) -> str:
        value = np.asarray(value, np.float32)
        self.tensors[name] = Tensor(name, value.shape, "float32", data=value)
        return name

    def op(self, op: str, inputs, shape, **attrs) -> str:
        out = f"{op}_{len(self.nodes)}"
        self.tensors[out] = Tensor(out, tuple(shape), "float32")
        self.nodes.append(Node(op, out, tuple(inputs), (out,), attrs))
        return out

    def graph(self, inputs, output) -> Graph:
        return verify(Graph(self.name, self.tensors, tuple(self.nodes), tuple(inputs), (output,)))


def layer_norm_onnx(shape, seed: int, axis: int = -1) -> Graph:
    """Normalized over `axis` (the last one, as every converter's; another to test what is left
    alone)."""
    b = _Builder(f"ln_onnx_{seed}", np.random.default_rng(seed))
    x = b.input("x", shape)
    rank = len(shape)
    axis %= rank
    red = tuple(1 if i == axis else d for i, d in enumerate(shape))
    per_channel = tuple(d if i == axis else 1 for i, d in enumerate(shape))
    axes = {"axes": (axis,), "keep_dims": True}
    mean = b.op("mean", [x], red, **axes)
    d = b.op("sub", [x, mean], shape)
    var = b.op("mean", [b.op("mul", [d, d], shape)], red, **axes)
    std = b.op("sqrt", [b.op("add", [var, b.const("eps", np.full((1,) * rank, 1e-5))], red)], red)
    y = b.op("div", [d, std], shape)
    y = b.op("mul", [y, b.const("gamma", b.rng.uniform(0.5, 1.5, per_channel))], shape)
    y = b.op("add", [y, b.const("beta", b.rng.normal(0, 0.2, per_channel))], shape)
    return b.graph([x], y)


def layer_norm_tflite(shape, seed: int) -> Graph:
    b = _Builder(f"ln_tflite_{seed}", np.random.default_rng(seed))
    x = b.input("x", shape)
    rank, c = len(shape), shape[-1]
    red = (*shape[:-1], 1)
    axes = {"axes": (rank - 1,), "keep_dims": True}
    mean = b.op("mean", [x], red, **axes)
    var = b.op("mean", [b.op("squared_difference", [x, mean], shape)], red, **axes)
    inv = b.op("rsqrt", [b.op("add", [var, b.const("eps", np.full((1,) * rank, 1e-3))], red)], red)
    inv = b.op("mul", [inv, b.const("gamma", b.rng.uniform(0.5, 1.5, (1,) * (rank - 1) + (c,)))], shape)
    shifted = b.op("sub", [b.const("beta", b.rng.normal(0, 0.2, (1,) * (rank - 1) + (c,))),
                           b.op("mul", [mean, inv], shape)], shape)
    y = b.op("add", [b.op("mul", [x, inv], shape), shifted], shape)
    return b.graph([x], y)


def attention(heads: int, tokens: int, width: int, seed: int, mask: bool = False) -> Graph:
    """`mask`: a constant causal mask added to the scaled scores (-8 above the diagonal: a
    row of its own for every query row), as PyTorch's attn_mask is imported."""
    b = _Builder(f"attention{'_masked' if mask else ''}_{seed}", np.random.default_rng(seed))
    shape = (1, heads, tokens, width)
    q, k, v = (b.input(n, shape) for n in ("q", "k", "v"))
    scores = b.op("batch_matmul", [q, k], (1, heads, tokens, tokens), adj_x=False, adj_y=True)
    scaled = b.op("mul", [scores, b.const("scale", np.full((1, 1, 1, 1), 1 / np.sqrt(width)))], scores_shape(b, scores))
    if mask:
        causal = np.where(np.triu(np.ones((tokens, tokens), bool), 1), -8.0, 0.0).reshape(1, 1, tokens, tokens)
        scaled = b.op("add", [scaled, b.const("mask", causal)], scores_shape(b, scores))
    probs = b.op("softmax", [scaled], scores_shape(b, scores), beta=1.0)
    y = b.op("batch_matmul", [probs, v], shape, adj_x=False, adj_y=False)
    return b.graph([q, k, v], y)


def scores_shape(b: _Builder, name: str):
    return b.tensors[name].shape


def inside(g: Graph) -> Graph:
    """`g` between other layers, as in a model: a relu before each input, a transpose of the
    last two axes after the output (neither fuses with the group), so the planner may place the
    group's output over an input (a graph's own inputs stay intact)."""
    tensors, nodes = dict(g.tensors), []
    for i in g.inputs:
        tensors[f"{i}_in"] = g.tensors[i].replace(name=f"{i}_in")
        nodes.append(Node("relu", f"relu_{i}", (f"{i}_in",), (i,)))
    y = g.tensors[g.outputs[0]]
    perm = (*range(len(y.shape) - 2), len(y.shape) - 1, len(y.shape) - 2)
    tensors["out"] = y.replace(name="out", shape=tuple(y.shape[p] for p in perm))
    nodes += [*g.nodes, Node("transpose", "transpose_out", g.outputs, ("out",), {"perm": perm})]
    return verify(Graph(f"{g.name}_inside", tensors, tuple(nodes), tuple(f"{i}_in" for i in g.inputs), ("out",)))


def samples(g: Graph, count: int, seed: int, spread: float = 2.0) -> list[dict]:
    rng = np.random.default_rng(seed)
    return [{n: (rng.normal(0.3, spread, g.tensors[n].shape)).astype(np.float32) for n in g.inputs}
            for _ in range(count)]


def int8(g: Graph, keep_float=(), seed: int = 0) -> Graph:
    """microcompile's PTQ of `g` with int8 inputs and outputs (what LiteRT is given)."""
    q = quantize(g, samples(g, 16, seed), QuantizeOptions(io="int8", keep_float=tuple(keep_float)),
                 report=False, progress=False)
    return q.graph
