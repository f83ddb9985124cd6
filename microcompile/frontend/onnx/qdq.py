"""QuantizeLinear, DequantizeLinear, QLinearConv, QLinearMatMul.

QDQ models (onnxruntime `quantize_static`, PyTorch's exporter) wrap every float op in
DequantizeLinear (inputs) and QuantizeLinear (output). The converters here import those
pairs as they are, as IR `quantize` / `dequantize` nodes on int8 tensors; DQ of constant
weights is evaluated at import (loader step 3) into float constants. `qdq_fold.fold_qdq`
then rewrites every `dequantize -> op -> quantize` into the int8 op, recovering the int8
weights from the float constants (see there). QLinearConv / QLinearMatMul expand into the
same DQ -> Conv/MatMul -> Q form, so they fold the same way.

uint8 activations (onnxruntime's default) are imported as int8 with the zero point moved
by -128: q_u8 - zp_u8 == (q_u8 - 128) - (zp_u8 - 128), so every real value is unchanged.
That is only invisible inside the graph; a uint8 graph input or output is refused.
"""

from __future__ import annotations

import numpy as np

from ...ir import QuantParams
from .registry import converter, find_converter

# ONNX zero-point dtype -> shift that maps it onto int8.
_ZP_SHIFT = {np.dtype(np.int8): 0, np.dtype(np.uint8): -128}


def _scalar_qparams(ctx, node, scale_name: str, zp_name: str | None, what: str) -> QuantParams:
    """Per-tensor (scale, zero point) of a runtime value, as int8 QuantParams."""
    scale = ctx.const(scale_name)
    if scale is None:
        ctx.unsupported(node, f"the {what} scale must be a constant")
    zp = ctx.const(zp_name) if zp_name else np.zeros((), np.uint8)
    if zp_name and zp is None:
        ctx.unsupported(node, f"the {what} zero point must be a constant")
    if np.size(scale) != 1 or np.size(zp) != 1:
        ctx.unsupported(node, f"per-axis quantization of the runtime {what} (only weights may be per-axis)")
    zp = np.asarray(zp)
    if zp.dtype not in _ZP_SHIFT:
        ctx.unsupported(node, f"{zp.dtype} quantization (microcompile runs int8 and uint8 models)")
    s = float(np.float32(np.asarray(scale).reshape(())))
    if not s > 0:
        ctx.unsupported(node, f"the {what} scale is {s}; it must be positive")
    return QuantParams((s,), (int(zp.reshape(())) + _ZP_SHIFT[zp.dtype],))


def _int8_value(ctx, node, name: str, qp: QuantParams) -> str:
    """The IR tensor of quantized ONNX value `name`, checked to carry `qp`."""
    ir = ctx.ir(name)
    t = ctx.tensors[ir]
    if t.dtype != "int8":
        ctx.unsupported(node, f"input {name} is {t.dtype}; a quantized int8/uint8 tensor is expected")
    if t.quant is None:          # an int8 graph input: the DQ is what defines its scale
        ctx.set_quant(ir, qp)
    elif not t.quant.same_as(qp):
        ctx.unsupported(node, f"{name} is dequantized with parameters other than those it was "
                              "quantized with")
    return ir


def _check_block(ctx, node):
    if ctx.attr(node, "block_size", 0):
        ctx.unsupported(node, "blocked quantization (block_size)")


@converter("QuantizeLinear")
def _quantize_linear(ctx, node):
    _check_block(ctx, node)
    out_dtype = ctx.attr(node, "output_dtype", 0)
    if out_dtype not in (0, 2, 3):   # 0 = from the zero point; UINT8 = 2, INT8 = 3
        ctx.unsupported(node, f"output_dtype {out_dtype}")
    qp = _scalar_qparams(ctx, node, node.input[1], node.input[2] if len(node.input) > 2 else None, "output")
    x = ctx.ir(node.input[0])
    if ctx.tensors[x].dtype != "float32":
        ctx.unsupported(node, f"quantizing a {ctx.tensors[x].dtype} tensor")
    ctx.emit1("quantize", [x], {"rounding": "onnx"}, out=node.output[0], quant=qp)   # ties to even


