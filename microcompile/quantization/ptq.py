"""Post-training quantization: a float32 Graph + calibration ranges -> an int8 Graph.

TFLite's int8 scheme, so that the bit-exact int8 kernels run unchanged:
  - weights of conv2d / depthwise_conv2d / fully_connected / transpose_conv2d: symmetric
    int8 (zero point 0, range +-127), one scale per output channel;
  - bias: int32, scale in_s * w_s[c] (float32 product), zero point 0;
  - activations: asymmetric int8, one scale/zero point per tensor, from calibration;
  - ops that only move bytes (reshape, pooling, transpose, pad, ...) keep their input's
    quantization; concatenation / maximum / minimum requantize their inputs to the
    output's (the kernels need equal scales); softmax / logistic / tanh / log_softmax
    get the fixed output quantization LiteRT requires.
The caller fuses activations and folds batch-norm first (transform.pipeline), so the
calibrated range of an op's output is the range after its fused clamp.

16x8 (activations="int16", TFLite's 16x8 scheme for audio models): activations are
symmetric int16 (zero point 0, scale max|range| / 32767), weights stay per-channel int8,
biases are int64 at scale in_s * w_s, and logistic / tanh / softmax output scale 1/32768.
Only ops with a 16x8 kernel (OpDef.int16) are quantized; the others must be kept float.

int4 weights (weights="int4"): conv2d, depthwise_conv2d and fully_connected layers on int8
activations get symmetric per-channel int4 weights (zero point 0, range +-7, TFLite's INT4
tensors), each channel's scale chosen to minimise the squared error of its weights (the
clipping range searched from max|w| down to half of it: at 15 levels, clipping the few
largest weights pays for a finer step on the rest); `keep_int8` names layers (or ops) that
keep int8 weights. Everything else is as in the int8 scheme.

Interface: with io="float32" (the default) the graph keeps its float32 inputs and
outputs, with QUANTIZE / DEQUANTIZE at the edges (a drop-in replacement); io="int8"
makes them int8. The int8 version of a float tensor T is named T, or T + "/int8" when
T itself stays float32 (graph inputs/outputs, the output of an op kept in float).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..errors import UserError, shown
from ..ir import INT4_WEIGHT_OPS, Graph, Node, Tensor, ops, verify
from ..ir.graph import QuantParams
from .calibrate import Range, activation_qparams

IO_MODES = ("float32", "int8", "int16")
ACTIVATION_DTYPES = ("int8", "int16")
_RANGE = {"int8": (-128, 127), "int16": (-32768, 32767)}


def quantizable(op: str, activations: str = "int8") -> bool:
    """The op has an int8 form in TFLite's scheme (its `quant` trait), and for 16x8 also a
    16x8 kernel (its `int16` trait)."""
    if op not in ops.REGISTRY or ops.get(op).quant is None:
        return False
    return activations == "int8" or ops.get(op).int16


class UnquantizableOpError(UserError):
    """The float model has an op with no int8 kernel in TFLite's scheme."""


def round_away(x) -> np.ndarray:
    """std::round: halves away from zero (TFLite's quantizer), unlike numpy's half-to-even."""
    x = np.asarray(x, dtype=np.float64)
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def quantize_array(x: np.ndarray, q: QuantParams, dtype: str = "int8") -> np.ndarray:
    """float -> int8 (or int16) with per-tensor `q` (TFLite's QUANTIZE: round half away, clamp)."""
    lo, hi = _RANGE[dtype]
    return np.clip(round_away(np.asarray(x, np.float32) / np.float32(q.s)) + q.zp, lo, hi).astype(
        np.int16 if dtype == "int16" else np.int8)


def activation_qparams16(r: Range) -> QuantParams:
    """Symmetric int16 activation quantization (TFLite's 16x8 scheme): zero point 0,
    scale max(|lo|, |hi|) / 32767."""
    amax = max(abs(float(r.lo)), abs(float(r.hi)))
    return QuantParams((float(np.float32(amax / 32767.0)) if amax > 1e-12 else 1.0 / 32767,), (0,))


def dequantize_array(x: np.ndarray, q: QuantParams) -> np.ndarray:
    return ((x.astype(np.float64) - q.zp) * q.s).astype(np.float32)


