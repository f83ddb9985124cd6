"""Elementwise ops: binary arithmetic with broadcasting, activations, (de)quantization.

  sub, mul                      NumPy broadcasting, fused `activation` clamp (as ADD)
  div                           as sub/mul; float32 and int32 (LiteRT's DIV has no int8 kernel)
  (add, sub, mul, div, maximum and minimum also take plain int32: reference/plain.py)
  maximum, minimum              NumPy broadcasting; int8 compares raw values (no rescale)
  where                         condition (int32, 0 false), x, y: NumPy broadcasting; float32, int32
  squared_difference            NumPy broadcasting, at most 4-D (TFLite's 4DSlow kernel)
  leaky_relu                    attr alpha
  prelu                         input, alpha (a tensor broadcast against the input)
  logistic, tanh, hard_swish    unary
  abs                           unary
  rsqrt                         unary; int8 as LiteRT's fixed-point 1/sqrt (a table), float32 1/sqrtf
  log_softmax                   over the last axis
  quantize                      float32 -> int8/int16, or int8/int16 -> int8/int16 (requantize)
  dequantize                    int8/int16 -> float32

int8 semantics (what LiteRT BUILTIN_REF computes) live in `reference.elementwise`.
"""

from __future__ import annotations

import numpy as np

from .budget import elements
from .graph import Graph, Node
from .ops import OpDef, in_tensor, same_as_input, register
from .verify import VerifyError

BINARY_OPS = ("sub", "mul", "maximum", "minimum", "squared_difference")
# Unary int8 ops whose output is a pure function of the input byte: they run as a
# 256-entry table built on the host (reference.elementwise.int8_table).
TABLE_OPS = ("leaky_relu", "logistic", "tanh", "hard_swish", "abs", "rsqrt", "quantize", "dequantize")


def _broadcast_shape(n: Node, a, b) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(tuple(a), tuple(b)))
    except ValueError:
        raise VerifyError(f"{n.name}: {n.op} shapes {tuple(a)} and {tuple(b)} do not broadcast") from None


def _infer_binary(g: Graph, n: Node):
    a, b = in_tensor(g, n, 0), in_tensor(g, n, 1)
    if a.dtype != b.dtype:
        raise VerifyError(f"{n.name}: {n.op} of {a.dtype} and {b.dtype}")
    if n.op == "div" and a.dtype not in ("float32", "int32"):
        raise VerifyError(f"{n.name}: div of {a.dtype} (float32 and int32 only)")
    shape = _broadcast_shape(n, a.shape, b.shape)
    if n.op == "squared_difference" and len(shape) > 4:
        raise VerifyError(f"{n.name}: squared_difference supports at most 4-D, got {shape}")
    return [(shape, a.dtype)]


def _infer_prelu(g: Graph, n: Node):
    x, alpha = in_tensor(g, n, 0), in_tensor(g, n, 1)
    if _broadcast_shape(n, x.shape, alpha.shape) != tuple(x.shape):
        raise VerifyError(f"{n.name}: prelu alpha {alpha.shape} does not broadcast to {x.shape}")
    return [(x.shape, x.dtype)]


# QUANTIZE's (input, output) dtypes: TFLite names the output type by its tensor (int16 <->
# int8 and float32 -> int16 in 16x8 models; int16 <-> int32 around TFLM's int32 ops).
QUANTIZE_PAIRS = {("float32", "int8"), ("float32", "int16"), ("int8", "int8"), ("int8", "int16"), ("int16", "int8"),
                  ("int16", "int16"), ("int16", "int32"), ("int32", "int16")}


def _infer_quantize(g: Graph, n: Node):
    x, out = in_tensor(g, n, 0), g.tensors.get(n.outputs[0])
    dtype = out.dtype if out is not None and out.dtype in ("int8", "int16", "int32") else "int8"
    if (x.dtype, dtype) not in QUANTIZE_PAIRS:
        raise VerifyError(f"{n.name}: quantize of {x.dtype} to {dtype} is not supported (microcompile quantizes "
                          f"{', '.join(sorted(f'{a} to {b}' for a, b in QUANTIZE_PAIRS))})")
    return [(x.shape, dtype)]


def _infer_dequantize(g: Graph, n: Node):
    return [(in_tensor(g, n, 0).shape, "float32")]


