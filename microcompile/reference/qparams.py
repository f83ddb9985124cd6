"""Kernel parameters for quantized ops: TFLM's "Prepare", computed once on the host.

Each function takes (graph, node) and returns a frozen record holding every integer the
kernel needs (offsets, multipliers, shifts, clamp bounds). The numpy interpreter and the
C lowering both read these records, so they cannot disagree about a multiplier.

Multipliers are computed in the precision LiteRT uses (C doubles from float32 scales;
FC rounds the input*weight scale product to float32 first). Per-channel arrays are
tuples of ints, one per output channel. `rounding` names the requantization scheme that
LiteRT BUILTIN_REF uses for the op; see the table at the top of `fixedpoint.py`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import fixedpoint as fp
from ..ir import ops
from ..ir.fixedpoint import KernelParamsError
from ..ir.graph import Graph, Node, QuantParams

DOUBLE = "double"   # gemmlowp: SaturatingRoundingDoublingHighMul then RoundingDivideByPOT
SINGLE = "single"   # (acc*M + 2^(30-shift)) >> (31-shift): TFLITE_SINGLE_ROUNDING, ties up
SINGLE_AWAY = "single_away"   # sign(acc) * ((|acc|*M + 2^(30-shift)) >> (31-shift))
SINGLE_EVEN = "single_even"   # round(acc*M*2^(shift-31)) once, ties to even: ONNX (rounding="onnx")
INT64 = "int64"     # 16x8 kernels: (acc64 * round(M / 2^16) + 2^(14-shift)) >> (15-shift)


def rounding(node: Node, tflite: str) -> str:
    """The requantization rounding of `node`: LiteRT's scheme for the op (`tflite`), or
    ONNX's single rounding to even for a layer of an ONNX QDQ model (attribute rounding="onnx")."""
    return SINGLE_EVEN if node.attrs.get("rounding", "tflite") == "onnx" else tflite


@dataclass(frozen=True)
class FloatActParams:
    """float32 ops: the fused activation clamp (CalculateActivationRange)."""

    act_min: float
    act_max: float


@dataclass(frozen=True)
class ConvParams:
    """int8 conv2d / depthwise_conv2d (reference_integer_ops::ConvPerChannel / DepthwiseConvPerChannel).

    out[c] = clamp(MBQM(acc[c], mult[c], shift[c]) + output_offset, act_min, act_max),
    acc[c] = bias[c] + sum (x + input_offset) * w. Rounding: DOUBLE (gemmlowp), verified
    against LiteRT BUILTIN_REF. mult/shift come from double(in_s)*double(w_s[c])/double(out_s).
    """

    input_offset: int
    output_offset: int
    output_multiplier: tuple[int, ...]
    output_shift: tuple[int, ...]
    act_min: int
    act_max: int
    rounding: str = DOUBLE


@dataclass(frozen=True)
class FullyConnectedParams:
    """int8 fully_connected (reference_integer_ops::FullyConnected[PerChannel]).

    acc = bias + sum (x + input_offset) * (w + weights_offset). Rounding: SINGLE_AWAY,
    sign(acc) * ((|acc|*M + 2^(30-shift)) >> (31-shift)), for per-tensor and per-channel
    weights, measured against LiteRT BUILTIN_REF (TFLM/CMSIS-NN use DOUBLE here and
    differ by one LSB; the half-up SINGLE differs on negative exact ties). The per-tensor
    multiplier is double(float32(in_s * w_s)) / double(out_s); per-channel entries use
    double products as conv does. `per_channel` tells which kernel LiteRT runs.
    """

    input_offset: int
    weights_offset: int
    output_offset: int
    output_multiplier: tuple[int, ...]
    output_shift: tuple[int, ...]
    act_min: int
    act_max: int
    per_channel: bool
    rounding: str = SINGLE_AWAY


