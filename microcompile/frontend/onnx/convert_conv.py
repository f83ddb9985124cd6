"""Conv, ConvTranspose, Gemm, MatMul, BatchNormalization.

Weights are constants, transposed at import into the IR's layouts (conv2d OHWI,
depthwise 1HWC, fully_connected (units, depth)). The activation is wrapped in
NCHW<->NHWC transposes (see the package docstring); 1-D convolutions run as 2-D ones
with H = 1. BatchNormalization folds into the conv/Gemm that feeds it when nothing else
reads that conv's output; otherwise it is a per-channel mul + add.
"""

from __future__ import annotations

import numpy as np

from ...ir.ops import same_padding
from .registry import converter


def _weights(ctx, node, i: int, what: str) -> np.ndarray:
    w = ctx.const(node.input[i]) if len(node.input) > i else None
    if w is None:
        ctx.unsupported(node, f"the {what} must be a constant (initializer)")
    return np.asarray(w, np.float32)


def spatial_input(ctx, node, x: str):
    """(IR name of a 4-D NCHW input, was_1d)."""
    shape = ctx.tensors[x].shape
    if len(shape) == 3:
        return ctx.reshape(x, (shape[0], shape[1], 1, shape[2])), True
    if len(shape) != 4:
        ctx.unsupported(node, f"{len(shape) - 2}-D spatial input {shape}; only 1-D and 2-D are supported")
    return x, False


def _pair(v, one_d: bool, default):
    if v is None:
        return default
    v = [int(x) for x in v]
    return ((1,) + tuple(v)) if one_d else tuple(v)


