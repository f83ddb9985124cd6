"""ONNX model -> Graph (float32 and plain models; QDQ/QLinear import registers here too).

    load_onnx(path_or_model, input_shapes=None, nhwc_io=False) -> Graph

Layout convention
-----------------
Every converter works in ONNX's own layout: an IR tensor made for an ONNX value has the
ONNX value's shape (NCHW for images), and axis attributes keep their ONNX meaning. The
only NHWC ops of the IR (conv2d, depthwise_conv2d, transpose_conv2d, pools, resize) are
wrapped by the converter in a TRANSPOSE NCHW->NHWC before and NHWC->NCHW after
(`Ctx.to_nhwc` / `Ctx.to_nchw`); weights are transposed at import. The graph pass
`transform/cancel_transposes.py` then sinks those transposes through layout-agnostic ops
and cancels inverse pairs, so a CNN runs NHWC end to end.

The model's inputs and outputs keep ONNX's layout (NCHW) by default, so the compiled
model is a drop-in replacement for onnxruntime: one TRANSPOSE remains at a 4-D input or
output unless it only moves size-1 dims (then it is a reshape, free). With
`nhwc_io=True` 4-D inputs/outputs are NHWC and no transpose remains at the edges.

Converter-table API (shared by every op-family module of this package)
---------------------------------------------------------------------
A converter is `fn(ctx: Ctx, node: onnx.NodeProto) -> None`, registered with

    @converter("Conv", opsets=(11, 21), domain="")
    def _conv(ctx, node): ...

`CONVERTERS[(domain, op_type)]` holds `(first_opset, last_opset, fn)` entries; the one
whose inclusive range holds the model's opset for that domain is used (`find_converter`).
A converter reads its inputs and attributes through the `Ctx` (context.py):

    ctx.opset                      the model's opset for the default domain
    ctx.attr(node, "group", 1)     an attribute, decoded (ints/floats/strings/tensors)
    ctx.const(name)                numpy value of a constant ONNX value, else None
    ctx.shape(name), ctx.dtype(name)   static shape / IR dtype of any ONNX value
    ctx.ir(name)                   IR tensor name holding an ONNX value (materializes
                                   constants as IR constant tensors, int64 -> int32)
    ctx.add_const(array, hint)     a new IR constant tensor, returns its name
    ctx.emit(op, inputs, attrs, outputs=None, quant=None) -> list[str]
                                   appends an IR node (inputs are IR names); output shapes
                                   come from the op registry's inference; when `outputs`
                                   (ONNX names) is given they are bound to the results.
    ctx.bind(onnx_name, ir_name)   make an ONNX value stand for an existing IR tensor
    ctx.set_const(onnx_name, arr)  make an ONNX value a compile-time constant
    ctx.set_quant(ir_name, qp)     attach QuantParams to an IR tensor (QDQ import)
    ctx.to_nhwc(ir_name) / ctx.to_nchw(ir_name)   layout transposes (4-D)
    ctx.unsupported(node, why)     raise: the feature is not supported (never guess)

A node whose inputs are all constants is evaluated at import with onnx's reference
evaluator (shape chains: Shape -> Gather -> Unsqueeze -> Concat), so converters only see
nodes with at least one runtime input. Unsupported op types are all listed at once, before
any conversion, in an UnsupportedOpError.
"""

from __future__ import annotations

def load_onnx(path_or_model, input_shapes: dict | None = None, nhwc_io: bool = False, name: str | None = None):
    """Read an .onnx file (or a ModelProto) into a verified Graph; see the module docstring."""
    from .loader import load
    return load(path_or_model, input_shapes=input_shapes, nhwc_io=nhwc_io, name=name)


def list_onnx_ops(path_or_model, input_shapes: dict | None = None) -> list[tuple[int, str, str, bool]]:
    """(node index, op type, first output name, supported) for `inspect`."""
    from .loader import list_ops
    return list_ops(path_or_model, input_shapes)


from .registry import CONVERTERS, OPSET_MAX, OPSET_MIN, converter, find_converter  # noqa: F401,E402

# The op families, each registering its converters with @converter.
from . import convert_conv, convert_elementwise, convert_pool, convert_recurrent, convert_shape, qdq  # noqa: F401,E402