@dataclass(frozen=True)
class AddParams:
    """int8 add (reference_integer_ops::Add / BroadcastAdd4DSlow).

    x' = MBQMSmallerThanOneExp((x + input_offset) << left_shift, input_mult, input_shift)
    for each input; out = clamp(MBQMSmallerThanOneExp(x1' + x2', output_mult,
    output_shift) + output_offset). Rounding: DOUBLE (the smaller-than-one-exp path).
    """

    input1_offset: int
    input2_offset: int
    output_offset: int
    left_shift: int
    input1_multiplier: int
    input1_shift: int
    input2_multiplier: int
    input2_shift: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int
    rounding: str = DOUBLE


@dataclass(frozen=True)
class PoolParams:
    """int8 average_pool2d (reference_integer_ops::AveragePool).

    No multiplier: input and output share quantization. acc = sum over the in-bounds
    window; out = clamp((acc +/- count/2) / count) with C truncating division, so the
    rounding is half away from zero and padding pixels are not counted.
    """

    act_min: int
    act_max: int
    rounding: str = "divide"


@dataclass(frozen=True)
class SoftmaxParams:
    """int8 softmax (reference_ops::Softmax, used by LiteRT BUILTIN_REF, no lookup table).

    diff = x - max(row); entries with diff < diff_min output -128. Otherwise
    diff is scaled to Q5.26 by MBQMGreaterThanOne(diff, input_multiplier,
    input_left_shift), exp'd in gemmlowp fixed point, summed in Q12.19, and the
    reciprocal of the sum applied; output = RDBPOT(...) - 128. The output must be
    zero point -128, scale 1/256 (LiteRT enforces it).
    """

    input_multiplier: int
    input_left_shift: int
    diff_min: int
    output_offset: int = -128
    rounding: str = DOUBLE
    output_bits: int = 8           # 16: int16 output, scale 1/65536, zero point -32768 (Softmax<int8_t, int16_t>)


@dataclass(frozen=True)
class RequantActParams:
    """int8 relu / relu6 / relu_n1_to_1 as standalone ops (reference_ops::ReluX).

    out = clamp(output_offset + MBQM(x - input_zero_point, mult, shift), act_min, act_max),
    mult/shift from double(in_s / out_s). Rounding: DOUBLE. Requantizes even when in and
    out quantization are equal (then the multiplier is exactly 1 and it is the identity).
    """

    input_zero_point: int
    output_offset: int
    output_multiplier: int
    output_shift: int
    act_min: int
    act_max: int
    rounding: str = DOUBLE


def _q(graph: Graph, name: str) -> QuantParams:
    q = graph.tensors[name].quant
    assert q is not None, f"tensor {name} has no quantization"
    return q


def _is_float(graph: Graph, node: Node) -> bool:
    return graph.tensors[node.inputs[0]].dtype == "float32"


def _float_act(node: Node) -> FloatActParams:
    return FloatActParams(*fp.activation_range(node.attr("activation", "NONE"), dtype="float32"))


def _act(graph: Graph, node: Node) -> tuple[int, int]:
    return fp.activation_range(node.attr("activation", "NONE"), _q(graph, node.outputs[0]), "int8")


def _channel_scales(q: QuantParams, channels: int) -> np.ndarray:
    """Per-channel scales, a per-tensor scale broadcast over `channels` (as TFLite does)."""
    scales = np.asarray(q.scale, dtype=np.float32)
    return np.broadcast_to(scales, (channels,)) if scales.size == 1 else scales


def _per_channel_multipliers(in_s: float, w_scales: np.ndarray, out_s: float):
    # PopulateConvolutionQuantizationParams: every factor widened to double, then multiplied.
    reals = [float(np.float32(in_s)) * float(ws) / float(np.float32(out_s)) for ws in w_scales]
    mult, shift = fp.quantize_multipliers(reals)
    return tuple(int(m) for m in mult), tuple(int(s) for s in shift)


# op name -> fn(graph, node) -> the op's kernel parameters (TFLM's Prepare), for `params`.
# Filled with @prepare by this module and the qparams_* modules of the other op families.
PARAMS: dict = {}


