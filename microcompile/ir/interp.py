"""The numpy reference interpreter: executes any Graph; the oracle for every other stage.

int8 results are bit-exact with LiteRT's reference kernels (BUILTIN_REF): every integer
parameter comes from `qparams` (the same numbers the C lowering uses) and every rounding
step from `fixedpoint`. float32 ops compute in float32 as TFLite does (summation order
differs, so results agree to about 1e-6 relative).

Integer convolutions accumulate in float64 matmuls: int8 products summed over any
realistic window stay far below 2^53, so the float64 result is exact and BLAS-fast.
"""

from __future__ import annotations

from typing import Callable

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import fixedpoint as fp
from . import qparams as qp
from .graph import NP_DTYPES, Graph, Node


def run(graph: Graph, inputs: dict[str, np.ndarray], keep_all: bool = False) -> dict[str, np.ndarray]:
    """Execute `graph` on `inputs` (by input tensor name).

    Returns the graph outputs by name, or every tensor (constants included) with keep_all.
    Raises ValueError when an input is missing, or has the wrong dtype or shape.
    """
    env: dict[str, np.ndarray] = {name: t.data for name, t in graph.tensors.items() if t.is_const}
    for name in graph.inputs:
        env[name] = _checked_input(graph, name, inputs)
    for node in graph.nodes:
        args = [env[i] if i else None for i in node.inputs]
        out = KERNELS[node.op](graph, node, *args)
        # A multi-output node (split, unpack) returns one array per output.
        for name, value in zip(node.outputs, out if len(node.outputs) > 1 else [out]):
            t = graph.tensors[name]
            env[name] = np.asarray(value).astype(NP_DTYPES[t.dtype], copy=False).reshape(t.shape)
    if keep_all:
        return env
    return {name: env[name] for name in graph.outputs}


def _checked_input(graph: Graph, name: str, inputs: dict[str, np.ndarray]) -> np.ndarray:
    if name not in inputs:
        raise ValueError(f"missing input {name!r}; the graph inputs are {list(graph.inputs)}")
    t = graph.tensors[name]
    x = np.asarray(inputs[name])
    if x.dtype != np.dtype(NP_DTYPES[t.dtype]):
        raise ValueError(f"input {name!r} has dtype {x.dtype}, expected {t.dtype}")
    if tuple(x.shape) != tuple(t.shape):
        raise ValueError(f"input {name!r} has shape {tuple(x.shape)}, expected {tuple(t.shape)}")
    return x


# --- shared pieces ---------------------------------------------------------------------

def is_hybrid(graph: Graph, node: Node) -> bool:
    """Dynamic-range quantized op: float32 activations, int8 weights."""
    return (graph.tensors[node.inputs[0]].dtype == "float32" and len(node.inputs) > 1 and bool(node.inputs[1])
            and graph.tensors[node.inputs[1]].dtype == "int8")


def _is_int8(graph: Graph, node: Node) -> bool:
    """int8 kernel; refuses hybrid ops other than the per-tensor conv2d (the frontend rejects them)."""
    if is_hybrid(graph, node) and node.op != "conv2d":
        raise NotImplementedError(f"{node.name}: hybrid {node.op} (float32 input, int8 weights) is not "
                                  "supported by the interpreter")
    return graph.tensors[node.inputs[0]].dtype == "int8"


