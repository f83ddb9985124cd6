"""Test plans and graph builders of the vision family (microcompile/ir/ops_vision.py):
transpose_conv2d, max_pool2d, mean, pad, pad_v2, resize_nearest_neighbor, resize_bilinear.

Merged into op_cases.PLANS / op_cases.BUILDERS on import, so every differential test that
walks PLANS (interpreter vs LiteRT, whole compiler on host gcc vs LiteRT) covers them.
"""

from __future__ import annotations

import numpy as np

from support.op_cases import ACTS, BUILDERS, PLANS, _explicit_padding
from microcompile.ir import QuantParams, ops

# (input shape, axes) pairs: H and W of NHWC (the special 4-D path of TFLite), and others.
_MEAN_CASES = (((1, 5, 6, 3), (1, 2)), ((2, 4, 4, 8), (2, 1)), ((1, 7, 7, 16), (1, 2)), ((1, 5, 6, 3), (3,)),
               ((2, 3, 4, 5), (1,)), ((2, 3, 4, 5), (0, 2)), ((1, 7, 3), (-1,)), ((3, 10), (1,)),
               ((2, 3, 4, 5), (1, 2, 3)), ((4, 6), (0,)), ((1, 1, 9, 4), (1, 2)))
# (input shape, pads) pairs, rank 1 to 4, including no padding at all.
_PAD_CASES = (((1, 4, 5, 3), ((0, 0), (1, 1), (2, 0), (0, 0))), ((2, 3, 3, 2), ((0, 1), (0, 0), (1, 2), (1, 0))),
              ((1, 6), ((0, 0), (2, 3))), ((5,), ((1, 2),)), ((1, 2, 3, 4), ((1, 0), (0, 1), (2, 2), (0, 3))),
              ((1, 3, 3, 1), ((0, 0),) * 4), ((2, 4, 3), ((0, 0), (3, 1), (0, 2))))
# (align_corners, half_pixel_centers): TFLite rejects both at once.
_RESIZE_MODES = ((False, False), (True, False), (False, True), (False, False))
_RESIZE = {"batch": (1, 1, 2), "hw": ((2, 2), (3, 5), (5, 4), (8, 8), (1, 3)),
           "size": ((4, 4), (3, 7), (6, 2), (1, 1), (16, 10), (5, 5), (2, 9)), "c": (1, 3, 4),
           "mode": _RESIZE_MODES}

PLANS.update({
    "transpose_conv2d": {"batch": (1, 1, 2), "hw": (2, 3, 5), "cin": (1, 3, 8), "cout": (1, 4, 6),
                         "kernel": (1, 2, 3, 4), "stride": (1, 2, 3), "padding": ("SAME", "VALID"),
                         "activation": ACTS, "per_channel": (True, True, False), "bias": (True, True, False),
                         "pot_scales": (False, False, True)},
    "max_pool2d": {"batch": (1, 2), "hw": (2, 5, 8), "c": (1, 4), "kernel": (1, 2, 3), "stride": (1, 2, 3),
                   "padding": ("SAME", "VALID"), "activation": ACTS},
    "mean": {"case": _MEAN_CASES, "keep_dims": (True, False), "requant": (False, True, True),
             "pot_scales": (False, False, True)},
    "pad": {"case": _PAD_CASES},
    "pad_v2": {"case": _PAD_CASES},
    "resize_nearest_neighbor": dict(_RESIZE),
    "resize_bilinear": dict(_RESIZE),
})


def _transpose_conv2d(case, b):
    k, s = case["kernel"], case["stride"]
    hw = (case["hw"], case["hw"] + 1)
    x = b.act("x", (case["batch"],) + hw + (case["cin"],))
    cout = case["cout"]
    w = b.weights("w", (cout, k, k, case["cin"]), cout, case["per_channel"], 0)
    # TF's conv2d_transpose output sizes: SAME in*s, VALID in*s + max(k - s, 0).
    out_hw = tuple(d * s + (max(k - s, 0) if case["padding"] == "VALID" else 0) for d in hw)
    padding = (0, 0, 0, 0)
    if case["padding"] == "SAME":   # TFLite's SAME rule, applied to the output size
        (t, bo), (l, r) = (ops.same_padding(out_hw[i], k, s, 1) for i in (0, 1))
        padding = (t, l, bo, r)
    attrs = {"stride": (s, s), "padding": padding, "output_hw": out_hw, "activation": case["activation"]}
    bias = b.bias("b", cout, x, w) if case["bias"] else ""
    out_q = b.output_quant(None, x, w)
    if out_q is not None:   # each output sums about k*k*cin/s^2 taps, not k*k*cin
        out_q = QuantParams((float(np.float32(out_q.s / s)),), out_q.zero_point)
    return (x, w, bias), attrs, out_q


def _max_pool2d(case, b):
    k, s = case["kernel"], case["stride"]
    hw = (case["hw"], case["hw"] + 1)
    x = b.act("x", (case["batch"],) + hw + (case["c"],))
    attrs = {"filter": (k, k), "stride": (s, s), "activation": case["activation"],
             "padding": _explicit_padding(case["padding"], hw, (k, k), (s, s), (1, 1))}
    return (x,), attrs, b.tensors[x].quant


def _mean(case, b):
    shape, axes = case["case"]
    x = b.act("x", shape)
    attrs = {"axes": tuple(sorted(a % len(shape) for a in axes)), "keep_dims": case["keep_dims"]}
    return (x,), attrs, (None if case["requant"] else b.tensors[x].quant)


def _pad(case, b):
    shape, pads = case["case"]
    x = b.act("x", shape)
    attrs = {"pads": pads}
    if case["op"] == "pad_v2":
        attrs["value"] = (int(b.rng.integers(-128, 128)) if b.int8
                          else float(np.float32(b.rng.normal(0, 2))))
    return (x,), attrs, b.tensors[x].quant


def _resize(case, b):
    x = b.act("x", (case["batch"],) + case["hw"] + (case["c"],))
    ac, hpc = case["mode"]
    return (x,), {"size": case["size"], "align_corners": ac, "half_pixel_centers": hpc}, b.tensors[x].quant


BUILDERS.update({"transpose_conv2d": _transpose_conv2d, "max_pool2d": _max_pool2d, "mean": _mean,
                 "pad": _pad, "pad_v2": _pad, "resize_nearest_neighbor": _resize, "resize_bilinear": _resize})