def prepare(*op_names: str, dtype: str | None = None):
    """Register the decorated fn(graph, node) as the parameter computation of each op named
    (of its `dtype` variant only, e.g. "int16", when given; see ops.variant)."""
    def register(fn):
        for name in op_names:
            key = name if dtype is None else (name, dtype)
            assert key not in PARAMS, f"parameters of {key} registered twice"
            PARAMS[key] = fn
        return fn
    return register


@prepare("conv2d", "depthwise_conv2d")
def conv_params(graph: Graph, node: Node) -> ConvParams | FloatActParams:
    """conv2d and depthwise_conv2d (one multiplier per output channel)."""
    if _is_float(graph, node):
        return _float_act(node)
    x, w, out = node.inputs[0], node.inputs[1], node.outputs[0]
    if any(_q(graph, w).zero_point):
        raise KernelParamsError(f"int8 {node.op} weights must be symmetric (zero point 0), not "
                                f"{max(_q(graph, w).zero_point, key=abs)}: the kernel has no weight offset")
    channels = graph.tensors[out].shape[-1]
    mult, shift = _per_channel_multipliers(_q(graph, x).s, _channel_scales(_q(graph, w), channels),
                                           _q(graph, out).s)
    return ConvParams(input_offset=-_q(graph, x).zp, output_offset=_q(graph, out).zp,
                      output_multiplier=mult, output_shift=shift, **_act_kw(graph, node),
                      rounding=rounding(node, DOUBLE))


depthwise_conv_params = conv_params


def _act_kw(graph: Graph, node: Node) -> dict:
    lo, hi = _act(graph, node)
    return {"act_min": lo, "act_max": hi}


@prepare("fully_connected")
def fully_connected_params(graph: Graph, node: Node) -> FullyConnectedParams | FloatActParams:
    if _is_float(graph, node):
        return _float_act(node)
    x, w, out = node.inputs[0], node.inputs[1], node.outputs[0]
    qx, qw, qo = _q(graph, x), _q(graph, w), _q(graph, out)
    units = graph.tensors[w].shape[0]
    if qw.per_channel and len(qw.scale) > 1:
        mult, shift = _per_channel_multipliers(qx.s, _channel_scales(qw, units), qo.s)
        per_channel, w_zp = True, 0
    else:
        # GetQuantizedConvolutionMultipler: the product is a float32 product.
        real = float(np.float32(qx.s) * np.float32(qw.scale[0])) / float(np.float32(qo.s))
        m, s = fp.quantize_multiplier(real)
        mult, shift, per_channel, w_zp = (m,), (s,), False, qw.zero_point[0]
    return FullyConnectedParams(input_offset=-qx.zp, weights_offset=-w_zp, output_offset=qo.zp,
                                output_multiplier=mult, output_shift=shift, per_channel=per_channel,
                                **_act_kw(graph, node), rounding=rounding(node, SINGLE_AWAY))


@dataclass(frozen=True)
class BatchMatMulParams:
    """int8 BATCH_MATMUL (reference_ops::BatchMatMul, int8): the int32 sum of
    (lhs + lhs_offset) * (rhs + rhs_offset) over the depth, requantized by s_lhs * s_rhs / s_out,
    + output_offset, clamped to int8. Both operands per-tensor."""

    lhs_offset: int
    rhs_offset: int
    output_offset: int
    output_multiplier: int
    output_shift: int
    act_min: int = -128
    act_max: int = 127
    rounding: str = DOUBLE


BATCH_MATMUL_ROUNDING = DOUBLE   # measured against LiteRT BUILTIN_REF (tests/ir/test_transformer_ops.py)


