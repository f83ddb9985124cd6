"""Multi-op test models, written with microcompile's own TFLite writer.

`MODELS[name]()` returns a verified Graph; `write(name, dir)` writes it as .tflite. Each
model is first built in float32 with seeded random weights; int8 variants are then
post-training quantized here the way the TFLite converter does it: activations asymmetric
from the ranges of a float run on random inputs, weights symmetric (per channel for
convolutions), biases int32 at input scale x weight scale, softmax output at 1/256 - 128,
and RESHAPE / AVERAGE_POOL_2D keep their input's quantization. So int8 values spread over
the whole range instead of saturating, and a wrong rounding anywhere shows.

The models cover a residual block, several inputs and outputs (one of them an
intermediate tensor), a concatenation written in place by its producers, float32 or int8
I/O around an int8 core (QUANTIZE/DEQUANTIZE), and the converter patterns that must fold away at compile time (Flatten with a dynamic batch:
SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE; a dilated convolution as SPACE_TO_BATCH_ND ->
CONV_2D -> BATCH_TO_SPACE_ND).
"""

from __future__ import annotations

import dataclasses

from pathlib import Path

import numpy as np

from microcompile.frontend.tflite import writer as tflite_writer
from microcompile.ir import Graph, Node, QuantParams, Tensor, ops, verify
from microcompile.reference import interp

# Ops whose int8 output keeps the input's quantization (TFLite requires it; for RELU it
# is our choice, so that FuseActivation can fuse it exactly).
_KEEP_QUANT = {"relu", "reshape", "average_pool2d", "max_pool2d", "strided_slice", "space_to_batch_nd",
               "batch_to_space_nd", "squeeze", "expand_dims"}


class _Model:
    """Builds one float32 graph node by node (shapes from the op registry)."""

    def __init__(self, name: str, seed: int):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self.inputs: list[str] = []

    def input(self, name, shape, dtype="float32") -> str:
        self.tensors[name] = Tensor(name, tuple(shape), dtype)
        self.inputs.append(name)
        return name

    def const(self, name, data) -> str:
        data = np.asarray(data)
        dtype = {np.dtype(np.float32): "float32", np.dtype(np.int32): "int32"}[data.dtype]
        self.tensors[name] = Tensor(name, data.shape, dtype, data=data)
        return name

    def op(self, op, inputs, name, n_out=1, **attrs) -> str | list[str]:
        outs = tuple([name] if n_out == 1 else [f"{name}:{k}" for k in range(n_out)])
        node = Node(op, name, tuple(inputs), outs, dict(ops.get(op).attrs, **attrs))
        probe = Graph("probe", dict(self.tensors), tuple(self.nodes) + (node,), (), ())
        for out, (shape, dtype) in zip(outs, ops.get(op).infer(probe, node)):
            self.tensors[out] = Tensor(out, tuple(shape), dtype)
        self.nodes.append(node)
        return outs[0] if n_out == 1 else list(outs)

    def _weights(self, name, shape, fan_in):
        return self.const(name, self.rng.normal(0, 1.5 / np.sqrt(fan_in), shape).astype(np.float32))

    def _bias(self, name, n):
        return self.const(name, self.rng.normal(0, 0.2, n).astype(np.float32))

    def conv(self, x, cout, k, name, stride=1, dilation=1, padding="SAME", act="NONE"):
        cin = self.tensors[x].shape[3]
        w = self._weights(f"{name}/w", (cout, k, k, cin), k * k * cin)
        return self.op("conv2d", (x, w, self._bias(f"{name}/b", cout)), name, stride=(stride, stride),
                       dilation=(dilation, dilation), activation=act,
                       padding=self._pad(x, k, stride, dilation, padding))

    def depthwise(self, x, k, name, stride=1, mult=1, dilation=1, padding="SAME", act="NONE"):
        c = self.tensors[x].shape[3] * mult
        w = self._weights(f"{name}/w", (1, k, k, c), k * k)
        return self.op("depthwise_conv2d", (x, w, self._bias(f"{name}/b", c)), name, stride=(stride, stride),
                       dilation=(dilation, dilation), depth_multiplier=mult, activation=act,
                       padding=self._pad(x, k, stride, dilation, padding))

    def fc(self, x, units, name, act="NONE"):
        depth = self.tensors[x].shape[-1]
        w = self._weights(f"{name}/w", (units, depth), depth)
        return self.op("fully_connected", (x, w, self._bias(f"{name}/b", units)), name, activation=act)

    def avgpool(self, x, k, name, stride=None):
        s = stride or k
        return self.op("average_pool2d", (x,), name, filter=(k, k), stride=(s, s), padding=(0, 0, 0, 0))

    def _pad(self, x, k, stride, dilation, kind):
        if kind == "VALID":
            return (0, 0, 0, 0)
        h, w = self.tensors[x].shape[1:3]
        (t, b), (l, r) = (ops.same_padding(n, k, stride, dilation) for n in (h, w))
        return (t, l, b, r)

    def graph(self, outputs) -> Graph:
        return verify(Graph(self.name, dict(self.tensors), tuple(self.nodes), tuple(self.inputs), tuple(outputs)))