@converter("DequantizeLinear")
def _dequantize_linear(ctx, node):
    _check_block(ctx, node)
    qp = _scalar_qparams(ctx, node, node.input[1], node.input[2] if len(node.input) > 2 else None, "input")
    ctx.emit1("dequantize", [_int8_value(ctx, node, node.input[0], qp)], out=node.output[0])


def dequantize_const(q, scale, zp, axis: int = 1) -> np.ndarray:
    """DequantizeLinear of a constant, as onnx's reference: (q - zp) * scale in float32."""
    q, scale = np.asarray(q), np.asarray(scale, np.float32)
    zp = np.zeros((), q.dtype) if zp is None else np.asarray(zp)
    if scale.size > 1:   # per-axis: one scale (and zero point) per index along `axis`
        shape = [1] * q.ndim
        shape[axis] = -1
        scale, zp = scale.reshape(shape), zp.reshape(shape)
    return ((q.astype(np.int64) - zp.astype(np.int64)).astype(np.float32) * scale).astype(np.float32)


def _qlinear(ctx, node, float_op: str, x_idx: int, w_idx: int, w_axis: int, out_idx: int, bias_idx: int | None):
    """Expand a QLinear* node into dequantize -> `float_op` (A's converter) -> quantize."""
    from onnx import helper

    ins = list(node.input) + [""] * 9
    x_qp = _scalar_qparams(ctx, node, ins[x_idx + 1], ins[x_idx + 2], "input")
    y_qp = _scalar_qparams(ctx, node, ins[out_idx], ins[out_idx + 1], "output")
    out = node.output[0]
    x_f = ctx.emit1("dequantize", [_int8_value(ctx, node, ins[x_idx], x_qp)], hint=f"{out}_x")
    x_name, w_name = f"{out}__x_dequantized", f"{out}__w_dequantized"
    ctx.bind(x_name, x_f)
    w = ctx.const(ins[w_idx])
    if w is None:
        ctx.unsupported(node, "the weights must be a constant")
    w_scale = ctx.const(ins[w_idx + 1])
    w_zp = ctx.const(ins[w_idx + 2]) if ins[w_idx + 2] else None
    if w_scale is None or (ins[w_idx + 2] and w_zp is None):
        ctx.unsupported(node, "the weight scale and zero point must be constants")
    ctx.set_const(w_name, dequantize_const(w, w_scale, w_zp, w_axis))
    float_ins = [x_name, w_name]
    if bias_idx is not None and ins[bias_idx]:
        b = ctx.const(ins[bias_idx])
        if b is None:
            ctx.unsupported(node, "the bias must be a constant")
        b_scale = np.float32(x_qp.s) * np.asarray(w_scale, np.float32).reshape(-1)
        b_float = (np.asarray(b, np.int64).astype(np.float32) * b_scale).astype(np.float32)
        ctx.set_const(f"{out}__b_dequantized", b_float)
        float_ins.append(f"{out}__b_dequantized")
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    y_name = f"{out}__float"
    synthetic = helper.make_node(float_op, float_ins, [y_name], name=node.name or out, **attrs)
    find_converter(float_op, ctx.opset)(ctx, synthetic)
    ctx.node = node
    ctx.emit1("quantize", [ctx.ir(y_name)], {"rounding": "onnx"}, out=out, quant=y_qp)


@converter("QLinearConv")
def _qlinear_conv(ctx, node):
    # x, x_scale, x_zp, w, w_scale, w_zp, y_scale, y_zp, B: weights per output channel (axis 0)
    _qlinear(ctx, node, "Conv", 0, 3, 0, 6, 8)


@converter("QLinearMatMul")
def _qlinear_matmul(ctx, node):
    # a, a_scale, a_zp, b, b_scale, b_zp, y_scale, y_zp: b per output column (axis 1)
    _qlinear(ctx, node, "MatMul", 0, 3, 1, 6, None)