@prepare("batch_matmul")
def batch_matmul_params(graph: Graph, node: Node) -> BatchMatMulParams | None:
    """None for float32."""
    if _is_float(graph, node):
        return None
    qa, qb, qo = _q(graph, node.inputs[0]), _q(graph, node.inputs[1]), _q(graph, node.outputs[0])
    if len(qa.scale) > 1 or len(qb.scale) > 1:
        raise KernelParamsError(f"int8 batch_matmul takes per-tensor quantization ({node.name})")
    if graph.tensors[node.inputs[0]].dtype == "int16":
        # 16x8: symmetric operands, an int64 sum requantized as the 16x8 kernels do; the
        # multiplier from the scales in double (measured against LiteRT BUILTIN_REF).
        if qa.zp or qb.zp or qo.zp:
            raise KernelParamsError(f"int16 batch_matmul takes zero points 0 ({node.name})")
        m, s = fp.quantize_multiplier(float(np.float32(qa.s)) * float(np.float32(qb.s)) / float(np.float32(qo.s)))
        return BatchMatMulParams(0, 0, 0, m, s, act_min=-32768, act_max=32767, rounding=INT64)
    real = float(np.float32(qa.s) * np.float32(qb.s)) / float(np.float32(qo.s))
    m, s = fp.quantize_multiplier(real)
    return BatchMatMulParams(lhs_offset=-qa.zp, rhs_offset=-qb.zp, output_offset=qo.zp, output_multiplier=m,
                             output_shift=s, rounding=rounding(node, BATCH_MATMUL_ROUNDING))


ADD_LEFT_SHIFT = 20   # TFLite's headroom for int8 ADD (15 for int16)


@prepare("add")
def add_params(graph: Graph, node: Node) -> AddParams | FloatActParams:
    if _is_float(graph, node):
        return _float_act(node)
    q1, q2, qo = _q(graph, node.inputs[0]), _q(graph, node.inputs[1]), _q(graph, node.outputs[0])
    s1, s2, so = (float(np.float32(q.s)) for q in (q1, q2, qo))
    twice_max = 2.0 * max(s1, s2)
    m1, sh1 = fp.quantize_multiplier_smaller_than_one_exp(s1 / twice_max)
    m2, sh2 = fp.quantize_multiplier_smaller_than_one_exp(s2 / twice_max)
    mo, sho = fp.quantize_multiplier_smaller_than_one_exp(twice_max / ((1 << ADD_LEFT_SHIFT) * so))
    return AddParams(input1_offset=-q1.zp, input2_offset=-q2.zp, output_offset=qo.zp,
                     left_shift=ADD_LEFT_SHIFT, input1_multiplier=m1, input1_shift=sh1,
                     input2_multiplier=m2, input2_shift=sh2, output_multiplier=mo,
                     output_shift=sho, **_act_kw(graph, node))


@prepare("average_pool2d")
def average_pool_params(graph: Graph, node: Node) -> PoolParams | FloatActParams:
    if _is_float(graph, node):
        return _float_act(node)
    qi, qo = _q(graph, node.inputs[0]), _q(graph, node.outputs[0])
    if not qi.same_as(qo):
        raise KernelParamsError("int8 average_pool2d needs its input and output quantized alike "
                                f"(input scale {qi.scale[0]:g} zero point {qi.zero_point[0]}, output "
                                f"{qo.scale[0]:g} / {qo.zero_point[0]})")
    return PoolParams(**_act_kw(graph, node))


SOFTMAX_SCALED_DIFF_INTEGER_BITS = 5    # Q5.26 input to exp()
SOFTMAX_ACCUMULATION_INTEGER_BITS = 12  # Q12.19 sum of exps


@prepare("softmax")
def softmax_params(graph: Graph, node: Node) -> SoftmaxParams | None:
    """int8 softmax parameters; None for float32 (which needs only `beta`)."""
    if _is_float(graph, node):
        return None
    qi, qo = _q(graph, node.inputs[0]), _q(graph, node.outputs[0])
    bits = 16 if graph.tensors[node.outputs[0]].dtype == "int16" else 8
    if qo.zp != -(1 << (bits - 1)) or abs(qo.s - 2.0 ** -bits) > 0.001 * 2.0 ** -bits:
        raise KernelParamsError(f"int8 softmax with int{bits} output must be scale 1/{1 << bits}, zero point "
                                f"{-(1 << (bits - 1))} (it is {qo.s:g} / {qo.zp})")
    beta = float(np.float32(node.attr("beta", 1.0)))
    mult, left_shift = fp.preprocess_softmax_scaling(beta, float(np.float32(qi.s)),
                                                     SOFTMAX_SCALED_DIFF_INTEGER_BITS)
    diff_min = -fp.calculate_input_radius(SOFTMAX_SCALED_DIFF_INTEGER_BITS, left_shift)
    return SoftmaxParams(input_multiplier=mult, input_left_shift=left_shift, diff_min=diff_min,
                         output_offset=-(1 << (bits - 1)), output_bits=bits)