def _elements(g: Graph, n: Node) -> int:
    """One multiply per output element (the MAC column of `inspect`)."""
    return elements(g.tensors[n.outputs[0]].shape)


# Every op here is elementwise for cancel_transposes. PTQ: div, quantize and dequantize have
# no int8 form in TFLite's scheme (LiteRT's DIV has no int8 kernel).
for _op in ("sub", "mul", "div"):
    register(OpDef(_op, ("lhs", "rhs"), attrs={"activation": "NONE", **({"rounding": "tflite"} if _op == "mul" else {})},
                   infer=_infer_binary,
                   macs=_elements if _op in ("mul", "div") else (lambda g, n: 0),
                   quant=None if _op == "div" else "calibrated", layout="elementwise", int16=_op != "div"))
for _op in ("maximum", "minimum", "squared_difference"):
    register(OpDef(_op, ("lhs", "rhs"), infer=_infer_binary,
                   macs=_elements if _op == "squared_difference" else (lambda g, n: 0),
                   quant="calibrated" if _op == "squared_difference" else "shared", layout="elementwise"))
def _infer_where(g: Graph, n: Node):
    c, x, y = (in_tensor(g, n, i) for i in range(3))
    if c.dtype != "int32" or c.quant is not None:
        raise VerifyError(f"{n.name}: where's condition is {c.dtype}; it must be int32 (0: false)")
    if x.dtype != y.dtype or x.dtype not in ("float32", "int32"):
        raise VerifyError(f"{n.name}: where of {x.dtype} and {y.dtype} (float32 or int32, both the same)")
    return [(_broadcast_shape(n, _broadcast_shape(n, c.shape, x.shape), y.shape), x.dtype)]


# ONNX Where, ATen where: x where the condition is not 0, else y, NumPy broadcasting; float32
# and int32 (PTQ keeps it float: a masked value far below the scores would take the int8
# range). A constant mask of a PyTorch program is folded at import (frontend/pytorch/aten.py).
register(OpDef("where", ("condition", "x", "y"), infer=_infer_where, layout="elementwise"))
register(OpDef("leaky_relu", ("input",), attrs={"alpha": 0.2}, infer=same_as_input, quant="calibrated",
               layout="elementwise", int16=True))
register(OpDef("prelu", ("input", "alpha"), infer=_infer_prelu, quant="calibrated", layout="elementwise"))
register(OpDef("logistic", ("input",), infer=same_as_input, quant="fixed", fixed_output=(1 / 256, -128),
               layout="elementwise", int16=True))
register(OpDef("tanh", ("input",), infer=same_as_input, quant="fixed", fixed_output=(1 / 128, 0),
               layout="elementwise", int16=True))
register(OpDef("hard_swish", ("input",), infer=same_as_input, quant="calibrated", layout="elementwise"))
register(OpDef("abs", ("input",), infer=same_as_input, quant="calibrated", layout="elementwise"))
# Layer norm's square root (float32 only: PTQ leaves it float), and GELU (`approximate` False:
# x/2 (1 + erf(x/sqrt 2)), True: the tanh form), as PyTorch and ONNX define them; int8 GELU is
# LiteRT's 256-entry table.
register(OpDef("sqrt", ("input",), infer=same_as_input, layout="elementwise"))
# TFLite's RSQRT (the converter's layer norm): float32, and int8 as every TFLite int8 layer norm
# has it (LiteRT's fixed-point kernel; PTQ calibrates its output). int16 (LiteRT's 513-entry
# interpolated table) is not supported.
register(OpDef("rsqrt", ("input",), infer=same_as_input, quant="calibrated", layout="elementwise"))
# float32 only: ONNX's Erf (older exports' GELU).
register(OpDef("erf", ("input",), infer=same_as_input, layout="elementwise"))
register(OpDef("gelu", ("input",), attrs={"approximate": False}, infer=same_as_input, quant="calibrated",
               layout="elementwise"))
register(OpDef("log_softmax", ("input",), infer=same_as_input, quant="fixed", fixed_output=(16 / 256, 127),
               layout="axis"))
register(OpDef("quantize", ("input",), attrs={"rounding": "tflite"}, infer=_infer_quantize, layout="elementwise", int16=True))
register(OpDef("dequantize", ("input",), infer=_infer_dequantize, layout="elementwise", int16=True))
