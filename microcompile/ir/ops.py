"""The op registry: the one place an op is defined.

Each `OpDef` declares its inputs, its attributes with defaults, shape/type inference,
a MAC count and extra verification. Passes, the interpreter and lowering all look ops
up here; nothing else hard-codes an op's arity or attributes.

Attribute conventions (all ops are NHWC):
  stride=(sh, sw), dilation=(dh, dw), padding=(top, left, bottom, right) explicit pixels,
  activation in ACTIVATIONS (a fused clamp applied after the op, before the store).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .graph import Graph, Node

ACTIVATIONS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")

InferFn = Callable[[Graph, Node], list[tuple[tuple[int, ...], str]]]


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


REGISTRY: dict[str, OpDef] = {}


def register(opdef: OpDef) -> OpDef:
    assert opdef.name not in REGISTRY, f"op {opdef.name} registered twice"
    REGISTRY[opdef.name] = opdef
    return opdef


def get(name: str) -> OpDef:
    return REGISTRY[name]


def conv_out_size(size: int, k: int, stride: int, dilation: int, pad_lo: int, pad_hi: int) -> int:
    eff = (k - 1) * dilation + 1
    return (size + pad_lo + pad_hi - eff) // stride + 1


def same_padding(size: int, k: int, stride: int, dilation: int) -> tuple[int, int]:
    """TFLite SAME padding: output = ceil(size/stride), extra pixel at the end."""
    out = (size + stride - 1) // stride
    eff = (k - 1) * dilation + 1
    total = max((out - 1) * stride + eff - size, 0)
    return total // 2, total - total // 2


def _in(g: Graph, n: Node, i: int):
    return g.tensors[n.inputs[i]]


def _spatial_out(n: Node, h: int, w: int, kh: int, kw: int) -> tuple[int, int]:
    sh, sw = n.attrs["stride"]
    dh, dw = n.attrs.get("dilation", (1, 1))
    top, left, bottom, right = n.attrs["padding"]
    return conv_out_size(h, kh, sh, dh, top, bottom), conv_out_size(w, kw, sw, dw, left, right)


def _infer_conv2d(g, n):
    x, w = _in(g, n, 0), _in(g, n, 1)
    b, h, wd, _ = x.shape
    co, kh, kw, _ = w.shape
    oh, ow = _spatial_out(n, h, wd, kh, kw)
    return [((b, oh, ow, co), x.dtype)]


def _macs_conv2d(g, n):
    out = g.tensors[n.outputs[0]]
    _, kh, kw, ci = _in(g, n, 1).shape
    return out.size * kh * kw * ci


def _infer_depthwise(g, n):
    x, w = _in(g, n, 0), _in(g, n, 1)
    b, h, wd, ci = x.shape
    _, kh, kw, co = w.shape
    oh, ow = _spatial_out(n, h, wd, kh, kw)
    return [((b, oh, ow, co), x.dtype)]


def _macs_depthwise(g, n):
    _, kh, kw, _ = _in(g, n, 1).shape
    return g.tensors[n.outputs[0]].size * kh * kw


def _infer_fc(g, n):
    x, w = _in(g, n, 0), _in(g, n, 1)
    units, depth = w.shape
    rows = x.size // depth
    if n.attrs.get("keep_num_dims"):
        return [(tuple(x.shape[:-1]) + (units,), x.dtype)]
    return [((rows, units), x.dtype)]


def _macs_fc(g, n):
    return g.tensors[n.outputs[0]].size * _in(g, n, 1).shape[1]


def _infer_pool(g, n):
    x = _in(g, n, 0)
    b, h, w, c = x.shape
    kh, kw = n.attrs["filter"]
    oh, ow = _spatial_out(n, h, w, kh, kw)
    return [((b, oh, ow, c), x.dtype)]


def _broadcast_shape(a, b):
    return tuple(np.broadcast_shapes(tuple(a), tuple(b)))


def _infer_binary(g, n):
    a, b = _in(g, n, 0), _in(g, n, 1)
    return [(_broadcast_shape(a.shape, b.shape), a.dtype)]


def _infer_reshape(g, n):
    x = _in(g, n, 0)
    shape = list(n.attrs["shape"])
    if -1 in shape:
        known = int(np.prod([s for s in shape if s != -1]))
        shape[shape.index(-1)] = x.size // known
    return [(tuple(shape), x.dtype)]


def _same_as_input(g, n):
    x = _in(g, n, 0)
    return [(x.shape, x.dtype)]


_CONV_ATTRS = {"stride": (1, 1), "dilation": (1, 1), "padding": (0, 0, 0, 0), "activation": "NONE"}

register(OpDef("conv2d", ("input", "filter", "bias"), optional=("bias",), attrs=dict(_CONV_ATTRS),
               infer=_infer_conv2d, macs=_macs_conv2d))
register(OpDef("depthwise_conv2d", ("input", "filter", "bias"), optional=("bias",),
               attrs=dict(_CONV_ATTRS, depth_multiplier=1), infer=_infer_depthwise, macs=_macs_depthwise))
register(OpDef("fully_connected", ("input", "weights", "bias"), optional=("bias",),
               attrs={"activation": "NONE", "keep_num_dims": False}, infer=_infer_fc, macs=_macs_fc))
register(OpDef("average_pool2d", ("input",),
               attrs={"filter": (1, 1), "stride": (1, 1), "padding": (0, 0, 0, 0), "activation": "NONE"},
               infer=_infer_pool))
register(OpDef("add", ("lhs", "rhs"), attrs={"activation": "NONE"}, infer=_infer_binary))
register(OpDef("reshape", ("input",), attrs={"shape": ()}, infer=_infer_reshape, is_view=True))
register(OpDef("softmax", ("input",), attrs={"beta": 1.0}, infer=_same_as_input))
# Standalone activations. The fuse_activation pass folds them into their producer when
# that is exact; the ones left over run as their own kernels.
for _act in ("relu", "relu6", "relu_n1_to_1"):
    register(OpDef(_act, ("input",), infer=_same_as_input))

# Activation fused into a producer by `fuse_activation`, keyed by standalone op name.
STANDALONE_ACTIVATION = {"relu": "RELU", "relu6": "RELU6", "relu_n1_to_1": "RELU_N1_TO_1"}