_STANDALONE_ACT = {"relu": "RELU", "relu6": "RELU6", "relu_n1_to_1": "RELU_N1_TO_1"}


@prepare("relu", "relu6", "relu_n1_to_1")
def activation_params(graph: Graph, node: Node) -> RequantActParams | FloatActParams:
    """Standalone relu / relu6 / relu_n1_to_1."""
    act = _STANDALONE_ACT[node.op]
    if _is_float(graph, node):
        return FloatActParams(*fp.activation_range(act, dtype="float32"))
    qi, qo = _q(graph, node.inputs[0]), _q(graph, node.outputs[0])
    # ReluPrepare divides the float scales in float32 before widening to double.
    m, s = fp.quantize_multiplier(float(np.float32(qi.s) / np.float32(qo.s)))
    lo, hi = fp.activation_range(act, qo, "int8")
    return RequantActParams(input_zero_point=qi.zp, output_offset=qo.zp, output_multiplier=m,
                            output_shift=s, act_min=lo, act_max=hi)




def params(graph: Graph, node: Node):
    """The kernel parameters of any op that has them (None for view ops like reshape); a
    dtype variant's parameters when it registered its own. None for an op on plain integers
    only (int32 arithmetic: no scales, reference/plain.py)."""
    ts = [graph.tensors[t] for t in (*node.inputs, *node.outputs) if t]
    if all(t.quant is None and t.dtype != "float32" for t in ts):
        return None
    fn = PARAMS.get((node.op, ops.variant(graph, node))) or PARAMS.get(node.op)
    return fn(graph, node) if fn else None


def check(graph: Graph, node: Node) -> None:
    """TFLM's Prepare checks: raise KernelParamsError when the node's quantization gives
    parameters its int8 kernel cannot compute with. The frontends call it on every imported
    node (a corrupt file), so that the lowering and the interpreter only meet valid ones."""
    params(graph, node)
    _check_accumulator(graph, node)


def _check_accumulator(graph: Graph, node: Node) -> None:
    """A weighted int8 op accumulates bias + sum (x - zp_in) * (w - zp_w) in int32, for every
    input, and the lowering folds the input offset into the bias: the largest |accumulator|,
    |bias| + max|x - zp_in| * sum|w - zp_w| per output channel, must stay below 2^31."""
    od = ops.get(node.op)
    if od.quant != "weighted":
        return
    x, w = graph.tensors[node.inputs[0]], graph.tensors[node.inputs[1]]
    if x.dtype != "int8" or not w.is_const:
        return
    w_zp = 0 if w.quant.per_channel else w.quant.zero_point[0]
    wsum = np.abs(np.moveaxis(w.data.astype(np.int64) - w_zp, od.weight_axis, 0)).reshape(w.shape[od.weight_axis], -1)
    x_max = max(127 - x.quant.zp, x.quant.zp + 128)
    bound = x_max * wsum.sum(axis=1)
    if len(node.inputs) > 2 and node.inputs[2] and graph.tensors[node.inputs[2]].is_const:
        bound = bound + np.abs(graph.tensors[node.inputs[2]].data.astype(np.int64)).reshape(-1)
    if bound.max(initial=0) > fp.INT32_MAX:
        c = int(bound.argmax())
        raise KernelParamsError(f"its int32 accumulator can overflow: output channel {c} reaches "
                                f"{int(bound[c]):,} (|bias| + {x_max} * sum|weights|), beyond 2^31 - 1")
