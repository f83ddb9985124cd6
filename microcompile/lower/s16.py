"""The int16 variants (16x8 quantization) of conv2d, depthwise_conv2d, transpose_conv2d,
fully_connected, softmax, logistic, tanh, add, sub, mul, leaky_relu, quantize and dequantize
(registered with dtype="int16"; the byte-moving ops keep their dtype-generic lowerings).

The convolutions and fully connected accumulate in int64, which the loop IR does not have:
they are calls of the micro-kernels of runtime_c/include/mc_s16.h, the `_dsp` variant on
cores with the DSP extension (weights widened to int16 here, at compile time, for SMLALD),
the portable `_c` one elsewhere. softmax / logistic / tanh are micro-kernels too (their
tables). The elementwise ops are loop nests with int32 arithmetic, as int8's: int16 values
shifted left by 15 (ADD/SUB) or multiplied (MUL) stay within int32.
"""

from __future__ import annotations

import numpy as np

from ..ir.graph import Graph, Node
from ..reference import s16 as qs
from ..tir.intrinsics_s16 import (CONV_S16_PARAMS, FC_S16_PARAMS, SIGMOID_S16_PARAMS, SOFTMAX_S16_PARAMS,
                                  kernel_name)
from ..tir.nodes import (Buffer, Call, Cast, Evaluate, Load, Select, Var, add, binop, loops, mul,
                         sub)
from .common import (address, arena, broadcast_index, clamp, constant, i32, lowering, make_func, operand, requantize,
                     smaller_than_one)


def _dsp(target) -> bool:
    return target is not None and target.dsp


def _bias(g: Graph, node: Node, channels: int) -> Buffer:
    data = (g.const(node.inputs[2]).astype(np.int64) if len(node.inputs) > 2 and node.inputs[2]
            else np.zeros(channels, np.int64))
    return constant("bias", data, f"{node.name} bias [{channels}] int64")


def _weights(g: Graph, node: Node, wide: bool) -> Buffer:
    w = g.const(node.inputs[1])
    if wide:
        return constant("w", w.astype(np.int16), f"{node.name} weights {list(w.shape)} int8 widened to int16")
    return constant("w", w, f"{node.name} weights {list(w.shape)} int8")


@lowering("conv2d", "depthwise_conv2d", "transpose_conv2d", dtype="int16")
def lower_conv_s16(g: Graph, node: Node, target=None):
    xt, wt, yt = g.tensors[node.inputs[0]], g.tensors[node.inputs[1]], g.tensors[node.outputs[0]]
    p = qs.conv_params(g, node)
    kind = {"conv2d": "conv", "depthwise_conv2d": "depthwise", "transpose_conv2d": "transpose_conv"}[node.op]
    mult_dw = node.attrs.get("depth_multiplier", 1)
    # The DSP depthwise kernel pairs channels: one input channel per output channel only.
    dsp = _dsp(target) and not (kind == "depthwise" and yt.shape[3] != xt.shape[3])
    w = _weights(g, node, wide=dsp)
    kh, kw = (wt.shape[1], wt.shape[2])
    out_c = yt.shape[3]
    x, y = arena(g, xt.name, "x"), arena(g, yt.name, "y")
    mult = constant("mult", np.array(p.output_multiplier, np.int32), f"{node.name} requant multipliers")
    shift = constant("shift", np.array(p.output_shift, np.int32), f"{node.name} requant shifts")
    bias = _bias(g, node, out_c)
    stride, dil = node.attrs.get("stride", (1, 1)), node.attrs.get("dilation", (1, 1))
    pad = node.attrs.get("padding", (0, 0, 0, 0))
    params = CONV_S16_PARAMS(batch=xt.shape[0], in_h=xt.shape[1], in_w=xt.shape[2], in_c=xt.shape[3],
                             out_h=yt.shape[1], out_w=yt.shape[2], out_c=out_c, k_h=kh, k_w=kw, stride_h=stride[0],
                             stride_w=stride[1], dil_h=dil[0], dil_w=dil[1], pad_top=pad[0], pad_left=pad[1],
                             depth_multiplier=mult_dw if kind == "depthwise" else 1, act_min=p.act_min,
                             act_max=p.act_max)
    call = Call(kernel_name(kind, "dsp" if dsp else "c"),
                tuple(address(b) for b in (y, x, w, bias, mult, shift)) + (params,), "void")
    return make_func(g, node, [x, y, w, bias, mult, shift], Evaluate(call))


