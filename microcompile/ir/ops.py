"""The op registry: the one place an op is defined.

Each `OpDef` declares its inputs, its attributes with defaults, shape/type inference,
a MAC count and extra verification (`ranks` of its inputs, a `check` of how its inputs and
attributes fit together). Passes, the interpreter and lowering all look ops up here;
nothing else hard-codes an op's arity or attributes.

Attribute conventions (all ops are NHWC):
  stride=(sh, sw), dilation=(dh, dw), padding=(top, left, bottom, right) explicit pixels,
  activation in ACTIVATIONS (a fused clamp applied after the op, before the store).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .budget import elements
from .graph import Graph, Node

ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")
# How an int8 op rounds when it requantizes (attribute `rounding` of the ops that have one):
# "tflite" as LiteRT's reference kernels (the default; per op, see reference/qparams.py),
# "onnx" once, ties to even, as ONNX specifies (set by the ONNX QDQ import).
ROUNDINGS = ("tflite", "onnx")

InferFn = Callable[[Graph, Node], list[tuple[tuple[int, ...], str]]]
# fn(graph, node) -> what is wrong with the node's inputs and attributes, or None.
CheckFn = Callable[[Graph, Node], "str | None"]


@dataclass(frozen=True)
class OpDef:
    name: str
    inputs: tuple[str, ...]            # input roles, in order
    optional: tuple[str, ...] = ()     # roles that may be "" (absent)
    attrs: dict = field(default_factory=dict)   # attribute -> default
    infer: InferFn | None = None
    macs: Callable[[Graph, Node], int] = lambda g, n: 0
    # Ops that only reinterpret their input's bytes (no data movement on NHWC buffers).
    is_view: bool = False
    # The last input role repeats: one or more inputs (CONCATENATION, PACK).
    variadic: bool = False
    # The rank each input role must have (None: any), checked by the verifier before `infer`.
    ranks: tuple[int | None, ...] = ()
    # What `infer` cannot see: channel counts that must agree, attributes in range. The
    # verifier runs it after `ranks`, before `infer`.
    check: CheckFn | None = None

    # --- traits: what the passes ask about an op ---
    # How post-training quantization makes it int8 (TFLite's scheme; quantize/ptq.py):
    #   "weighted"    per-channel symmetric int8 weights (output channels on `weight_axis`),
    #                 int32 bias, calibrated output
    #   "same"        moves bytes: the outputs keep the input's quantization
    #   "shared"      compares or joins raw values: inputs are requantized to the output's
    #   "fixed"       the int8 kernel fixes the output quantization, `fixed_output` = (scale, zp)
    #   "calibrated"  the output quantization comes from its calibrated range
    #   None          no int8 kernel in TFLite's scheme (stays float or is refused)
    quant: str | None = None
    weight_axis: int | None = None
    fixed_output: tuple[float, int] | None = None
    # How it meets a layout change (transform/cancel_transposes.py):
    #   "elementwise" every output element depends only on the same-index input elements
    #                 (after broadcasting), so any permutation of all operands commutes with it
    #   "axis"        layout-agnostic but with axis attributes, which are remapped
    #   None          layout-sensitive (NHWC convolutions, pools, ...) or not analysed
    layout: str | None = None
    # Whether its kernels may write the output over an input that dies with them
    # (memory/inplace.py says how far): "window" for NHWC convolution and pooling kernels
    # that write output pixels in row-major order; "rows" for the fused row groups
    # (ops_fused.py), which write a row of the output after the last read of that row of an
    # input; elementwise ops (layout "elementwise") are in place by default ("elementwise",
    # see inplace_kind); None: never.
    inplace: str | None = None
    # Has a bit-exact 16x8 form (int16 activations, int8 weights): an int16 variant of its
    # kernel, parameters and lowering (dtype="int16"), or a dtype-generic byte move. A model
    # with int16 activations on any other op is refused; PTQ to 16x8 keeps it in float32.
    int16: bool = False
    # Its dtype variant follows its inputs only (`variant`): softmax with int8 input and int16
    # output runs the int8 kernel with 16 output bits, not the int16 one.
    variant_by_input: bool = False
    # Computes on plain integers (no quantization parameters): raw int16 audio, int32,
    # uint32 and uint64 values of TFLM's signal ops (ops_signal.py), CAST. An int8/int16 tensor
    # without quantization may meet only such ops and byte moves (verify.BYTE_MOVES).
    plain_ints: bool = False

    def __post_init__(self):
        assert self.quant in QUANT_KINDS, f"{self.name}: quant trait {self.quant!r}"
        assert (self.weight_axis is not None) == (self.quant == "weighted"), self.name
        assert (self.fixed_output is not None) == (self.quant == "fixed"), self.name
        assert self.layout in LAYOUTS, f"{self.name}: layout trait {self.layout!r}"
        assert self.inplace in INPLACE_KINDS, f"{self.name}: inplace trait {self.inplace!r}"


QUANT_KINDS = (None, "weighted", "same", "shared", "fixed", "calibrated")
LAYOUTS = (None, "elementwise", "axis")
INPLACE_KINDS = (None, "elementwise", "window", "rows", "bands")


REGISTRY: dict[str, OpDef] = {}


def register(opdef: OpDef) -> OpDef:
    assert opdef.name not in REGISTRY, f"op {opdef.name} registered twice"
    REGISTRY[opdef.name] = opdef
    return opdef


def get(name: str) -> OpDef:
    return REGISTRY[name]


def inplace_kind(name: str) -> str | None:
    """How op `name`'s kernels may work in place: its `inplace` trait, else "elementwise" for
    an op whose layout trait is elementwise (every such kernel is one loop in index order)."""
    d = get(name)
    return d.inplace or ("elementwise" if d.layout == "elementwise" else None)


# The dtype variants an op's interpreter kernel, parameters and lowering may register
# separately (`@kernel("conv2d", dtype="int16")`): 16x8 quantization, where the
# activations are int16 and the arithmetic (int64 accumulators, int16 lookup tables)
# differs from int8's in every op.
VARIANTS = ("int16",)


def variant(g: Graph, n: Node) -> str | None:
    """"int16" when any activation (an input that is neither constant nor state, or an
    output) of `n` is quantized int16, else None. (An int8 LSTM's int16 cell state does not
    count, nor plain int16 numbers without quantization: raw audio, the signal ops'.)"""
    opdef = REGISTRY.get(n.op)      # an unknown op has no variant (its lowering names it)
    names = n.inputs if opdef is not None and opdef.variant_by_input else (*n.inputs, *n.outputs)
    ts = [g.tensors.get(name) for name in names if name]
    return "int16" if any(t is not None and t.dtype == "int16" and t.quant is not None
                          and not (t.is_const or t.variable) for t in ts) else None


def conv_out_size(size: int, k: int, stride: int, dilation: int, pad_lo: int, pad_hi: int) -> int:
    eff = (k - 1) * dilation + 1
    return (size + pad_lo + pad_hi - eff) // stride + 1


def same_padding(size: int, k: int, stride: int, dilation: int) -> tuple[int, int]:
    """TFLite SAME padding: output = ceil(size/stride), extra pixel at the end."""
    out = (size + stride - 1) // stride
    eff = (k - 1) * dilation + 1
    total = max((out - 1) * stride + eff - size, 0)
    return total // 2, total - total // 2


def in_tensor(g: Graph, n: Node, i: int):
    return g.tensors[n.inputs[i]]


def _spatial_out(n: Node, h: int, w: int, kh: int, kw: int) -> tuple[int, int]:
    sh, sw = n.attrs["stride"]
    dh, dw = n.attrs.get("dilation", (1, 1))
    top, left, bottom, right = n.attrs["padding"]
    return conv_out_size(h, kh, sh, dh, top, bottom), conv_out_size(w, kw, sw, dw, left, right)


def window_problem(n: Node) -> str | None:
    """Stride, dilation and filter at least 1, padding not negative (conv and pool attributes)."""
    for key in ("stride", "dilation", "filter"):
        if key in n.attrs and min(n.attrs[key]) < 1:
            return f"{key} {tuple(n.attrs[key])} must be at least 1"
    if min(n.attrs.get("padding", (0,))) < 0:
        return f"padding {tuple(n.attrs['padding'])} must not be negative"
    return None


def bias_problem(g: Graph, n: Node, channels: int) -> str | None:
    if len(n.inputs) > 2 and n.inputs[2] and g.tensors[n.inputs[2]].size != channels:
        return f"bias {n.inputs[2]} has {g.tensors[n.inputs[2]].size} values for {channels} output channels"
    return None


def channels_problem(g: Graph, n: Node) -> str | None:
    """conv2d and transpose_conv2d: the filter [out, kh, kw, in] must take the input's channels."""
    x, w = in_tensor(g, n, 0), in_tensor(g, n, 1)
    if x.shape[3] != w.shape[3]:
        return f"input {x.name} has {x.shape[3]} channels, filter {w.name} {w.shape} expects {w.shape[3]}"
    return None


def _check_conv2d(g, n):
    return channels_problem(g, n) or window_problem(n) or bias_problem(g, n, in_tensor(g, n, 1).shape[0])


def _check_depthwise(g, n):
    x, w = in_tensor(g, n, 0), in_tensor(g, n, 1)
    m = n.attrs.get("depth_multiplier", 1)
    if w.shape[0] != 1 or m < 1 or w.shape[3] != x.shape[3] * m:
        return (f"filter {w.name} {w.shape} does not fit input {x.name} {x.shape} with depth multiplier {m} "
                "(expected [1, kh, kw, channels * multiplier])")
    return window_problem(n) or bias_problem(g, n, w.shape[3])


def _check_fc(g, n):
    x, w = in_tensor(g, n, 0), in_tensor(g, n, 1)
    units, depth = w.shape
    if depth < 1 or units < 1 or x.size % depth:
        return f"input {x.name} {x.shape} cannot be viewed as rows of depth {depth} (weights {w.name} {w.shape})"
    return bias_problem(g, n, units)


def check_pool(g, n):
    return window_problem(n)


def _infer_conv2d(g, n):
    x, w = in_tensor(g, n, 0), in_tensor(g, n, 1)
    b, h, wd, _ = x.shape
    co, kh, kw, _ = w.shape
    oh, ow = _spatial_out(n, h, wd, kh, kw)
    return [((b, oh, ow, co), x.dtype)]


def _macs_conv2d(g, n):
    out = g.tensors[n.outputs[0]]
    _, kh, kw, ci = in_tensor(g, n, 1).shape
    return out.size * kh * kw * ci


def _infer_depthwise(g, n):
    x, w = in_tensor(g, n, 0), in_tensor(g, n, 1)
    b, h, wd, ci = x.shape
    _, kh, kw, co = w.shape
    oh, ow = _spatial_out(n, h, wd, kh, kw)
    return [((b, oh, ow, co), x.dtype)]


def _macs_depthwise(g, n):
    _, kh, kw, _ = in_tensor(g, n, 1).shape
    return g.tensors[n.outputs[0]].size * kh * kw


def _infer_fc(g, n):
    x, w = in_tensor(g, n, 0), in_tensor(g, n, 1)
    units, depth = w.shape
    rows = x.size // depth
    if n.attrs.get("keep_num_dims"):
        return [(tuple(x.shape[:-1]) + (units,), x.dtype)]
    return [((rows, units), x.dtype)]


def _macs_fc(g, n):
    return g.tensors[n.outputs[0]].size * in_tensor(g, n, 1).shape[1]


def infer_pool(g, n):
    x = in_tensor(g, n, 0)
    b, h, w, c = x.shape
    kh, kw = n.attrs["filter"]
    oh, ow = _spatial_out(n, h, w, kh, kw)
    return [((b, oh, ow, c), x.dtype)]


def _broadcast_shape(a, b):
    return tuple(np.broadcast_shapes(tuple(a), tuple(b)))


def _infer_binary(g, n):
    a, b = in_tensor(g, n, 0), in_tensor(g, n, 1)
    return [(_broadcast_shape(a.shape, b.shape), a.dtype)]


def _infer_reshape(g, n):
    x = in_tensor(g, n, 0)
    shape = list(n.attrs["shape"])
    if -1 in shape:
        known = elements([s for s in shape if s != -1])
        shape[shape.index(-1)] = x.size // known
    return [(tuple(shape), x.dtype)]


def same_as_input(g, n):
    x = in_tensor(g, n, 0)
    return [(x.shape, x.dtype)]


_CONV_ATTRS = {"stride": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0), "activation": "NONE"}