# --- post-training quantization of a float graph ----------------------------------------

def _act_quant(lo: float, hi: float) -> QuantParams:
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = float(np.float32(max(hi - lo, 1e-6) / 255))
    return QuantParams((scale,), (int(np.clip(np.round(-128 - lo / scale), -128, 127)),))


def _ranges(g: Graph, seed: int) -> dict[str, tuple[float, float]]:
    rng = np.random.default_rng(seed)
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    for _ in range(4):
        feed = {n: rng.uniform(-1, 1, g.tensors[n].shape).astype(np.float32) for n in g.inputs}
        for name, v in interp.run(g, feed, keep_all=True).items():
            if not g.tensors[name].is_const and g.tensors[name].dtype == "float32":
                lo[name] = min(lo.get(name, 0.0), float(v.min()))
                hi[name] = max(hi.get(name, 0.0), float(v.max()))
    return {k: (lo[k], hi[k]) for k in lo}


def _weight_tensor(t: Tensor, axis: int | None) -> Tensor:
    amax = np.abs(t.data).max(axis=tuple(i for i in range(t.data.ndim) if i != axis)) if axis is not None \
        else np.abs(t.data).max()
    scales = np.atleast_1d(np.maximum(amax, 1e-6) / 127).astype(np.float32)
    shape = [1] * t.data.ndim
    if axis is not None:
        shape[axis] = -1
    q = np.clip(np.round(t.data / scales.reshape(shape)), -127, 127).astype(np.int8)
    return t.replace(dtype="int8", data=q, quant=QuantParams(tuple(map(float, scales)), (0,) * scales.size, axis))


def quantize_graph(g: Graph, name: str, float_io: bool = False, seed: int = 7) -> Graph:
    """The int8 twin of float graph `g` (see the module docstring). `float_io` keeps float32
    inputs/outputs and puts QUANTIZE/DEQUANTIZE at the edges, as the converter does for
    `inference_input_type=float32`."""
    ranges = _ranges(g, seed)
    tensors = dict(g.tensors)
    for n in g.nodes:   # activations in topological order, so _KEEP_QUANT can look back
        for out in n.outputs:
            t = tensors[out]
            if t.dtype != "float32":
                continue
            if n.op == "softmax":
                q = QuantParams((1 / 256,), (-128,))
            elif n.op in _KEEP_QUANT:
                q = tensors[n.inputs[0]].quant
            else:
                q = _act_quant(*ranges[out])
            tensors[out] = t.replace(dtype="int8", quant=q)
    # CONCATENATION: the converter gives its inputs the output's quantization (no requantization).
    for n in g.nodes:
        if n.op == "concatenation":
            for i in n.inputs:
                tensors[i] = tensors[i].replace(quant=tensors[n.outputs[0]].quant)
    for name_in in g.inputs:
        tensors[name_in] = tensors[name_in].replace(dtype="int8", quant=_act_quant(*ranges[name_in]))
    # A KEEP_QUANT op directly on a graph input saw no quantization yet: redo them in order.
    for n in g.nodes:
        if n.op in _KEEP_QUANT:
            for out in n.outputs:
                tensors[out] = tensors[out].replace(quant=tensors[n.inputs[0]].quant)
    for n in g.nodes:
        if n.op not in ("conv2d", "depthwise_conv2d", "fully_connected"):
            continue
        x, w, b = n.inputs
        tensors[w] = _weight_tensor(tensors[w], {"conv2d": 0, "depthwise_conv2d": 3, "fully_connected": 0}[n.op])
        bias_scales = np.float32(tensors[x].quant.s) * np.asarray(tensors[w].quant.scale, np.float32)
        data = np.round(tensors[b].data / bias_scales).astype(np.int32)
        tensors[b] = tensors[b].replace(dtype="int32", data=data, quant=QuantParams(
            tuple(map(float, bias_scales)), (0,) * bias_scales.size, 0 if bias_scales.size > 1 else None))
    nodes, inputs, outputs = list(g.nodes), list(g.inputs), list(g.outputs)
    if float_io:
        for k, name_in in enumerate(g.inputs):
            outer = f"{name_in}_float"
            tensors[outer] = g.tensors[name_in].replace(name=outer)
            nodes.insert(0, Node("quantize", f"{name_in}/quantize", (outer,), (name_in,)))
            inputs[k] = outer
        for k, name_out in enumerate(g.outputs):
            outer = f"{name_out}_float"
            tensors[outer] = g.tensors[name_out].replace(name=outer)
            nodes.append(Node("dequantize", f"{name_out}/dequantize", (name_out,), (outer,)))
            outputs[k] = outer
    return verify(Graph(name, tensors, tuple(nodes), tuple(inputs), tuple(outputs)))


