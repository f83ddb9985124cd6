"""Core ATen ops as ONNX nodes (opset 20), one function per op, registered with @aten.

Each function gets the FX node and a builder, and adds ONNX nodes whose outputs are named
after the FX node (`b.out(node)`); constants become initializers. Shapes and dtypes come
from the nodes' `meta["val"]` (fake tensors), so every value has a static shape.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...errors import UnsupportedOpError, UserError

OPSET = 20          # Gelu is an ONNX op from opset 20
ATEN: dict[str, Callable] = {}


def aten(*names: str):
    def register(fn):
        for n in names:
            assert n not in ATEN, n
            ATEN[n] = fn
        return fn
    return register


class Builder:
    """The ONNX graph being written: nodes, initializers, and the name of each FX value."""

    def __init__(self):
        self.nodes, self.inits = [], []
        self.names: dict = {}          # FX node -> ONNX value name
        self._k = 0

    def fresh(self, hint: str) -> str:
        self._k += 1
        return f"{hint}__{self._k}"

    def out(self, node) -> str:
        name = node.name
        self.names[node] = name
        return name

    def value(self, arg) -> str:
        """The ONNX name of an FX node argument, or of a new constant for a Python number."""
        if arg in self.names:
            return self.names[arg]
        if isinstance(arg, (int, float, bool)):
            return self.const(np.array(arg, np.float32), "scalar")
        raise UserError(f"cannot read the argument {arg!r} of a PyTorch op")

    def const(self, array: np.ndarray, hint: str) -> str:
        from onnx import numpy_helper
        name = self.fresh(hint)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def const_as(self, node, array: np.ndarray) -> str:
        """Make FX node `node` the constant `array` (an initializer named after it)."""
        from onnx import numpy_helper
        name = self.out(node)
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def ints(self, values, hint: str) -> str:
        return self.const(np.asarray(values, np.int64), hint)

    def add(self, op: str, inputs: list[str], outputs: list[str], **attrs) -> None:
        from onnx import helper
        self.nodes.append(helper.make_node(op, inputs, outputs, name=self.fresh(op), **attrs))


def op_key(node) -> str:
    """The table's key of an FX node: its target's name, e.g. "aten.convolution.default"."""
    return str(node.target)


def _rank(node) -> int:
    return len(node.meta["val"].shape)


@aten("aten.convolution.default")
def _convolution(b: Builder, n) -> None:
    x, w, bias, stride, padding, dilation, transposed, _output_padding, groups = n.args
    if transposed:
        raise UnsupportedOpError(f"{n.name}: aten.convolution transposed is not supported yet",
                                 hint="see docs/pytorch.md for the ops microcompile reads")
    inputs = [b.value(x), b.value(w)] + ([b.value(bias)] if bias is not None else [])
    b.add("Conv", inputs, [b.out(n)], strides=list(stride), pads=list(padding) * 2, dilations=list(dilation),
          group=int(groups))


@aten("aten._native_batch_norm_legit_no_training.default")
def _batch_norm(b: Builder, n) -> None:
    x, weight, bias, mean, var, _momentum, eps = n.args
    b.add("BatchNormalization", [b.value(v) for v in (x, weight, bias, mean, var)], [b.out(n)], epsilon=float(eps))


@aten("aten.clone.default", "aten.alias.default")
def _identity(b: Builder, n) -> None:      # clone (what eval-mode dropout leaves) copies nothing here
    b.names[n] = b.value(n.args[0])


@aten("<built-in function getitem>")
def _getitem(b: Builder, n) -> None:
    src, index = n.args
    if index != 0:
        raise UnsupportedOpError(f"{n.name}: output {index} of {src.target} is not supported")
    b.names[n] = b.names[src]


def _unary(op: str):
    def convert(b: Builder, n) -> None:
        b.add(op, [b.value(n.args[0])], [b.out(n)])
    return convert


for _name, _op in (("aten.relu.default", "Relu"), ("aten.sigmoid.default", "Sigmoid"), ("aten.tanh.default", "Tanh"),
                   ("aten.hardswish.default", "HardSwish"), ("aten.abs.default", "Abs")):
    aten(_name)(_unary(_op))


def _binary(op: str):
    def convert(b: Builder, n) -> None:
        b.add(op, [b.value(n.args[0]), b.value(n.args[1])], [b.out(n)])
    return convert


for _name, _op in (("aten.add.Tensor", "Add"), ("aten.sub.Tensor", "Sub"), ("aten.mul.Tensor", "Mul"),
                   ("aten.div.Tensor", "Div")):
    aten(_name)(_binary(_op))


@aten("aten.clamp.default", "aten.hardtanh.default")
def _clamp(b: Builder, n) -> None:
    x = n.args[0]
    lo = n.args[1] if len(n.args) > 1 else n.kwargs.get("min")
    hi = n.args[2] if len(n.args) > 2 else n.kwargs.get("max")
    if n.target.__name__.startswith("hardtanh"):
        lo, hi = (lo if lo is not None else -1.0), (hi if hi is not None else 1.0)
    ins = [b.value(x), b.value(float(lo)) if lo is not None else "", b.value(float(hi)) if hi is not None else ""]
    while ins and ins[-1] == "":
        ins.pop()
    b.add("Clip", ins, [b.out(n)])


@aten("aten.mean.dim")
def _mean(b: Builder, n) -> None:
    x, dims = n.args[0], n.args[1]
    keep = n.args[2] if len(n.args) > 2 else n.kwargs.get("keepdim", False)
    b.add("ReduceMean", [b.value(x), b.ints(list(dims), "axes")], [b.out(n)], keepdims=int(bool(keep)))


@aten("aten.view.default", "aten._unsafe_view.default", "aten.reshape.default")
def _view(b: Builder, n) -> None:
    shape = [int(d) for d in n.meta["val"].shape]
    b.add("Reshape", [b.value(n.args[0]), b.ints(shape, "shape")], [b.out(n)])


@aten("aten.permute.default")
def _permute(b: Builder, n) -> None:
    b.add("Transpose", [b.value(n.args[0])], [b.out(n)], perm=[int(p) for p in n.args[1]])


@aten("aten.t.default")
def _t(b: Builder, n) -> None:
    b.add("Transpose", [b.value(n.args[0])], [b.out(n)], perm=[1, 0])


@aten("aten.addmm.default")
def _addmm(b: Builder, n) -> None:
    bias, x, w = n.args[:3]
    b.add("Gemm", [b.value(x), b.value(w), b.value(bias)], [b.out(n)])


@aten("aten.mm.default", "aten.bmm.default", "aten.matmul.default")
def _mm(b: Builder, n) -> None:
    b.add("MatMul", [b.value(n.args[0]), b.value(n.args[1])], [b.out(n)])


@aten("aten._softmax.default")
def _softmax(b: Builder, n) -> None:
    b.add("Softmax", [b.value(n.args[0])], [b.out(n)], axis=int(n.args[1]))


@aten("aten.max_pool2d_with_indices.default", "aten.max_pool2d.default")
def _max_pool(b: Builder, n) -> None:
    x, kernel = n.args[0], list(n.args[1])
    stride = list(n.args[2]) if len(n.args) > 2 and n.args[2] else kernel
    padding = list(n.args[3]) if len(n.args) > 3 else [0, 0]
    dilation = list(n.args[4]) if len(n.args) > 4 else [1, 1]
    ceil = int(bool(n.args[5])) if len(n.args) > 5 else 0
    b.add("MaxPool", [b.value(x)], [b.out(n)], kernel_shape=kernel, strides=stride, pads=padding * 2,
          dilations=dilation, ceil_mode=ceil)


@aten("aten.avg_pool2d.default")
def _avg_pool(b: Builder, n) -> None:
    x, kernel = n.args[0], list(n.args[1])
    stride = list(n.args[2]) if len(n.args) > 2 and n.args[2] else kernel
    padding = list(n.args[3]) if len(n.args) > 3 else [0, 0]
    ceil = int(bool(n.args[4])) if len(n.args) > 4 else 0
    include_pad = int(bool(n.args[5])) if len(n.args) > 5 else 1
    b.add("AveragePool", [b.value(x)], [b.out(n)], kernel_shape=kernel, strides=stride, pads=padding * 2,
          ceil_mode=ceil, count_include_pad=include_pad)


@aten("aten._adaptive_avg_pool2d.default")
def _adaptive_avg_pool(b: Builder, n) -> None:
    """An average pool when every output cell covers the same whole window (the input size a
    multiple of the output size); PyTorch's uneven windows are not read."""
    x, size = n.args[0], [int(v) for v in n.args[1]]
    h, w = (int(d) for d in x.meta["val"].shape[-2:])
    if h % size[0] or w % size[1]:
        raise UnsupportedOpError(f"{n.name}: adaptive_avg_pool2d from {h}x{w} to {size[0]}x{size[1]} has uneven "
                                 "windows", hint="pool to a size that divides the input size (1x1 always does)")
    kernel = [h // size[0], w // size[1]]
    b.add("AveragePool", [b.value(x)], [b.out(n)], kernel_shape=kernel, strides=kernel)


@aten("aten.cat.default")
def _cat(b: Builder, n) -> None:
    tensors = n.args[0]
    dim = n.args[1] if len(n.args) > 1 else 0
    b.add("Concat", [b.value(t) for t in tensors], [b.out(n)], axis=int(dim) % _rank(n))


@aten("aten.mul.Scalar", "aten.div.Scalar")
def _scalar(b: Builder, n) -> None:
    op = "Mul" if "mul" in op_key(n) else "Div"
    b.add(op, [b.value(n.args[0]), b.value(float(n.args[1]))], [b.out(n)])


@aten("aten.native_layer_norm.default")
def _layer_norm(b: Builder, n) -> None:
    x, normalized_shape, weight, bias, eps = n.args
    rank = len(n.args[0].meta["val"].shape)
    dims = [int(d) for d in normalized_shape]
    ins = [b.value(x), b.value(weight) if weight is not None else b.const(np.ones(dims, np.float32), "ln_scale")]
    if bias is not None:
        ins.append(b.value(bias))
    b.add("LayerNormalization", ins, [b.out(n)], axis=rank - len(dims), epsilon=float(eps))


@aten("aten.gelu.default")
def _gelu(b: Builder, n) -> None:
    approximate = n.kwargs.get("approximate", n.args[1] if len(n.args) > 1 else "none")
    b.add("Gelu", [b.value(n.args[0])], [b.out(n)], approximate=str(approximate))


# What a masked score becomes: the lowest float32, so exp(score - max) is exactly 0 as with
# PyTorch's -inf, without an infinity in the model's constants.
MASKED = float(np.finfo(np.float32).min)


def _initializer(b: Builder, node) -> np.ndarray | None:
    """The constant array an FX node stands for (a buffer or lifted constant), else None."""
    from onnx import numpy_helper
    name = b.names.get(node)
    return next((numpy_helper.to_array(t) for t in b.inits if t.name == name), None)


@aten("aten.scaled_dot_product_attention.default")
def _sdpa(b: Builder, n) -> None:
    """softmax(Q K^T * scale + mask) V over the last two dims (kept whole by the decomposition
    table: core ATen's form adds NaN guards for fully masked rows). `is_causal` and a constant
    `attn_mask` (bool: False masks; float: added) become one constant added to the scores."""
    q, k, v = n.args[:3]
    opts = dict(zip(("attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"), n.args[3:]), **n.kwargs)
    mask = opts.get("attn_mask")
    mask_value = _initializer(b, mask) if mask is not None else None
    if (mask is not None and mask_value is None) or opts.get("dropout_p", 0.0) or opts.get("enable_gqa"):
        raise UnsupportedOpError(f"{n.name}: scaled_dot_product_attention with a runtime mask, dropout or GQA is "
                                 "not supported yet", hint="see docs/pytorch.md for the ops microcompile reads")
    qshape, kshape = q.meta["val"].shape, k.meta["val"].shape
    scale = opts.get("scale") or 1.0 / float(np.sqrt(int(qshape[-1])))
    rank = len(kshape)
    kt, scores, scaled, probs = (b.fresh(h) for h in ("k_t", "scores", "scaled", "probs"))
    b.add("Transpose", [b.value(k)], [kt], perm=[*range(rank - 2), rank - 1, rank - 2])
    b.add("MatMul", [b.value(q), kt], [scores])
    b.add("Mul", [scores, b.value(float(np.float32(scale)))], [scaled])
    if opts.get("is_causal") or mask_value is not None:
        length, source = int(qshape[-2]), int(kshape[-2])
        add = np.zeros((length, source), np.float32)
        if opts.get("is_causal"):
            add[np.triu(np.ones((length, source), bool), k=1)] = MASKED
        if mask_value is not None:
            add = np.where(mask_value, add, np.float32(MASKED)) if mask_value.dtype == bool else \
                np.maximum(add + mask_value.astype(np.float32), np.float32(MASKED))
        masked = b.fresh("masked")
        b.add("Add", [scaled, b.const(add.astype(np.float32), "attn_mask")], [masked])
        scaled = masked
    b.add("Softmax", [scaled], [probs], axis=-1)
    b.add("MatMul", [probs, b.value(v)], [b.out(n)])


# Ops that build constant masks (nn.MultiheadAttention's attn_mask goes through zeros_like and
# masked_fill, which core ATen spells full_like, scalar_tensor and where): when every tensor
# argument is a constant, torch evaluates them at import, so the mask reaches
# scaled_dot_product_attention as one constant. Pure tensor functions of torch's own; a runtime
# argument is refused (where, which the graph has an op for, excepted).
CONSTANT_ATEN = ("aten.zeros_like.default", "aten.ones_like.default", "aten.full_like.default", "aten.full.default",
                 "aten.zeros.default", "aten.ones.default", "aten.scalar_tensor.default", "aten.logical_not.default",
                 "aten.bitwise_not.default", "aten.eq.Scalar", "aten.ne.Scalar", "aten.triu.default",
                 "aten.tril.default", "aten.masked_fill.Scalar", "aten._to_copy.default")


_SHAPE_ONLY = ("aten.zeros_like.default", "aten.ones_like.default", "aten.full_like.default")


def _fx_args(node) -> list:
    import torch.fx
    out: list = []
    torch.fx.node.map_arg((node.args, node.kwargs), out.append)
    return out


def _evaluate(b: Builder, n) -> bool:
    """Evaluate `n` with torch when all its tensor arguments are constants; False otherwise."""
    import torch
    import torch.fx

    values = {a: _initializer(b, a) for a in _fx_args(n)}
    if op_key(n) in _SHAPE_ONLY:      # zeros_like(x) and the like read x's shape, not its values
        values = {a: np.zeros(tuple(a.meta["val"].shape), str(a.meta["val"].dtype).replace("torch.", ""))
                  if v is None else v for a, v in values.items()}
    if any(v is None for v in values.values()):
        return False
    args, kwargs = torch.fx.node.map_arg((n.args, n.kwargs), lambda a: torch.from_numpy(np.array(values[a])))
    kwargs = {k: v for k, v in kwargs.items() if k not in ("device", "pin_memory", "layout")}
    result = n.target(*args, **kwargs).detach().cpu().numpy()
    b.const_as(n, result.astype(np.float32) if result.dtype == np.float64 else result)
    return True


def _constant_op(b: Builder, n) -> None:
    if not _evaluate(b, n):
        raise UnsupportedOpError(f"{n.name}: {op_key(n)} of a run-time tensor is not supported (microcompile "
                                 "evaluates it on constants only: masks)", hint="see docs/pytorch.md")


for _name in CONSTANT_ATEN:
    aten(_name)(_constant_op)

# The shape ops a constant mask passes through on its way to scaled_dot_product_attention: on
# constants they are evaluated too (to_onnx), so the mask arrives as one constant.
FOLDED_ON_CONSTANTS = CONSTANT_ATEN + ("aten.where.self", "aten.view.default", "aten.reshape.default",
                                       "aten.unsqueeze.default", "aten.squeeze.dim", "aten.squeeze.dims",
                                       "aten.expand.default", "aten.clone.default", "aten.contiguous.default")


@aten("aten.where.self")
def _where(b: Builder, n) -> None:
    if not _evaluate(b, n):
        cond = b.fresh("cond")
        b.add("Cast", [b.value(n.args[0])], [cond], to=6)       # INT32: the graph's 0/1 condition
        b.add("Where", [cond, b.value(n.args[1]), b.value(n.args[2])], [b.out(n)])


@aten("aten.expand.default")
def _expand(b: Builder, n) -> None:
    b.add("Expand", [b.value(n.args[0]), b.ints([int(d) for d in n.meta["val"].shape], "shape")], [b.out(n)])


@aten("aten.select.int")
def _select(b: Builder, n) -> None:
    x, dim, index = n.args
    rank = len(x.meta["val"].shape)
    b.add("Gather", [b.value(x), b.const(np.array(int(index), np.int64), "index")], [b.out(n)], axis=int(dim) % rank)


@aten("aten.slice.Tensor")
def _slice(b: Builder, n) -> None:
    x = n.args[0]
    dim, start, end, step = (list(n.args[1:]) + [0, None, None, 1][len(n.args) - 1:])[:4]
    size = int(x.meta["val"].shape[int(dim)])
    start, end = int(start or 0), size if end is None else min(int(end), size)
    b.add("Slice", [b.value(x), b.ints([start], "starts"), b.ints([end], "ends"), b.ints([int(dim)], "axes"),
                    b.ints([int(step or 1)], "steps")], [b.out(n)])


@aten("aten.squeeze.dims", "aten.squeeze.dim", "aten.squeeze.default", "aten.unsqueeze.default")
def _squeeze(b: Builder, n) -> None:
    shape = [int(d) for d in n.meta["val"].shape]      # a reshape to the result's shape: the same bytes
    b.add("Reshape", [b.value(n.args[0]), b.ints(shape, "shape")], [b.out(n)])


def decompositions():
    """torch.export's default table (core ATen), but scaled_dot_product_attention kept whole."""
    import torch
    table = torch.export.default_decompositions()
    table.pop(torch.ops.aten.scaled_dot_product_attention.default, None)
    return table


def to_onnx(program, name: str):
    """The ONNX model of an ExportedProgram (core ATen)."""
    import torch
    from onnx import TensorProto, helper

    b = Builder()
    sig = program.graph_signature
    params = {**sig.inputs_to_parameters, **sig.inputs_to_buffers}
    state = program.state_dict
    constants = getattr(program, "constants", {})
    inputs, missing = [], []
    for node in program.graph.nodes:
        if node.op == "placeholder":
            if node.name in params:
                tensor = state[params[node.name]] if params[node.name] in state else constants[params[node.name]]
                b.names[node] = node.name
                from onnx import numpy_helper
                array = tensor.detach().cpu().numpy()
                if array.dtype == np.float64:
                    array = array.astype(np.float32)
                if array.dtype == np.int64 and "zero_point" in node.name:
                    array = array.astype(np.int8)      # PT2E's per-channel zero points: int8 weights'
                b.inits.append(numpy_helper.from_array(array, node.name))
            else:
                b.names[node] = node.name
                val = node.meta["val"]
                if val.dtype != torch.float32:
                    raise UserError(f"input {node.name} is {val.dtype}; microcompile reads float32 inputs of PyTorch "
                                    f"programs")
                inputs.append(helper.make_tensor_value_info(node.name, TensorProto.FLOAT, [int(d) for d in val.shape]))
        elif node.op == "call_function":
            if op_key(node) not in ATEN:
                missing.append(op_key(node))
    if missing:
        raise UnsupportedOpError(f"the program uses {len(set(missing))} ATen op(s) microcompile does not read: "
                                 f"{', '.join(sorted(set(missing)))}", hint="see docs/pytorch.md")
    outputs = []
    for node in program.graph.nodes:
        if node.op == "call_function":
            if op_key(node) in FOLDED_ON_CONSTANTS and _evaluate(b, node):
                continue
            ATEN[op_key(node)](b, node)
        elif node.op == "output":
            for o in node.args[0]:
                val = o.meta["val"]
                outputs.append(helper.make_tensor_value_info(b.names[o], TensorProto.FLOAT,
                                                             [int(d) for d in val.shape]))
    graph = helper.make_graph(b.nodes, name, inputs, outputs, initializer=b.inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="microcompile")


# ---- PT2E quantization: quantize/dequantize pairs become ONNX QuantizeLinear/DequantizeLinear,
# which the ONNX reader folds into int8 kernels (frontend/onnx/qdq.py).

_QDTYPES = {"torch.int8": np.int8, "torch.uint8": np.uint8}


def _qparams(b: Builder, scale, zero_point, dtype) -> tuple[str, str]:
    np_dtype = _QDTYPES.get(str(dtype))
    if np_dtype is None:
        raise UnsupportedOpError(f"PT2E quantization to {dtype} is not supported", hint="quantize to int8 or uint8")
    s = b.const(np.asarray(scale, np.float32), "scale") if not hasattr(scale, "name") else b.value(scale)
    z = b.const(np.asarray(zero_point).astype(np_dtype), "zero_point") if not hasattr(zero_point, "name") \
        else b.value(zero_point)
    return s, z


@aten("quantized_decomposed.quantize_per_tensor.default")
def _quantize_per_tensor(b: Builder, n) -> None:
    x, scale, zp, _qmin, _qmax, dtype = n.args[:6]
    s, z = _qparams(b, scale, zp, dtype)
    b.add("QuantizeLinear", [b.value(x), s, z], [b.out(n)])


@aten("quantized_decomposed.dequantize_per_tensor.default")
def _dequantize_per_tensor(b: Builder, n) -> None:
    x, scale, zp, _qmin, _qmax, dtype = n.args[:6]
    s, z = _qparams(b, scale, zp, dtype)
    b.add("DequantizeLinear", [b.value(x), s, z], [b.out(n)])


@aten("quantized_decomposed.dequantize_per_channel.default")
def _dequantize_per_channel(b: Builder, n) -> None:
    x, scales, zps, axis = n.args[:4]
    b.add("DequantizeLinear", [b.value(x), b.value(scales), b.value(zps)], [b.out(n)], axis=int(axis))
