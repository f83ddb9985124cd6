"""Constant folding at import: a node whose inputs are all constants (and Shape or Size of
anything, since every shape is static) is evaluated with onnx's reference evaluator.

Its inputs come from the file, and a few of them can ask for gigabytes (Expand of a scalar to
[65536, 32768] is 181 bytes of model). So the sizes of what a node will make are known before
it is evaluated, and taken from the compiler's budget (ir/budget.py):

- its outputs' shapes come from onnx's own shape inference, given the values of its small
  constant inputs (Expand's shape, Tile's repeats, Range's bounds, Pad's pads, Resize's sizes,
  OneHot's depth ...), so one rule serves every op, present and future;
- ops whose output size depends on their data (NonZero, Unique, Compress) are bounded by
  their input's size;
- ops whose evaluation needs more than their outputs add that working set: onnx evaluates a
  convolution through an im2col of every output position times the filter's taps.

A node whose output shapes onnx cannot infer is refused, not evaluated: every input is a
constant of known shape and value, so onnx infers the outputs of every standard op but the
data-dependent ones above; what is left is a malformed node (which the evaluator would
refuse as well) or an op onnx does not know (which it cannot evaluate either).
"""

from __future__ import annotations

import warnings

import numpy as np

from ...errors import UnsupportedOpError, shown
from ...ir import budget
from .context import Ctx

# Inputs of at most this many elements are given to shape inference with their values: the
# inputs that decide a shape are a few numbers, and a weight's values never do.
_VALUES_FOR_INFERENCE = 4096


def _itemsize(elem_type: int) -> int:
    from onnx import helper
    try:
        return max(np.dtype(helper.tensor_dtype_to_np_dtype(elem_type)).itemsize, 1)
    except (KeyError, TypeError, ValueError):
        return 8      # a type numpy has no fixed size for (strings): a pointer each


def _inferred(node, ins: dict[str, np.ndarray], opsets: dict[str, int]) -> list[tuple[tuple, int]] | str:
    """(shape, itemsize) of each output of `node`, from onnx's shape inference; or why onnx
    cannot say."""
    from onnx import defs, helper, numpy_helper, shape_inference
    domain = node.domain or ""
    try:
        schema = defs.get_schema(node.op_type, opsets.get(domain, 0), domain)
    except Exception:   # onnx.defs.SchemaError: no such op in that domain and opset
        return "onnx knows no such op"
    types, values = {}, {}
    for name, a in ins.items():
        try:
            types[name] = helper.make_tensor_type_proto(helper.np_dtype_to_tensor_dtype(a.dtype), list(a.shape))
            if a.size <= _VALUES_FOR_INFERENCE:
                values[name] = numpy_helper.from_array(a, name)
        except (KeyError, TypeError, ValueError) as e:
            return f"input {shown(name)!r} has a type shape inference does not take ({type(e).__name__})"
    imports = [helper.make_opsetid(d, v) for d, v in opsets.items() if d != "ai.onnx"]
    try:
        out = shape_inference.infer_node_outputs(schema, node, types, values, opset_imports=imports)
    except Exception as e:   # onnx.shape_inference.InferenceError and friends: a malformed node
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return f"shape inference fails: {shown(first, 200)}"
    shapes = []
    for name in node.output:
        if not name:
            continue
        t = out.get(name)
        if t is None or not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
            return f"shape inference gives no shape for output {shown(name)!r}"
        dims = t.tensor_type.shape.dim
        if any(not d.HasField("dim_value") or d.dim_value < 0 for d in dims):
            return f"shape inference gives output {shown(name)!r} no static shape"
        shapes.append((tuple(d.dim_value for d in dims), _itemsize(t.tensor_type.elem_type)))
    return shapes


def _data_dependent(node, ins: list[np.ndarray]) -> list[tuple[tuple, int]] | None:
    """Upper bounds of the outputs of an op whose output size depends on its data."""
    x = ins[0] if ins else None
    if x is None:
        return None
    if node.op_type == "NonZero":     # the int64 coordinates of at most every element
        return [((x.ndim, x.size), 8)]
    if node.op_type == "Unique":      # at most every element, with its int64 indices and counts
        return [((x.size,), x.itemsize)] + [((x.size,), 8)] * (len(node.output) - 1)
    if node.op_type == "Compress":    # at most the input
        return [(x.shape, x.itemsize)]
    return None


