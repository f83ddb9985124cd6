"""Pieces the interpreter kernels share: the int8 store and float clamp, requantization by
rounding mode, the im2col window view (and its use a block at a time), and the hybrid
(dynamic-range) input quantization."""

from __future__ import annotations

import numpy as np

from ..ir import fixedpoint as fp
from ..ir.fixedpoint16 import patches
from ..ir.graph import Graph, Node
from . import qparams as qp


def is_hybrid(graph: Graph, node: Node) -> bool:
    """Dynamic-range quantized op: float32 activations, int8 weights."""
    return (graph.tensors[node.inputs[0]].dtype == "float32" and len(node.inputs) > 1 and bool(node.inputs[1])
            and graph.tensors[node.inputs[1]].dtype == "int8")


def is_int8(graph: Graph, node: Node) -> bool:
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
               qp.SINGLE_AWAY: fp.multiply_by_quantized_multiplier_single_round_away,
               qp.SINGLE_EVEN: fp.multiply_by_quantized_multiplier_single_round_even,
               qp.INT64: fp.multiply_by_quantized_multiplier_int64}


def state_array(g: Graph, name: str, value: np.ndarray) -> np.ndarray:
    """The array a stateful op updates for its state input `name`: the persistent one itself
    when it is a variable tensor, else a copy (the op is then stateless)."""
    return value if g.tensors[name].variable else np.array(value, copy=True)


def requantize(acc, mult, shift, rounding: str) -> np.ndarray:
    return _REQUANTIZE[rounding](acc, mult, shift)


def store_int8(acc, output_offset: int, act_min: int, act_max: int) -> np.ndarray:
    return np.clip(acc + output_offset, act_min, act_max).astype(np.int8)


def clamp_float(x, p: qp.FloatActParams) -> np.ndarray:
    return np.clip(x, np.float32(p.act_min), np.float32(p.act_max)).astype(np.float32)


def windows(x: np.ndarray, node: Node, kh: int, kw: int) -> np.ndarray:
    """(N, OH, OW, KH, KW, C) view of zero-padded x: im2col without the copy."""
    return patches(x, kh, kw, node.attrs.get("stride", (1, 1)), node.attrs.get("dilation", (1, 1)),
                   node.attrs.get("padding", (0, 0, 0, 0)))


# A convolution's im2col copy holds every output position times every filter tap: its MACs
# over its output channels, gigabytes for a layer the validation accepts (a 4 MiB filter over a
# 90x90x1024 input: 13.6 GiB). Past this size a kernel makes it a block of output positions at
# a time; below it, in one piece, with the very same arithmetic as before.
IM2COL_BYTES = 64 << 20


def by_positions(cols: np.ndarray, fn, position_bytes: int) -> np.ndarray:
    """fn(cols) for a window view `cols` (N, OH, OW, ...) whose fn turns a block of output
    positions (N', OH', OW', ...) into (N', OH', OW', ...); computed a block at a time when
    the copies fn makes, `position_bytes` per output position, are over IM2COL_BYTES."""
    n, oh, ow = cols.shape[:3]
    if n * oh * ow * position_bytes <= IM2COL_BYTES:
        return fn(cols)
    per_block = max(1, IM2COL_BYTES // position_bytes)
    rows, width = max(1, per_block // ow), min(ow, per_block)
    out = None
    for b in range(n):
        for h in range(0, oh, rows):
            for w in range(0, ow, width):
                part = fn(cols[b:b + 1, h:h + rows, w:w + width])
                if out is None:
                    out = np.empty((n, oh, ow) + part.shape[3:], part.dtype)
                out[b:b + 1, h:h + rows, w:w + width] = part
    return out


def offset_input(x: np.ndarray, offset: int) -> np.ndarray:
    # Zero padding of (x + offset) is what the reference kernels do: they skip
    # out-of-bounds taps, i.e. those taps contribute 0 after the offset.
    return x.astype(np.float64) + offset