# --- the models ----------------------------------------------------------------------------

def residual_float32() -> Graph:
    """conv+relu -> conv -> add(skip)+relu -> depthwise s2 -> avg pool -> flatten -> fc -> softmax."""
    m = _Model("residual_float32", seed=1)
    x = m.input("image", (1, 8, 8, 3))
    a = m.conv(x, 8, 3, "stem", act="RELU")
    b = m.conv(a, 8, 3, "block/conv1", act="RELU")
    b = m.conv(b, 8, 3, "block/conv2")
    r = m.op("relu", (m.op("add", (a, b), "block/add"),), "block/relu")   # fused by the graph passes
    d = m.depthwise(r, 3, "down", stride=2, mult=2, act="RELU6")
    p = m.avgpool(d, 4, "pool")
    f = m.op("reshape", (p,), "flatten", shape=(1, 16))
    y = m.op("softmax", (m.fc(f, 5, "logits"),), "probs", beta=1.0)
    return m.graph([y])


def multi_io_float32() -> Graph:
    """Two inputs, three outputs: two heads and an intermediate feature map."""
    m = _Model("multi_io_float32", seed=2)
    a = m.input("left", (1, 6, 6, 4))
    b = m.input("right", (1, 6, 6, 4))
    fa = m.conv(a, 6, 3, "left/conv", act="RELU")
    fb = m.depthwise(m.conv(b, 6, 1, "right/conv"), 3, "right/dw", act="RELU")
    s = m.op("add", (fa, fb), "merge")
    p = m.op("reshape", (m.avgpool(s, 3, "pool"),), "flatten", shape=(1, 24))
    cls = m.op("softmax", (m.fc(p, 4, "head/cls"),), "head/probs", beta=1.0)
    box = m.fc(p, 3, "head/box")
    return m.graph([cls, box, fb])


def flatten_dynamic_batch_float32() -> Graph:
    """Keras Flatten with a dynamic batch: SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE."""
    m = _Model("flatten_dynamic_batch_float32", seed=3)
    x = m.input("image", (1, 6, 6, 2))
    c = m.conv(x, 4, 3, "conv", stride=2, act="RELU")
    shape = m.op("shape", (c,), "flatten/shape")
    batch = m.op("strided_slice", (shape,), "flatten/batch", begin=(0,), end=(1,), strides=(1,),
                 shrink_axis_mask=1)
    minus1 = m.const("flatten/minus1", np.array(-1, np.int32))
    m.op("pack", (batch, minus1), "flatten/target", axis=0)
    # Our RESHAPE has no shape input (the reader takes the static output shape), so the
    # writer is told to wire flatten/target into the TFLite RESHAPE; see write().
    f = m.op("reshape", (c,), "flatten/reshape", shape=(1, 36))
    return m.graph([m.fc(f, 5, "dense")])


def dilated_sandwich_float32() -> Graph:
    """A dilated convolution as the converter emits it: SPACE_TO_BATCH_ND -> CONV_2D (VALID)
    -> BATCH_TO_SPACE_ND, here with rate 2 and a 3x3 kernel on an 8x8 map."""
    m = _Model("dilated_sandwich_float32", seed=4)
    x = m.input("image", (1, 8, 8, 3))
    s2b = m.op("space_to_batch_nd", (x,), "dilated/s2b", block_shape=(2, 2), paddings=((2, 2), (2, 2)))
    c = m.conv(s2b, 4, 3, "dilated/conv", padding="VALID", act="RELU")
    b2s = m.op("batch_to_space_nd", (c,), "dilated/b2s", block_shape=(2, 2), crops=((0, 0), (0, 0)))
    return m.graph([m.fc(m.op("reshape", (b2s,), "flatten", shape=(1, 256)), 4, "dense")])