# ops onnx's evaluator computes through an im2col (Conv: int64 index arrays of every output
# position times every input channel's taps) or a GEMM before a col2im (ConvTranspose: every
# input position times every output channel's taps)
_CONVOLUTIONS = {"Conv", "ConvInteger", "QLinearConv", "ConvTranspose"}


def _working_set(node, ins: list, outputs: list[tuple[tuple, int]]) -> tuple[str, tuple, int] | None:
    """The largest tensor onnx's evaluator makes for convolution `node` besides its outputs:
    (what it is, shape, itemsize); None for other ops."""
    if node.op_type not in _CONVOLUTIONS or len(ins) < 2 or ins[0] is None or not outputs:
        return None
    x, w = ins[0], ins[3] if node.op_type == "QLinearConv" else ins[1]
    if w is None or x.ndim < 3 or w.ndim != x.ndim:
        return None        # a malformed node: shape inference has refused it already
    taps = budget.elements(w.shape[2:])
    if node.op_type == "ConvTranspose":
        group = int(Ctx.attr(node, "group", 1) or 1)
        return ("the GEMM before the col2im", (x.shape[0] * w.shape[1] * group * taps, budget.elements(x.shape[2:])),
                max(x.itemsize, w.itemsize))
    return "the im2col", (x.shape[0] * x.shape[1] * taps, budget.elements(outputs[0][0][2:])), 8


def fold(ctx: Ctx, node, opsets: dict[str, int], tally: budget.Tally) -> None:
    """Evaluate `node`, whose inputs are constants, into constants, after taking the sizes of
    what it makes from `tally`. ModelFormatError (exit 2) for a node that would make too much,
    UnsupportedOpError for one whose sizes cannot be known or that onnx cannot evaluate."""
    what = f"{ctx.what(node)}, folded at import"
    if node.op_type == "Shape":
        shape = np.array(ctx.shape(node.input[0]), np.int64)
        start, end = Ctx.attr(node, "start", 0), Ctx.attr(node, "end", None)
        ctx.set_const(node.output[0], shape[start:end])
        return
    if node.op_type == "Size":
        ctx.set_const(node.output[0], np.array(budget.elements(ctx.shape(node.input[0])), np.int64))
        return
    feeds = {x: ctx.const(x) for x in node.input if x}
    ins = [np.asarray(feeds[x]) if x else None for x in node.input]
    outputs = _inferred(node, {k: np.asarray(v) for k, v in feeds.items()}, opsets)
    if isinstance(outputs, str):
        outputs = _data_dependent(node, ins) or outputs
    if isinstance(outputs, str):
        raise UnsupportedOpError(f"{what}: cannot tell the size of its outputs before evaluating it ({outputs})",
                                 hint="microcompile evaluates a constant node only when onnx's shape inference "
                                      "gives its output shapes; check the model with "
                                      "onnx.checker.check_model(model, full_check=True)")
    for shape, itemsize in outputs:
        tally.take(what, shape, itemsize)
    scratch = _working_set(node, ins, outputs)
    if scratch is not None:
        kind, shape, itemsize = scratch
        budget.check_tensor(f"{what} ({kind} of onnx's evaluator)", shape, itemsize)
    _evaluate(ctx, node, opsets, feeds, what)


def _evaluate(ctx: Ctx, node, opsets: dict[str, int], feeds: dict, what: str) -> None:
    from onnx.reference import ReferenceEvaluator
    try:
        # onnx's evaluator computes in numpy: an overflow or a NaN cast is a value here (checked
        # later by the validation), not a RuntimeWarning for the user's terminal
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore", RuntimeWarning)
            results = ReferenceEvaluator(node, opsets=dict(opsets)).run(None, feeds)
    except Exception as e:
        raise UnsupportedOpError(f"{what}: cannot evaluate it ({type(e).__name__}: {shown(str(e), 200)})",
                                 hint="this constant subgraph is not supported") from None
    for name, value in zip(node.output, results):
        if name:
            ctx.set_const(name, np.asarray(value))