register(OpDef("conv2d", ("input", "filter", "bias"), optional=("bias",), attrs=dict(_CONV_ATTRS, rounding="tflite"),
               infer=_infer_conv2d, macs=_macs_conv2d, quant="weighted", weight_axis=0, inplace="window",
               ranks=(4, 4, 1), check=_check_conv2d, int16=True))
register(OpDef("depthwise_conv2d", ("input", "filter", "bias"), optional=("bias",),
               attrs=dict(_CONV_ATTRS, depth_multiplier=1, rounding="tflite"), infer=_infer_depthwise, macs=_macs_depthwise,
               quant="weighted", weight_axis=3, inplace="window", ranks=(4, 4, 1), check=_check_depthwise, int16=True))
register(OpDef("fully_connected", ("input", "weights", "bias"), optional=("bias",),
               attrs={"activation": "NONE", "keep_num_dims": False, "rounding": "tflite"}, infer=_infer_fc, macs=_macs_fc,
               quant="weighted", weight_axis=0, ranks=(None, 2, 1), check=_check_fc, int16=True))
def _matmul_dims(g: Graph, n: Node):
    a, b = g.tensors[n.inputs[0]], g.tensors[n.inputs[1]]
    m, k = a.shape[-2:][::-1] if n.attrs.get("adj_x") else a.shape[-2:]
    k2, cols = b.shape[-2:][::-1] if n.attrs.get("adj_y") else b.shape[-2:]
    return a, b, m, k, k2, cols