def symmetric_weights(w: np.ndarray, axis: int) -> tuple[np.ndarray, QuantParams]:
    """Per-channel symmetric int8: scale[c] = max|w[c]| / 127, q = round(w / scale) in +-127."""
    moved = np.moveaxis(w.astype(np.float32), axis, 0).reshape(w.shape[axis], -1)
    amax = np.abs(moved).max(axis=1)
    scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(round_away(w / scale.reshape(shape)), -127, 127).astype(np.int8)
    return q, QuantParams(tuple(float(s) for s in scale), (0,) * len(scale), axis)


WEIGHT_DTYPES = ("int8", "int4")
# The clipping ranges tried for int4 weights, as fractions of max|w| per channel.
_INT4_CLIP = np.linspace(1.0, 0.5, 26)


def symmetric_weights_int4(w: np.ndarray, axis: int) -> tuple[np.ndarray, QuantParams]:
    """Per-channel symmetric int4 (q in +-7): each channel's scale is the clip * max|w[c]| / 7,
    clip in _INT4_CLIP, whose dequantized weights are nearest to w[c] (least squares)."""
    moved = np.moveaxis(w.astype(np.float32), axis, 0).reshape(w.shape[axis], -1).astype(np.float64)
    amax = np.abs(moved).max(axis=1)
    best_err = np.full(len(amax), np.inf)
    scale = np.where(amax > 0, amax / 7.0, 1.0)
    for clip in _INT4_CLIP:
        s = np.where(amax > 0, amax * clip / 7.0, 1.0).astype(np.float32).astype(np.float64)
        q = np.clip(round_away(moved / s[:, None]), -7, 7)
        err = ((q * s[:, None] - moved) ** 2).sum(axis=1)
        better = err < best_err
        best_err, scale = np.where(better, err, best_err), np.where(better, s, scale)
    scale = scale.astype(np.float32)
    shape = [1] * w.ndim
    shape[axis] = -1
    q = np.clip(round_away(w / scale.reshape(shape)), -7, 7).astype(np.int8)
    return q, QuantParams(tuple(float(s) for s in scale), (0,) * len(scale), axis)