def conv_padding(ctx, node, in_hw, k_hw, stride, dilation, one_d: bool) -> tuple[int, int, int, int]:
    """ONNX pads / auto_pad as the IR's (top, left, bottom, right)."""
    auto = ctx.attr(node, "auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        (t, b), (l, r) = (same_padding(in_hw[i], k_hw[i], stride[i], dilation[i]) for i in range(2))
        return (t, l, b, r) if auto == "SAME_UPPER" else (b, r, t, l)
    if auto == "VALID":
        return (0, 0, 0, 0)
    pads = ctx.attr(node, "pads")
    if pads is None:
        return (0, 0, 0, 0)
    pads = [int(p) for p in pads]
    if one_d:
        return (0, pads[0], 0, pads[1])
    return (pads[0], pads[1], pads[2], pads[3])


@converter("Conv")
def _conv(ctx, node):
    x, one_d = spatial_input(ctx, node, ctx.ir(node.input[0]))
    w = _weights(ctx, node, 1, "weight")
    if one_d:
        w = w[:, :, None, :]
    bias = _weights(ctx, node, 2, "bias") if len(node.input) > 2 and node.input[2] else None
    n, c, h, wd = ctx.tensors[x].shape
    m, cg, kh, kw = w.shape
    group = int(ctx.attr(node, "group", 1))
    stride = _pair(ctx.attr(node, "strides"), one_d, (1, 1))
    dilation = _pair(ctx.attr(node, "dilations"), one_d, (1, 1))
    attrs = {"stride": stride, "dilation": dilation,
             "padding": conv_padding(ctx, node, (h, wd), (kh, kw), stride, dilation, one_d)}
    xn = ctx.to_nhwc(x)
    if group == 1:
        y = _conv2d(ctx, xn, w, bias, attrs, node.output[0])
    elif group == c and cg == 1:
        wd_ = w.reshape(m, kh, kw).transpose(1, 2, 0)[None]
        ins = [xn, ctx.add_const(wd_, node.output[0] + "_filter")]
        ins.append(ctx.add_const(bias, node.output[0] + "_bias") if bias is not None else "")
        y = ctx.emit1("depthwise_conv2d", ins, dict(attrs, depth_multiplier=m // c))
    else:   # grouped: split the channels, one conv per group, concatenate
        parts = ctx.emit("split_v", [xn], {"axis": 3, "sizes": (c // group,) * group})
        mg = m // group
        ys = [_conv2d(ctx, p, w[k * mg:(k + 1) * mg], None if bias is None else bias[k * mg:(k + 1) * mg],
                      attrs, f"{node.output[0]}_g{k}") for k, p in enumerate(parts)]
        y = ctx.emit1("concatenation", ys, {"axis": 3})
    spatial_output(ctx, node, y, one_d)


def _conv2d(ctx, xn, w, bias, attrs, hint):
    ins = [xn, ctx.add_const(w.transpose(0, 2, 3, 1), hint + "_filter")]
    ins.append(ctx.add_const(bias, hint + "_bias") if bias is not None else "")
    return ctx.emit1("conv2d", ins, attrs)


def spatial_output(ctx, node, y_nhwc, one_d: bool):
    if one_d:
        y = ctx.to_nchw(y_nhwc)
        n, m, _, w = ctx.tensors[y].shape
        ctx.reshape(y, (n, m, w), out=node.output[0])
    else:
        ctx.to_nchw(y_nhwc, out=node.output[0])


@converter("ConvTranspose")
def _conv_transpose(ctx, node):
    x, one_d = spatial_input(ctx, node, ctx.ir(node.input[0]))
    w = _weights(ctx, node, 1, "weight")
    if one_d:
        w = w[:, :, None, :]
    bias = _weights(ctx, node, 2, "bias") if len(node.input) > 2 and node.input[2] else None
    if int(ctx.attr(node, "group", 1)) != 1:
        ctx.unsupported(node, "grouped ConvTranspose")
    if any(d != 1 for d in ctx.attr(node, "dilations", [1])):
        ctx.unsupported(node, "dilated ConvTranspose")
    _, _, h, wd = ctx.tensors[x].shape
    _, m, kh, kw = w.shape
    stride = _pair(ctx.attr(node, "strides"), one_d, (1, 1))
    out_pad = _pair(ctx.attr(node, "output_padding"), one_d, (0, 0))
    base = [(h - 1) * stride[0] + kh, (wd - 1) * stride[1] + kw]   # output size with no padding
    auto = ctx.attr(node, "auto_pad", "NOTSET")
    out_shape = ctx.attr(node, "output_shape")
    if out_shape is not None or auto in ("SAME_UPPER", "SAME_LOWER"):
        target = tuple(out_shape)[-2:] if out_shape is not None else (h * stride[0], wd * stride[1])
        if one_d and out_shape is not None:
            target = (1, int(out_shape[-1]))
        total = [base[i] + out_pad[i] - target[i] for i in range(2)]
        # ONNX: SAME_UPPER puts the extra pixel of cropping at the end, otherwise at the start.
        lo = [t // 2 if auto == "SAME_UPPER" else t - t // 2 for t in total]
        top, left, bottom, right = lo[0], lo[1], total[0] - lo[0] - out_pad[0], total[1] - lo[1] - out_pad[1]
    elif auto == "VALID":
        top, left, bottom, right = 0, 0, -out_pad[0], -out_pad[1]
    else:
        p = [int(v) for v in ctx.attr(node, "pads", [0] * (2 if one_d else 4))]
        pads = (0, p[0], 0, p[1]) if one_d else tuple(p)
        # output_padding extends the bottom/right edge: negative cropping there.
        top, left, bottom, right = pads[0], pads[1], pads[2] - out_pad[0], pads[3] - out_pad[1]
    if min(top, left, bottom, right) < 0:
        ctx.unsupported(node, "output_padding larger than the end padding")
    oh, ow = base[0] - top - bottom, base[1] - left - right
    ins = [ctx.to_nhwc(x), ctx.add_const(w.transpose(1, 2, 3, 0), node.output[0] + "_filter")]
    ins.append(ctx.add_const(bias, node.output[0] + "_bias") if bias is not None else "")
    y = ctx.emit1("transpose_conv2d", ins, {"stride": stride, "padding": (top, left, bottom, right),
                                            "output_hw": (oh, ow)})
    spatial_output(ctx, node, y, one_d)


@converter("Gemm")
def _gemm(ctx, node):
    a = ctx.ir(node.input[0])
    if ctx.attr(node, "transA", 0):
        a = ctx.transpose(a, (1, 0))
    b = ctx.const(node.input[1])
    if b is None:
        ctx.unsupported(node, "B must be a constant (a runtime matrix product is not supported)")
    b = np.asarray(b, np.float32)
    weights = b if ctx.attr(node, "transB", 0) else b.T
    weights = weights * np.float32(ctx.attr(node, "alpha", 1.0))
    units = weights.shape[0]
    c = ctx.const(node.input[2]) if len(node.input) > 2 and node.input[2] else None
    if len(node.input) > 2 and node.input[2] and c is None:
        ctx.unsupported(node, "C must be a constant")
    bias = None
    if c is not None:
        c = np.asarray(c, np.float32) * np.float32(ctx.attr(node, "beta", 1.0))
        rows = ctx.tensors[a].shape[0]
        if c.size == units or c.size == 1:
            bias = np.broadcast_to(c.reshape(-1), (units,)).copy()
        elif np.broadcast_shapes(c.shape, (rows, units)) != (rows, units):
            ctx.unsupported(node, f"C of shape {c.shape}")
    ins = [a, ctx.add_const(np.ascontiguousarray(weights), node.output[0] + "_weights")]
    ins.append(ctx.add_const(bias, node.output[0] + "_bias") if bias is not None else "")
    if c is not None and bias is None:
        y = ctx.emit1("fully_connected", ins)
        ctx.emit1("add", [y, ctx.add_const(c, node.output[0] + "_c")], out=node.output[0])
    else:
        ctx.emit1("fully_connected", ins, out=node.output[0])


@converter("MatMul")
def _matmul(ctx, node):
    a = ctx.ir(node.input[0])
    b = ctx.const(node.input[1])
    if b is None or np.ndim(b) != 2:
        _batch_matmul(ctx, node, a)
        return
    shape = ctx.tensors[a].shape
    if len(shape) < 2:
        ctx.unsupported(node, "a 1-D left-hand side")
    ins = [a, ctx.add_const(np.ascontiguousarray(np.asarray(b, np.float32).T), node.output[0] + "_weights"), ""]
    ctx.emit1("fully_connected", ins, {"keep_num_dims": len(shape) > 2}, out=node.output[0])


def _batch_matmul(ctx, node, a: str) -> None:
    """MatMul of two runtime (or a runtime and a batched constant) operands, rank >= 2 each:
    float32 batch_matmul (attention's Q K^T and P V)."""
    b = ctx.const(node.input[1])
    b = ctx.add_const(np.asarray(b, np.float32), node.input[1]) if b is not None else ctx.ir(node.input[1])
    if ctx.dtype(node.input[0]) != "float32" or ctx.tensors[b].dtype != "float32":
        ctx.unsupported(node, "a quantized MatMul of two runtime operands")
    if len(ctx.tensors[a].shape) < 2 or len(ctx.tensors[b].shape) < 2:
        ctx.unsupported(node, "a 1-D operand of a MatMul of two runtime operands")
    ctx.emit1("batch_matmul", [a, b], out=node.output[0])


@converter("BatchNormalization")
def _batch_norm(ctx, node):
    x = ctx.ir(node.input[0])
    params = [ctx.const(i) for i in node.input[1:5]]
    if any(p is None for p in params):
        ctx.unsupported(node, "scale, bias, mean and variance must be constants (inference mode)")
    if len(node.output) > 1 and any(node.output[1:]):
        ctx.unsupported(node, "training mode (running statistics outputs)")
    gamma, beta, mean, var = (np.asarray(p, np.float64) for p in params)
    scale = gamma / np.sqrt(var + float(ctx.attr(node, "epsilon", 1e-5)))
    shift = beta - mean * scale
    if _fold_into_producer(ctx, node, x, scale, shift):
        return
    rank = len(ctx.tensors[x].shape)
    bshape = (-1,) + (1,) * (rank - 2)
    y = ctx.emit1("mul", [x, ctx.add_const(scale.astype(np.float32).reshape(bshape), node.output[0] + "_scale")])
    ctx.emit1("add", [y, ctx.add_const(shift.astype(np.float32).reshape(bshape), node.output[0] + "_shift")],
              out=node.output[0])


def _fold_into_producer(ctx, node, x: str, scale, shift) -> bool:
    """Scale the weights and bias of the conv / fully_connected that alone feeds `x`."""
    producers = {o: n for n in ctx.nodes for o in n.outputs}
    readers = [n for n in ctx.nodes for i in n.inputs if i == x]
    p = producers.get(x)
    if p is None or readers or ctx.onnx_uses.get(node.input[0], 0) != 1:
        return False
    if p.op == "transpose" and p.attrs["perm"] == (0, 3, 1, 2):
        inner = producers.get(p.inputs[0])
        if inner is None or sum(i == p.inputs[0] for n in ctx.nodes for i in n.inputs) != 1:
            return False
        p = inner
    if p.op not in ("conv2d", "depthwise_conv2d", "fully_connected") or p.attrs.get("activation") != "NONE":
        return False
    w = ctx.tensors[p.inputs[1]]
    if w.dtype != "float32":
        return False
    axis = 3 if p.op == "depthwise_conv2d" else 0
    n_out = w.shape[axis]
    if scale.size != n_out:
        return False
    bshape = [1] * len(w.shape)
    bshape[axis] = n_out
    new_w = (w.data.astype(np.float64) * scale.reshape(bshape)).astype(np.float32)
    ctx.tensors[w.name] = w.replace(data=new_w)
    old_b = ctx.tensors[p.inputs[2]].data.astype(np.float64) if p.inputs[2] else np.zeros(n_out)
    new_b = (old_b * scale + shift).astype(np.float32)
    b_name = ctx.add_const(new_b, p.outputs[0] + "_bias_bn")
    idx = ctx.nodes.index(p)
    ctx.nodes[idx] = p.replace(inputs=(p.inputs[0], p.inputs[1], b_name),
                               origin=p.origin + ((node.name or node.output[0]),))
    ctx.bind(node.output[0], x)
    return True