@lowering("fully_connected", dtype="int16")
def lower_fully_connected_s16(g: Graph, node: Node, target=None):
    xt, wt, yt = g.tensors[node.inputs[0]], g.tensors[node.inputs[1]], g.tensors[node.outputs[0]]
    p = qs.fully_connected_params(g, node)
    units, depth = wt.shape
    rows = xt.size // depth
    dsp = _dsp(target) and p.weights_offset == 0
    x = arena(g, xt.name, "x", shape=(rows, depth))
    y = arena(g, yt.name, "y", shape=(rows, units))
    w = _weights(g, node, wide=dsp)
    bias = _bias(g, node, units)
    scale = Buffer("scale", "float64", (len(p.effective_scale),), "const",
                   data=np.array(p.effective_scale, np.float64),
                   comment=f"{node.name} s_in * s_w / s_out (double, as LiteRT requantizes int16 FC)")
    params = FC_S16_PARAMS(rows=rows, units=units, depth=depth, weights_offset=p.weights_offset,
                           per_channel=int(p.per_channel), act_min=p.act_min, act_max=p.act_max)
    call = Call(kernel_name("fc", "dsp" if dsp else "c"),
                tuple(address(b) for b in (y, x, w, bias, scale)) + (params,), "void")
    return make_func(g, node, [x, y, w, bias, scale], Evaluate(call))


@lowering("softmax", dtype="int16")
def lower_softmax_s16(g: Graph, node: Node, target=None):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    p = qs.softmax_params(g, node)
    depth = xt.shape[-1]
    rows = xt.size // depth
    x, y = arena(g, xt.name, "x", shape=(rows, depth)), arena(g, yt.name, "y", shape=(rows, depth))
    exp_lut = constant("exp_lut", p.exp_lut.astype(np.int16), "exp(v) over [-10, 0], 513 samples (LUTPopulate)")
    recip_lut = constant("recip_lut", p.one_over_one_plus_x_lut.astype(np.int16),
                         "1/(1+v) over [0, 1], 513 samples (LUTPopulate)")
    params = SOFTMAX_S16_PARAMS(rows=rows, depth=depth, input_multiplier=p.input_multiplier,
                                input_left_shift=p.input_left_shift)
    call = Call("mc_softmax_s16", tuple(address(b) for b in (x, y, exp_lut, recip_lut)) + (params,), "void")
    return make_func(g, node, [x, y, exp_lut, recip_lut], Evaluate(call))


@lowering("logistic", "tanh", dtype="int16")
def lower_sigmoid_s16(g: Graph, node: Node, target=None):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    p = qs.sigmoid_table_params(g, node)
    x, y = arena(g, xt.name, "x", shape=(xt.size,)), arena(g, yt.name, "y", shape=(yt.size,))
    params = SIGMOID_S16_PARAMS(size=xt.size, input_multiplier=p.input_multiplier,
                                input_left_shift=p.input_left_shift)
    call = Call(f"mc_{node.op}_s16", (address(x), address(y), params), "void")
    return make_func(g, node, [x, y], Evaluate(call))


def _i16(e, lo: int = qs.INT16_MIN, hi: int = qs.INT16_MAX):
    return Cast("int16", clamp(e, lo, hi))