def dscnn_float32() -> Graph:
    """A small DS-CNN (KWS-like): conv 3x3 s2 -> two (depthwise 3x3 + pointwise 1x1) blocks ->
    average pool -> fc -> softmax. 20 and 28 channels and depths of 9, 20 and 28, so that
    vector kernels see full vectors and tails; small enough for a 16 KiB micro:bit."""
    m = _Model("dscnn_float32", seed=5)
    x = m.input("mfcc", (1, 10, 10, 1))
    c = m.conv(x, 20, 3, "conv0", stride=2, act="RELU")
    for i, cout in enumerate((20, 28)):
        d = m.depthwise(c, 3, f"ds{i}/dw", act="RELU")
        c = m.conv(d, cout, 1, f"ds{i}/pw", act="RELU")
    f = m.op("reshape", (m.avgpool(c, 5, "pool"),), "flatten", shape=(1, 28))
    return m.graph([m.op("softmax", (m.fc(f, 12, "logits"),), "probs", beta=1.0)])


def concat_float32() -> Graph:
    """Two branches concatenated along rows (NHWC axis 1: each input one contiguous block of
    the output, which the planner lets the branches write in place) -> conv -> pool -> fc."""
    m = _Model("concat_float32", seed=5)
    x = m.input("image", (1, 6, 6, 3))
    a = m.conv(x, 4, 3, "left", act="RELU")
    b = m.depthwise(m.conv(x, 4, 1, "right/pw"), 3, "right/dw", act="RELU6")
    c = m.op("concatenation", (a, b), "rows", axis=1)
    d = m.conv(c, 4, 3, "mix", stride=2, act="RELU")
    p = m.op("reshape", (m.avgpool(d, 3, "pool"),), "flatten", shape=(1, 8))
    return m.graph([m.fc(p, 3, "logits")])


def _int8(build, float_io=False):
    def make() -> Graph:
        g = build()
        suffix = "int8_float_io" if float_io else "int8"
        return quantize_graph(g, g.name.replace("float32", suffix), float_io=float_io)
    return make


MODELS = {
    "residual_float32": residual_float32,
    "residual_int8": _int8(residual_float32),
    "residual_int8_float_io": _int8(residual_float32, float_io=True),
    "multi_io_float32": multi_io_float32,
    "multi_io_int8": _int8(multi_io_float32),
    "multi_io_int8_float_io": _int8(multi_io_float32, float_io=True),
    "flatten_dynamic_batch_float32": flatten_dynamic_batch_float32,
    "flatten_dynamic_batch_int8": _int8(flatten_dynamic_batch_float32),
    "dilated_sandwich_float32": dilated_sandwich_float32,
    "dilated_sandwich_int8": _int8(dilated_sandwich_float32),
    "dscnn_float32": dscnn_float32,
    "dscnn_int8": _int8(dscnn_float32),
    "concat_int8": _int8(concat_float32),
}

# model -> {reshape node: the tensor the TFLite RESHAPE takes as its (dynamic) shape input}
_DYNAMIC_RESHAPE = {n: {"flatten/reshape": "flatten/target"} for n in MODELS if n.startswith("flatten_dynamic")}


def write(name: str, out_dir: Path) -> Path:
    """Write model `name` to out_dir/<name>.tflite."""
    graph, dynamic = MODELS[name](), _DYNAMIC_RESHAPE.get(name, {})
    saved = tflite_writer.WRITERS["reshape"]

    def reshape_inputs(g, n, tensors):
        return [n.inputs[0], dynamic[n.name]] if n.name in dynamic else saved.inputs(g, n, tensors)
    if dynamic:
        tflite_writer.WRITERS["reshape"] = dataclasses.replace(saved, inputs=reshape_inputs)
    try:
        data = tflite_writer.write_tflite(graph)
    finally:
        tflite_writer.WRITERS["reshape"] = saved
    path = Path(out_dir) / f"{name}.tflite"
    path.write_bytes(data)
    return path