def _check_batch_matmul(g: Graph, n: Node):
    a, b = g.tensors[n.inputs[0]], g.tensors[n.inputs[1]]
    if len(a.shape) < 2 or len(b.shape) < 2:
        return f"batch_matmul needs operands of rank >= 2, got {list(a.shape)} and {list(b.shape)}"
    if a.dtype != b.dtype or a.dtype not in ("float32", "int8", "int16"):
        return f"batch_matmul takes two float32, int8 or int16 operands, not {a.dtype} and {b.dtype}"
    _, _, _, k, k2, _ = _matmul_dims(g, n)
    if k != k2:
        return f"batch_matmul inner dimensions differ ({k} vs {k2})"
    try:
        np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    except ValueError:
        return f"batch dims {list(a.shape[:-2])} and {list(b.shape[:-2])} do not broadcast"
    return None


def _infer_batch_matmul(g: Graph, n: Node):
    """TFLite's BATCH_MATMUL: [..., M, K] x [..., K, N] -> [..., M, N], batch dims broadcast;
    adj_x / adj_y transpose the last two dims of lhs / rhs first."""
    a, b, m, _, _, cols = _matmul_dims(g, n)
    batch = np.broadcast_shapes(tuple(a.shape[:-2]), tuple(b.shape[:-2]))
    return [((*batch, m, cols), a.dtype)]