def _elementwise(g: Graph, node: Node, result):
    """One loop per output dimension with broadcasting; result(a, b) -> the int16 store."""
    at, bt, yt = (g.tensors[t] for t in (*node.inputs, node.outputs[0]))
    a, b, y = operand(g, at.name, "a"), operand(g, bt.name, "b"), arena(g, yt.name, "y")
    idx = [Var(f"i{k}") for k in range(len(yt.shape))]
    av, bv = Load(a, broadcast_index(a, yt.shape, idx)), Load(b, broadcast_index(b, yt.shape, idx))
    return make_func(g, node, [a, b, y], loops(list(zip(idx, yt.shape)), y.store(result(av, bv), *idx)))


@lowering("add", "sub", dtype="int16")
def lower_add_sub_s16(g: Graph, node: Node, target=None):
    p = qs.add_params(g, node)

    def rescaled(v, mult, shift):   # |v << 15| <= 2^30: int32 holds it
        return smaller_than_one(mul(i32(v), 1 << p.left_shift), mult, shift)

    def result(a, b):
        x1 = rescaled(a, p.input1_multiplier, p.input1_shift)
        x2 = rescaled(b, p.input2_multiplier, p.input2_shift)
        total = binop("add" if node.op == "add" else "sub", x1, x2)
        return _i16(smaller_than_one(total, p.output_multiplier, p.output_shift), p.act_min, p.act_max)
    return _elementwise(g, node, result)


@lowering("mul", dtype="int16")
def lower_mul_s16(g: Graph, node: Node, target=None):
    p = qs.mul_params(g, node)

    def result(a, b):   # |a * b| <= 2^30
        return _i16(requantize(mul(i32(a), i32(b)), p.output_multiplier, p.output_shift, p.rounding),
                    p.act_min, p.act_max)
    return _elementwise(g, node, result)


def _unary(g: Graph, node: Node, result):
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    x, y = arena(g, xt.name, "x", shape=(xt.size,)), arena(g, yt.name, "y", shape=(yt.size,))
    i = Var("i")
    return make_func(g, node, [x, y], loops([(i, yt.size)], y.store(result(x.load(i)), i)))


@lowering("leaky_relu", dtype="int16")
def lower_leaky_relu_s16(g: Graph, node: Node, target=None):
    p = qs.leaky_relu_params(g, node)

    def result(v):
        v = i32(v)
        pos = requantize(v, p.identity_multiplier, p.identity_shift, p.rounding)
        neg = requantize(v, p.alpha_multiplier, p.alpha_shift, p.rounding)
        return _i16(Select(binop("ge", v, 0), pos, neg))
    return _unary(g, node, result)


@lowering("quantize", "dequantize", dtype="int16")
def lower_quantize_s16(g: Graph, node: Node, target=None):
    yt = g.tensors[node.outputs[0]]
    if node.op == "dequantize":
        q = g.tensors[node.inputs[0]].quant
        # float32(double(s) * (x - zp)): s and (x - zp) are exact in float32, so is the product
        # rounded once; a float32 multiply of the two rounds the same exact product once.
        return _unary(g, node, lambda v: binop("mul", Cast("float32", sub(i32(v), q.zp)), float(np.float32(q.s))))
    p = qs.quantize_params(g, node)
    lo, hi = qs._RANGES[yt.dtype]
    if isinstance(p, qs.QuantizeParams):
        def result(v):
            r = Call("roundf", (binop("div", v, p.scale),), "float32")
            return Cast(yt.dtype, add(Cast("int32", clamp(r, lo - p.zero_point, hi - p.zero_point)), p.zero_point))
        return _unary(g, node, result)

    def requant(v):
        scaled = add(requantize(sub(i32(v), p.input_zero_point), p.multiplier, p.shift, "double"), p.output_zero_point)
        # an int32 output needs no clamp: the int32 result is already in its range
        return Cast(yt.dtype, scaled if yt.dtype == "int32" else clamp(scaled, lo, hi))
    return _unary(g, node, requant)