def hybrid_quantize(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's per-batch SymmetricQuantizeFloats: q = round(x * (127 / range)) clamped to
    +-127, with range = max|x| of the batch; returns (q, range / 127) in float32 arithmetic."""
    flat = x.reshape(x.shape[0], -1).astype(np.float32)
    rng = np.abs(flat).max(axis=1)
    safe = np.where(rng == 0, np.float32(1), rng).astype(np.float32)
    inv = (np.float32(127) / safe).astype(np.float32)
    q = fp.tflite_round((flat * inv[:, None]).astype(np.float32).astype(np.float64))  # exact std::round
    q = np.where(rng[:, None] == 0, 0, np.clip(q, -127, 127)).astype(np.int8)
    scale = np.where(rng == 0, np.float32(1), (safe / np.float32(127)).astype(np.float32)).astype(np.float32)
    return q.reshape(x.shape), scale


_REQUANTIZE = {qp.DOUBLE: fp.multiply_by_quantized_multiplier,
               qp.SINGLE: fp.multiply_by_quantized_multiplier_single_round,
               qp.SINGLE_AWAY: fp.multiply_by_quantized_multiplier_single_round_away}


def _requantize(acc, mult, shift, rounding: str) -> np.ndarray:
    return _REQUANTIZE[rounding](acc, mult, shift)


def _store_int8(acc, output_offset: int, act_min: int, act_max: int) -> np.ndarray:
    return np.clip(acc + output_offset, act_min, act_max).astype(np.int8)


def _clamp_float(x, p: qp.FloatActParams) -> np.ndarray:
    return np.clip(x, np.float32(p.act_min), np.float32(p.act_max)).astype(np.float32)


def _windows(x: np.ndarray, node: Node, kh: int, kw: int) -> np.ndarray:
    """(N, OH, OW, KH, KW, C) view of zero-padded x: im2col without the copy."""
    sh, sw = node.attrs.get("stride", (1, 1))
    dh, dw = node.attrs.get("dilation", (1, 1))
    top, left, bottom, right = node.attrs.get("padding", (0, 0, 0, 0))
    xp = np.pad(x, ((0, 0), (top, bottom), (left, right), (0, 0)))
    n, h, w, c = xp.shape
    oh = (h - ((kh - 1) * dh + 1)) // sh + 1
    ow = (w - ((kw - 1) * dw + 1)) // sw + 1
    s = xp.strides
    return as_strided(xp, (n, oh, ow, kh, kw, c), (s[0], s[1] * sh, s[2] * sw, s[1] * dh, s[2] * dw, s[3]),
                      writeable=False)


def _offset_input(x: np.ndarray, offset: int) -> np.ndarray:
    # Zero padding of (x + offset) is what the reference kernels do: they skip
    # out-of-bounds taps, i.e. those taps contribute 0 after the offset.
    return x.astype(np.float64) + offset


# --- kernels ---------------------------------------------------------------------------

def _conv2d(graph, node, x, w, bias):
    co, kh, kw, ci = w.shape
    p = qp.conv_params(graph, node)
    if is_hybrid(graph, node):
        # TFLite EvalHybrid: quantize the input per batch, integer conv (padding taps are
        # 0), then out = float(acc) * (input_scale * weight_scale) + bias, clamped.
        q, scale = hybrid_quantize(x)
        scale = (scale * np.float32(graph.tensors[node.inputs[1]].quant.scale[0])).astype(np.float32)
        cols = _windows(q.astype(np.float64), node, kh, kw)
        acc = np.rint(cols.reshape(-1, kh * kw * ci) @ w.reshape(co, -1).T.astype(np.float64))
        acc = acc.astype(np.float32).reshape(cols.shape[:3] + (co,))
        y = (acc * scale[:, None, None, None]).astype(np.float32)
        if bias is not None:
            y = (y + bias.astype(np.float32)).astype(np.float32)
        return _clamp_float(y, p)
    if _is_int8(graph, node):
        cols = _windows(_offset_input(x, p.input_offset), node, kh, kw)
        acc = np.rint(cols.reshape(-1, kh * kw * ci) @ w.reshape(co, -1).T.astype(np.float64)).astype(np.int64)
        if bias is not None:
            acc += bias.astype(np.int64)
        acc = _requantize(acc, np.array(p.output_multiplier), np.array(p.output_shift), p.rounding)
        return _store_int8(acc.reshape(cols.shape[:3] + (co,)), p.output_offset, p.act_min, p.act_max)
    cols = _windows(x.astype(np.float32), node, kh, kw)
    y = cols.reshape(-1, kh * kw * ci) @ w.reshape(co, -1).T.astype(np.float32)
    if bias is not None:
        y = y + bias.astype(np.float32)
    return _clamp_float(y.reshape(cols.shape[:3] + (co,)), p)


def _depthwise_conv2d(graph, node, x, w, bias):
    _, kh, kw, co = w.shape
    mult = co // x.shape[3]
    p = qp.depthwise_conv_params(graph, node)
    # Output channel oc reads input channel oc // depth_multiplier.
    channel_of = np.arange(co) // mult
    if _is_int8(graph, node):
        cols = _windows(_offset_input(x, p.input_offset), node, kh, kw)[..., channel_of]
        acc = np.rint(np.einsum("nhwijc,ijc->nhwc", cols, w[0].astype(np.float64))).astype(np.int64)
        if bias is not None:
            acc += bias.astype(np.int64)
        acc = _requantize(acc, np.array(p.output_multiplier), np.array(p.output_shift), p.rounding)
        return _store_int8(acc, p.output_offset, p.act_min, p.act_max)
    cols = _windows(x.astype(np.float32), node, kh, kw)[..., channel_of]
    y = np.einsum("nhwijc,ijc->nhwc", cols, w[0].astype(np.float32))
    if bias is not None:
        y = y + bias.astype(np.float32)
    return _clamp_float(y, p)


def _fully_connected(graph, node, x, w, bias):
    units, depth = w.shape
    p = qp.fully_connected_params(graph, node)
    if _is_int8(graph, node):
        xs = x.reshape(-1, depth).astype(np.float64) + p.input_offset
        ws = w.astype(np.float64) + p.weights_offset
        acc = np.rint(xs @ ws.T).astype(np.int64)
        if bias is not None:
            acc += bias.astype(np.int64)
        acc = _requantize(acc, np.array(p.output_multiplier), np.array(p.output_shift), p.rounding)
        return _store_int8(acc, p.output_offset, p.act_min, p.act_max)
    y = x.reshape(-1, depth).astype(np.float32) @ w.T.astype(np.float32)
    if bias is not None:
        y = y + bias.astype(np.float32)
    return _clamp_float(y, p)


def _average_pool2d(graph, node, x):
    kh, kw = node.attrs["filter"]
    p = qp.average_pool_params(graph, node)
    # Padding pixels are excluded from the divisor: count the in-bounds taps.
    ones = np.ones((1,) + x.shape[1:3] + (1,), dtype=np.int64)
    count = _windows(ones, node, kh, kw).sum(axis=(3, 4))
    if _is_int8(graph, node):
        acc = _windows(x.astype(np.int64), node, kh, kw).sum(axis=(3, 4))
        half = count // 2
        num = np.where(acc > 0, acc + half, acc - half)
        avg = np.sign(num) * (np.abs(num) // count)   # C division truncates toward zero
        return np.clip(avg, p.act_min, p.act_max).astype(np.int8)
    total = _windows(x.astype(np.float32), node, kh, kw).sum(axis=(3, 4), dtype=np.float32)
    return _clamp_float(total / count.astype(np.float32), p)


def _add(graph, node, a, b):
    p = qp.add_params(graph, node)
    if not _is_int8(graph, node):
        return _clamp_float(a.astype(np.float32) + b.astype(np.float32), p)

    def scaled(v, offset, mult, shift):
        shifted = (v.astype(np.int64) + offset) << p.left_shift
        return fp.multiply_by_quantized_multiplier_smaller_than_one_exp(shifted, mult, shift)

    total = (scaled(a, p.input1_offset, p.input1_multiplier, p.input1_shift)
             + scaled(b, p.input2_offset, p.input2_multiplier, p.input2_shift))
    out = fp.multiply_by_quantized_multiplier_smaller_than_one_exp(total, p.output_multiplier, p.output_shift)
    return _store_int8(out, p.output_offset, p.act_min, p.act_max)


def _reshape(graph, node, x):
    return x.reshape(graph.tensors[node.outputs[0]].shape)


def _softmax(graph, node, x):
    if not _is_int8(graph, node):
        beta = np.float32(node.attr("beta", 1.0))
        xf = x.astype(np.float32)
        e = np.exp((xf - xf.max(axis=-1, keepdims=True)) * beta).astype(np.float32)
        return (e / e.sum(axis=-1, keepdims=True, dtype=np.float32)).astype(np.float32)
    p = qp.softmax_params(graph, node)
    xi = x.astype(np.int64)
    diff = xi - xi.max(axis=-1, keepdims=True)
    live = diff >= p.diff_min
    scaled = fp.multiply_by_quantized_multiplier_greater_than_one(
        np.where(live, diff, 0), p.input_multiplier, p.input_left_shift)
    exps = fp.exp_on_negative_values(scaled, qp.SOFTMAX_SCALED_DIFF_INTEGER_BITS)   # Q0.31
    sum_of_exps = np.where(live, fp.rescale(exps, 0, qp.SOFTMAX_ACCUMULATION_INTEGER_BITS), 0).sum(
        axis=-1, keepdims=True)
    shifted_scale, num_bits_over_unit = fp.get_reciprocal(sum_of_exps, qp.SOFTMAX_ACCUMULATION_INTEGER_BITS)
    unsat = fp.rounding_divide_by_pot(fp.saturating_rounding_doubling_high_mul(shifted_scale, exps),
                                      num_bits_over_unit + 31 - 8)
    out = np.clip(unsat + p.output_offset, -128, 127)
    return np.where(live, out, -128).astype(np.int8)


def _activation(graph, node, x):
    p = qp.activation_params(graph, node)
    if not _is_int8(graph, node):
        return _clamp_float(x.astype(np.float32), p)
    acc = _requantize(x.astype(np.int64) - p.input_zero_point, p.output_multiplier, p.output_shift,
                      p.rounding)
    return _store_int8(acc, p.output_offset, p.act_min, p.act_max)


KERNELS: dict[str, Callable[..., np.ndarray]] = {
    "conv2d": _conv2d,
    "depthwise_conv2d": _depthwise_conv2d,
    "fully_connected": _fully_connected,
    "average_pool2d": _average_pool2d,
    "add": _add,
    "reshape": _reshape,
    "softmax": _softmax,
    "relu": _activation,
    "relu6": _activation,
    "relu_n1_to_1": _activation,
}


from . import interp_shape  # noqa: E402,F401  (registers the shape / data-movement kernels)
