"""Op definitions of the 2D vision family: transpose_conv2d, max_pool2d, mean, pad, pad_v2,
resize_nearest_neighbor, resize_bilinear (NHWC; int8 and float32).

Constant operands TFLite passes as tensors (paddings, axes, sizes, output shape) are
attributes here, as RESHAPE's shape is: the frontend reads them, the writer re-emits them.

  transpose_conv2d  stride=(sh, sw); output_hw=(oh, ow) from TFLite's output_shape input;
                    padding=(top, left, bottom, right) with TFLite's rule on the *output*
                    size, so out = (in - 1) * stride + k - top - bottom.
  mean              axes (sorted, non-negative), keep_dims.
  pad / pad_v2      pads=((before, after), ...) per dimension; pad_v2 carries `value`, the
                    fill in the tensor's own number space (raw int8 or float).
  resize_*          size=(oh, ow), align_corners, half_pixel_centers.
"""

from __future__ import annotations

import numpy as np

from .ops import OpDef, bias_problem, channels_problem, check_pool, in_tensor, infer_pool, register, window_problem


def _infer_transpose_conv(g, n):
    x, w = in_tensor(g, n, 0), in_tensor(g, n, 1)
    oh, ow = n.attrs["output_hw"]
    return [((x.shape[0], oh, ow, w.shape[0]), x.dtype)]


def _check_transpose_conv(g, n):
    if min(n.attrs["output_hw"]) < 1:
        return f"output size {tuple(n.attrs['output_hw'])} must be at least 1"
    return channels_problem(g, n) or window_problem(n) or bias_problem(g, n, in_tensor(g, n, 1).shape[0])


def _check_pad(g, n):
    pads, rank = n.attrs["pads"], len(in_tensor(g, n, 0).shape)
    if len(pads) != rank or any(len(p) != 2 or min(p) < 0 for p in pads):
        return f"pads {pads} must be one (before, after) pair of non-negative sizes per dimension ({rank})"
    value = n.attrs.get("value", 0)
    if in_tensor(g, n, 0).dtype == "int8" and not (value == int(value) and -128 <= value <= 127):
        return f"the int8 fill value {value} is not an int8 value"
    return None


def _check_resize(g, n):
    return f"output size {tuple(n.attrs['size'])} must be at least 1" if min(n.attrs["size"]) < 1 else None


def check_reduce(g, n):
    rank = len(in_tensor(g, n, 0).shape)
    bad = [a for a in n.attrs["axes"] if not 0 <= a < rank]
    return f"axes {tuple(n.attrs['axes'])} out of range for rank {rank}" if bad else None


def _macs_transpose_conv(g, n):
    # Every input element meets every filter tap of every output channel (TFLite's scatter).
    co, kh, kw, _ = in_tensor(g, n, 1).shape
    return in_tensor(g, n, 0).size * kh * kw * co


def infer_reduce(g, n):
    x = in_tensor(g, n, 0)
    axes = set(n.attrs["axes"])
    keep = n.attrs.get("keep_dims", False)
    shape = tuple(1 if i in axes else d for i, d in enumerate(x.shape) if keep or i not in axes)
    return [(shape, x.dtype)]


def _infer_pad(g, n):
    x = in_tensor(g, n, 0)
    pads = n.attrs["pads"]
    return [(tuple(d + lo + hi for d, (lo, hi) in zip(x.shape, pads)), x.dtype)]


def _infer_resize(g, n):
    b, _, _, c = in_tensor(g, n, 0).shape
    oh, ow = n.attrs["size"]
    return [((b, oh, ow, c), in_tensor(g, n, 0).dtype)]


def _macs_window(g, n):
    """Comparisons (max pool) or additions (mean) as the MAC count: one per input read."""
    kh, kw = n.attrs.get("filter", (1, 1))
    return g.tensors[n.outputs[0]].size * kh * kw


def macs_reduce(g, n):
    return in_tensor(g, n, 0).size


def _macs_bilinear(g, n):
    return g.tensors[n.outputs[0]].size * 4   # four weighted taps per output


_RESIZE_ATTRS = {"size": (1, 1), "align_corners": False, "half_pixel_centers": False}

# output_shape_input: the model input TFLite's output_shape operand came from (TFLM's seanet
# models compute it at run time; the kernel takes the stored shape and reads nothing from it),
# kept so that the writer writes the model back as it was; "" for a constant output shape.
register(OpDef("transpose_conv2d", ("input", "filter", "bias"), optional=("bias",),
               attrs={"stride": (1, 1), "padding": (0, 0, 0, 0), "output_hw": (1, 1), "activation": "NONE",
                      "output_shape_input": ""},
               infer=_infer_transpose_conv, macs=_macs_transpose_conv, quant="weighted", weight_axis=0,
               ranks=(4, 4, 1), check=_check_transpose_conv, int16=True))
register(OpDef("max_pool2d", ("input",),
               attrs={"filter": (1, 1), "stride": (1, 1), "padding": (0, 0, 0, 0), "activation": "NONE"},
               infer=infer_pool, macs=_macs_window, quant="same", inplace="window", ranks=(4,), check=check_pool))
register(OpDef("mean", ("input",), attrs={"axes": (), "keep_dims": False, "rounding": "tflite"}, infer=infer_reduce, macs=macs_reduce,
               quant="calibrated", layout="axis", check=check_reduce))
register(OpDef("pad", ("input",), attrs={"pads": ()}, infer=_infer_pad, quant="same", layout="axis",
               check=_check_pad, int16=True))
# pad_v2 keeps float32 under PTQ: its fill value is not representable in general.
register(OpDef("pad_v2", ("input",), attrs={"pads": (), "value": 0}, infer=_infer_pad, layout="axis",
               check=_check_pad))
register(OpDef("resize_nearest_neighbor", ("input",), attrs=dict(_RESIZE_ATTRS), infer=_infer_resize, quant="same",
               ranks=(4,), check=_check_resize))
register(OpDef("resize_bilinear", ("input",), attrs=dict(_RESIZE_ATTRS), infer=_infer_resize,
               macs=_macs_bilinear, quant="same", ranks=(4,), check=_check_resize))


def normalize_axes(axes, rank: int) -> tuple[int, ...]:
    """TFLite MEAN axes (may be negative, repeated) as sorted unique non-negative ints."""
    return tuple(sorted({int(a) % rank for a in np.atleast_1d(axes)}))
