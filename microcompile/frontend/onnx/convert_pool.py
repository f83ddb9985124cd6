"""MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool, ReduceMean, ReduceMax (reduce_max).

The IR's pools exclude padding from the window (max over real pixels, average divided by
the in-bounds count), which is ONNX's MaxPool and its AveragePool with
count_include_pad=0. count_include_pad=1 pads with zeros first (a PAD op) and pools
without padding. ceil_mode adds bottom/right padding so the floor formula of the IR
yields ONNX's ceil output size (the last window must start inside the padded input).
"""

from __future__ import annotations

import numpy as np

from ...ir.ops import conv_out_size
from .registry import converter
from .convert_conv import spatial_output, spatial_input, conv_padding


def _pool(our_op: str):
    def convert(ctx, node):
        if len(node.output) > 1 and node.output[1]:
            ctx.unsupported(node, "the Indices output of MaxPool")
        x, one_d = spatial_input(ctx, node, ctx.ir(node.input[0]))
        _, c, h, w = ctx.tensors[x].shape
        k = [int(v) for v in ctx.attr(node, "kernel_shape")]
        k = (1, k[0]) if one_d else tuple(k)
        stride = tuple((1,) + tuple(ctx.attr(node, "strides")) if one_d else ctx.attr(node, "strides")) \
            if ctx.attr(node, "strides") is not None else (1, 1)
        if any(d != 1 for d in ctx.attr(node, "dilations", [1])):
            ctx.unsupported(node, "dilated pooling")
        top, left, bottom, right = conv_padding(ctx, node, (h, w), k, stride, (1, 1), one_d)
        if ctx.attr(node, "ceil_mode", 0):
            bottom = _ceil_extra(h, k[0], stride[0], top, bottom)
            right = _ceil_extra(w, k[1], stride[1], left, right)
        xn = ctx.to_nhwc(x)
        if our_op == "average_pool2d" and ctx.attr(node, "count_include_pad", 0) and (top or left or bottom or right):
            if ctx.attr(node, "ceil_mode", 0):
                ctx.unsupported(node, "ceil_mode together with count_include_pad")
            xn = ctx.emit1("pad", [xn], {"pads": ((0, 0), (top, bottom), (left, right), (0, 0))})
            top = left = bottom = right = 0
        y = ctx.emit1(our_op, [xn], {"filter": k, "stride": tuple(int(s) for s in stride),
                                     "padding": (top, left, bottom, right)})
        spatial_output(ctx, node, y, one_d)
    return convert


def _ceil_extra(size: int, k: int, s: int, lo: int, hi: int) -> int:
    """End padding that makes the floor output size equal ONNX's ceil_mode size."""
    floor_out = conv_out_size(size, k, s, 1, lo, hi)
    out = -(-(size + lo + hi - k) // s) + 1
    if (out - 1) * s >= size + lo:   # a window may not start in the end padding
        out -= 1
    return hi + (out - floor_out) * s if out > floor_out else hi


converter("MaxPool")(_pool("max_pool2d"))
converter("AveragePool")(_pool("average_pool2d"))


@converter("GlobalAveragePool")
def _global_average_pool(ctx, node):
    x = ctx.ir(node.input[0])
    rank = len(ctx.tensors[x].shape)
    ctx.emit1("mean", [x], {"axes": tuple(range(2, rank)), "keep_dims": True}, out=node.output[0])


@converter("GlobalMaxPool")
def _global_max_pool(ctx, node):
    x, one_d = spatial_input(ctx, node, ctx.ir(node.input[0]))
    _, _, h, w = ctx.tensors[x].shape
    y = ctx.emit1("max_pool2d", [ctx.to_nhwc(x)], {"filter": (h, w), "stride": (1, 1)})
    spatial_output(ctx, node, y, one_d)


def reduce_axes(ctx, node, rank: int, axes_input_from: int) -> tuple[int, ...] | None:
    """Sorted non-negative axes, or None for 'reduce nothing' (noop_with_empty_axes)."""
    if ctx.opset >= axes_input_from:   # ReduceMean/ReduceMax: axes moved to an input in opset 18
        axes = ctx.const(node.input[1]) if len(node.input) > 1 and node.input[1] else None
        if len(node.input) > 1 and node.input[1] and axes is None:
            ctx.unsupported(node, "runtime axes (they must be constants)")
    else:
        axes = ctx.attr(node, "axes")
    if axes is None or np.size(axes) == 0:
        if ctx.attr(node, "noop_with_empty_axes", 0):
            return None
        return tuple(range(rank))
    return tuple(sorted({int(a) % rank for a in np.atleast_1d(axes)}))


@converter("ReduceMean")
def _reduce_mean(ctx, node):
    x = ctx.ir(node.input[0])
    rank = len(ctx.tensors[x].shape)
    axes = reduce_axes(ctx, node, rank, 18)
    if axes is None:
        ctx.bind(node.output[0], x)
        return
    ctx.emit1("mean", [x], {"axes": axes, "keep_dims": bool(ctx.attr(node, "keepdims", 1))}, out=node.output[0])


@converter("ReduceMax")
def _reduce_max(ctx, node):
    x = ctx.ir(node.input[0])
    axes = reduce_axes(ctx, node, len(ctx.tensors[x].shape), 18)
    if axes is None:
        ctx.bind(node.output[0], x)
        return
    ctx.emit1("reduce_max", [x], {"axes": axes, "keep_dims": bool(ctx.attr(node, "keepdims", 1))},
              out=node.output[0])