def _mean_error(n: Node, w: np.ndarray, wq: np.ndarray, q: QuantParams, mean_x: np.ndarray) -> np.ndarray:
    """Per output channel, the mean of (dequantized wq - w) . x over the calibration inputs (x's
    per-channel means; padding ignored): what int4 rounding adds to each output on average, which
    the bias takes back (bias correction, Nagel et al. 2019, "Data-Free Quantization")."""
    axis = ops.get(n.op).weight_axis
    shape = [1] * w.ndim
    shape[axis] = -1
    dw = wq.astype(np.float64) * np.asarray(q.scale, np.float64).reshape(shape) - w.astype(np.float64)
    if n.op == "depthwise_conv2d":            # [1, kh, kw, C * multiplier]: channel oc reads x[oc // mult]
        if w.shape[3] % mean_x.size:
            return np.zeros(w.shape[3])
        return dw.sum(axis=(0, 1, 2)) * np.repeat(mean_x, w.shape[3] // mean_x.size)
    # conv2d [oc, kh, kw, ic] and fully_connected [units, k]: the last axis meets x's channels
    # (a fully connected layer that flattens its input has no per-channel mean to use)
    if mean_x.size != w.shape[-1]:
        return np.zeros(w.shape[0])
    return (dw * mean_x).reshape(w.shape[0], -1).sum(axis=1)


def dequantize_weights(g: Graph) -> Graph:
    """Hybrid (dynamic-range) models store int8 weights next to float activations:
    restore float32 weights, so the whole model is re-quantized from one float graph."""
    tensors = dict(g.tensors)
    for name, t in g.tensors.items():
        if not (t.is_const and t.dtype == "int8" and t.quant is not None):
            continue
        scale = np.asarray(t.quant.scale, np.float64)
        zp = np.asarray(t.quant.zero_point, np.float64)
        if t.quant.axis is not None and scale.size > 1:
            shape = [1] * t.data.ndim
            shape[t.quant.axis] = -1
            scale, zp = scale.reshape(shape), zp.reshape(shape)
        data = ((t.data.astype(np.float64) - zp) * scale).astype(np.float32)
        tensors[name] = t.replace(dtype="float32", quant=None, data=data)
    return g.replace(tensors=tensors)


@dataclass
class _Builder:
    """The quantized graph under construction, with the float/int8 versions of tensors."""

    src: Graph
    act: Callable[[str], QuantParams]
    tensors: dict
    nodes: list
    int8_of: dict      # source float tensor -> name of its quantized (int8 or int16) version
    float_of: dict     # source float tensor -> name of its float32 version
    dtype: str = "int8"   # the activations' dtype: int8, or int16 for 16x8
    int4: Callable[[Node], bool] = lambda n: False    # the layers that get int4 weights
    means: Callable[[str], np.ndarray] | None = None   # per-channel means of float tensors
    requantized: dict = field(default_factory=dict)   # (tensor, scale, zero point) -> requantized copy

    def add(self, t: Tensor) -> str:
        name = t.name
        while name in self.tensors:
            name += "_"
        self.tensors[name] = t.replace(name=name)
        return name

    def as_int8(self, name: str, q: QuantParams | None = None) -> str:
        """The int8 version of `name`; requantized to `q` when given and different."""
        t = self.src.tensors[name]
        if t.dtype != "float32":
            return self.passthrough(name)
        if t.is_const:
            rng = Range(float(t.data.min()), float(t.data.max()))
            q = q or (activation_qparams16(rng) if self.dtype == "int16" else activation_qparams(rng))
            return self.add(t.replace(dtype=self.dtype, quant=q, data=quantize_array(t.data, q, self.dtype)))
        if name not in self.int8_of:
            q_own = self.act(name)
            new = self.add(Tensor(name + "/int8", t.shape, self.dtype, q_own))
            self.nodes.append(Node("quantize", f"{name}/quantize", (self.float_of[name],), (new,)))
            self.int8_of[name] = new
        cur = self.int8_of[name]
        if q is None or self.tensors[cur].quant.same_as(q):
            return cur
        key = (name, q.scale, q.zero_point)
        if key not in self.requantized:   # an input used twice (concat(x, y, x)) is requantized once
            new = self.add(Tensor(f"{name}/requantized", t.shape, self.dtype, q))
            self.nodes.append(Node("quantize", f"{new}/requantize", (cur,), (new,)))
            self.requantized[key] = new
        return self.requantized[key]

    def passthrough(self, name: str) -> str:
        """A tensor that quantization leaves alone (int32 shapes, indices): copied once."""
        if name not in self.tensors:
            self.tensors[name] = self.src.tensors[name]
        return name

    def as_float(self, name: str) -> str:
        t = self.src.tensors[name]
        if t.dtype != "float32":
            return self.passthrough(name)
        if t.is_const:
            return self._const_float(name)
        if name in self.float_of:
            return self.float_of[name]
        new = self.add(Tensor(name + "/float", t.shape, "float32"))
        self.nodes.append(Node("dequantize", f"{name}/dequantize", (self.int8_of[name],), (new,)))
        self.float_of[name] = new
        return new

    def _const_float(self, name: str) -> str:
        t = self.src.tensors[name]
        if name in self.tensors and self.tensors[name] is t:
            return name
        return self.add(t)

    def output_int8(self, name: str, q: QuantParams, float_io_output: bool) -> str:
        t = self.src.tensors[name]
        new = self.add(Tensor(name + "/int8" if float_io_output else name, t.shape, self.dtype, q))
        self.int8_of[name] = new
        return new


def unquantizable(g: Graph, keep_float=(), activations: str = "int8") -> list[Node]:
    return [n for n in g.nodes if not quantizable(n.op, activations) and n.op not in keep_float
            and n.name not in keep_float and any(g.tensors[i].dtype == "float32" for i in n.inputs if i)]


def check_quantizable(g: Graph, keep_float=(), activations: str = "int8") -> None:
    """UnquantizableOpError naming every op with no int8 (or int16) kernel that is not kept float;
    UserError for a `keep_float` entry that names no op and no layer of `g` (a typo)."""
    if not any(g.tensors[n].dtype == "float32" for n in g.inputs):
        raise UserError(f"model {g.name} has no float32 input: it is already quantized",
                        hint="quantize the float32 model it was made from")
    ops_in_g = sorted({n.op for n in g.nodes})
    unknown = [k for k in keep_float if k not in ops_in_g and all(k != n.name for n in g.nodes)]
    if unknown:
        raise UserError(f"--keep-float {', '.join(shown(k) for k in unknown)} names no op and no layer of "
                        f"model {g.name}", hint="the model's ops are " + ", ".join(ops_in_g)
                        + " (layer names as `microcompile inspect` shows them work too)")
    if activations not in ACTIVATION_DTYPES:
        raise UserError(f"unknown --activations {activations!r}", hint=f"choose one of {', '.join(ACTIVATION_DTYPES)}")
    bad = unquantizable(g, keep_float, activations)
    if bad:
        ops = sorted({n.op for n in bad})
        scheme = "16x8 (int16 activations)" if activations == "int16" else "int8"
        raise UnquantizableOpError(
            f"cannot quantize op(s) {', '.join(ops)} (layers {', '.join(n.name for n in bad[:5])}) to {scheme}",
            hint=f"keep them in float32 with --keep-float {','.join(ops)} (needs a board with an FPU)")


def check_weights(g: Graph, weights: str = "int8", keep_int8=(), activations: str = "int8") -> None:
    """UserError unless `weights` and `keep_int8` make sense for `g` (before any calibration)."""
    if weights not in WEIGHT_DTYPES:
        raise UserError(f"unknown --weights {weights!r}", hint=f"choose one of {', '.join(WEIGHT_DTYPES)}")
    if weights == "int4" and activations != "int8":
        raise UserError("int4 weights need int8 activations (TFLite has no 16x4 kernels)",
                        hint="drop --weights int4, or quantize with --activations int8")
    if keep_int8 and weights != "int4":
        raise UserError("--keep-int8 names layers to leave out of --weights int4", hint="add --weights int4")
    unknown = sorted(set(keep_int8) - {n.name for n in g.nodes} - {n.op for n in g.nodes})
    if unknown:
        raise UserError(f"--keep-int8 names {', '.join(map(shown, unknown[:3]))}, which is no layer or op of the model",
                        hint="`microcompile inspect MODEL` lists the layers")


def quantize_graph(g: Graph, ranges: Callable[[str], Range], io: str = "float32", keep_float=(),
                   activations: str = "int8", weights: str = "int8", keep_int8=(),
                   means: Callable[[str], np.ndarray] | None = None) -> Graph:
    """The int8 graph of float32 graph `g` (16x8 with activations="int16"); `ranges(tensor)`
    gives each activation's calibrated range. `keep_float` names ops (or nodes) left in
    float32 between a DEQUANTIZE and a QUANTIZE (for boards with an FPU). weights="int4" gives
    conv2d, depthwise_conv2d and fully_connected int4 weights, except the ops or layers in
    `keep_int8`; `means(tensor)` (the calibration's per-channel means of a float tensor) corrects
    their biases for the mean error of the int4 weights."""
    if io not in IO_MODES:
        raise UserError(f"unknown --io {io!r}", hint=f"choose one of {', '.join(IO_MODES)}")
    check_weights(g, weights, keep_int8, activations)
    check_quantizable(g, keep_float, activations)
    if io != "float32" and io != activations:
        raise UserError(f"--io {io} does not match --activations {activations}",
                        hint=f"use --io float32 or --io {activations}")
    qcache: dict[str, QuantParams] = {}
    qparams = activation_qparams16 if activations == "int16" else activation_qparams

    def act(name):
        if name not in qcache:
            qcache[name] = qparams(ranges(name))
        return qcache[name]

    b = _Builder(g, act, {}, [], {}, {}, activations)
    if weights == "int4":
        b.int4 = lambda n: n.op in INT4_WEIGHT_OPS and n.name not in keep_int8 and n.op not in keep_int8
        b.means = means
    for name in g.inputs:
        t = g.tensors[name]
        if t.dtype != "float32":
            b.tensors[name] = t
        elif io != "float32":
            b.int8_of[name] = b.add(t.replace(dtype=activations, quant=act(name)))
        else:
            b.float_of[name] = b.add(t)
    float_outputs = set(g.outputs) if io == "float32" else set()
    for n in g.nodes:
        if n.op in keep_float or n.name in keep_float or not quantizable(n.op, activations):
            _keep_float(b, n)
        else:
            _quantize_node(b, n, float_outputs)
    for name in g.outputs:
        if io == "float32" and name not in b.float_of:
            b.tensors[name] = g.tensors[name]
            b.nodes.append(Node("dequantize", f"{name}/dequantize", (b.int8_of[name],), (name,)))
        elif io != "float32" and name not in b.int8_of:
            # A float-kept op produced it: quantize into the output name.
            raise UserError(f"output {name} comes from an op kept in float32, so it cannot be {io} with --io {io}",
                            hint="use --io float32")
    inputs = tuple(b.float_of.get(i, b.int8_of.get(i, i)) for i in g.inputs)
    outputs = tuple(o if io == "float32" else b.int8_of[o] for o in g.outputs)
    return verify(Graph(g.name + "_int8", b.tensors, tuple(b.nodes), inputs, outputs))


def _keep_float(b: _Builder, n: Node) -> None:
    inputs = tuple(b.as_float(i) if i else "" for i in n.inputs)
    outputs = []
    for o in n.outputs:
        outputs.append(b.add(b.src.tensors[o]))
        b.float_of[o] = outputs[-1]
    b.nodes.append(n.replace(inputs=inputs, outputs=tuple(outputs)))


def _quantize_node(b: _Builder, n: Node, float_outputs: set) -> None:
    kind = ops.get(n.op).quant
    if kind == "weighted":
        inputs, qo = _weighted_inputs(b, n), b.act(n.outputs[0])
        out_q = [qo]
    elif kind == "same":
        inputs = (b.as_int8(n.inputs[0]),) + tuple(b.passthrough(i) if i else "" for i in n.inputs[1:])
        out_q = [b.tensors[inputs[0]].quant] * len(n.outputs)
    elif kind == "shared":
        qo = b.act(n.outputs[0])
        inputs, out_q = tuple(b.as_int8(i, qo) for i in n.inputs), [qo]
    else:
        inputs = tuple(b.as_int8(i) if i else "" for i in n.inputs)
        fixed = ops.get(n.op).fixed_output
        if fixed and b.dtype == "int16":   # 16x8: logistic / tanh / softmax all output Q0.15
            fixed = (1 / 32768, 0)
        out_q = [QuantParams((fixed[0],), (fixed[1],)) if fixed else b.act(n.outputs[0])]
    outputs = tuple(b.output_int8(o, q, o in float_outputs) for o, q in zip(n.outputs, out_q))
    b.nodes.append(n.replace(inputs=inputs, outputs=outputs))


def _weighted_inputs(b: _Builder, n: Node) -> tuple[str, ...]:
    g = b.src
    x = b.as_int8(n.inputs[0])
    w_t = g.tensors[n.inputs[1]]
    if not w_t.is_const:
        raise UnquantizableOpError(f"{n.op} {n.name} has non-constant weights {w_t.name}",
                                   hint=f"keep it in float32 with --keep-float {n.name}")
    int4 = b.int4(n)
    wq, w_quant = (symmetric_weights_int4 if int4 else symmetric_weights)(w_t.data, ops.get(n.op).weight_axis)
    w = b.add(w_t.replace(dtype="int4" if int4 else "int8", quant=w_quant, data=wq))
    bias = ""
    b_t = g.tensors[n.inputs[2]] if len(n.inputs) > 2 and n.inputs[2] else None
    if int4 and b.means is not None:
        shift = _mean_error(n, w_t.data, wq, w_quant, b.means(n.inputs[0]))
        if b_t is None:
            b_t = Tensor(f"{n.name}/bias", (len(shift),), "float32", data=np.zeros(len(shift), np.float32))
        b_t = b_t.replace(data=(b_t.data.astype(np.float64) - shift).astype(np.float32))
    if b_t is not None:
        scales = (np.float32(b.tensors[x].quant.s) * np.asarray(w_quant.scale, np.float32)).astype(np.float32)
        bits = 64 if b.dtype == "int16" else 32   # 16x8: an int64 bias, as TFLite's
        data = np.clip(round_away(b_t.data.astype(np.float64) / scales.astype(np.float64)),
                       -2.0**(bits - 1), 2.0**(bits - 1) - 1).astype(np.int64 if bits == 64 else np.int32)
        quant = QuantParams(tuple(float(s) for s in scales), (0,) * len(scales), 0)
        bias = b.add(b_t.replace(dtype=f"int{bits}", quant=quant, data=data))
    return (x, w, bias) + tuple(b.passthrough(i) if i else "" for i in n.inputs[3:])