def _macs_batch_matmul(g: Graph, n: Node) -> int:
    a = g.tensors[n.inputs[0]]
    k = a.shape[-2] if n.attrs.get("adj_x") else a.shape[-1]
    return int(np.prod(g.tensors[n.outputs[0]].shape, dtype=np.int64)) * int(k)


# Two runtime operands (attention's Q K^T and P V); float32, int8 (PTQ: per-tensor int8
# operands, the output calibrated, as TFLite's int8 BATCH_MATMUL) and int16 (16x8: symmetric
# int16 operands, an int64 sum).
register(OpDef("batch_matmul", ("lhs", "rhs"), attrs={"adj_x": False, "adj_y": False}, infer=_infer_batch_matmul,
               macs=_macs_batch_matmul, check=_check_batch_matmul, quant="calibrated", int16=True))
register(OpDef("average_pool2d", ("input",),
               attrs={"filter": (1, 1), "stride": (1, 1), "padding": (0, 0, 0, 0), "activation": "NONE"},
               infer=infer_pool, quant="same", inplace="window", ranks=(4,), check=check_pool))
register(OpDef("add", ("lhs", "rhs"), attrs={"activation": "NONE"}, infer=_infer_binary, quant="calibrated",
               layout="elementwise", int16=True))
register(OpDef("reshape", ("input",), attrs={"shape": ()}, infer=_infer_reshape, is_view=True, quant="same",
               int16=True))
def _infer_softmax(g: Graph, n: Node):
    """The input's shape and dtype, except int8 in, int16 out (TFLite's Softmax<int8_t,
    int16_t>, named by the output tensor)."""
    x, out = in_tensor(g, n, 0), g.tensors.get(n.outputs[0])
    dtype = "int16" if x.dtype == "int8" and out is not None and out.dtype == "int16" else x.dtype
    return [(x.shape, dtype)]


register(OpDef("softmax", ("input",), attrs={"beta": 1.0}, infer=_infer_softmax, quant="fixed", variant_by_input=True,
               fixed_output=(1 / 256, -128), layout="axis", int16=True))
# Standalone activations. The fuse_activation pass folds them into their producer when
# that is exact; the ones left over run as their own kernels.
for _act in ("relu", "relu6", "relu_n1_to_1"):
    register(OpDef(_act, ("input",), infer=same_as_input, quant="calibrated", layout="elementwise"))

# Activation fused into a producer by `fuse_activation`, keyed by standalone op name.
STANDALONE_ACTIVATION = {"relu": "RELU", "relu6": "RELU6", "relu_n1_to_1": "RELU_N1_TO_1"}
