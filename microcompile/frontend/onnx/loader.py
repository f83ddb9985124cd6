"""Loading: check the file, pin input shapes, fold constants, run the converters, verify.

Steps, so that a bad or unsupported model fails before any conversion work:
1. read and `onnx.checker.check_model` (failure -> ModelFormatError);
2. opset check (11..21) and static input shapes (dynamic dims -> UserError unless pinned);
3. constness analysis: a node with only constant inputs (and Shape of anything, since all
   shapes are static) is evaluated at import; every other node needs a converter, and all
   missing ones are listed in one UnsupportedOpError;
4. conversion in node order, then `verify`.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from ...errors import ModelFormatError, UnsupportedOpError, UserError, shown
from ...escape import valid_text
from ...files import MODEL_BYTES_MAX, read_file
from ...ir import Graph, VerifyError, budget, verify
from ...ir.verify import MISFIT
from ..validate import validate
from .registry import CONVERTERS, OPSET_MAX, OPSET_MIN, find_converter
from .context import NCHW_TO_NHWC, Ctx
from .fold import fold
from .qdq_fold import fold_qdq
from .wire import node_with_subgraph

# ONNX TensorProto element type -> IR dtype of a graph input.
_INPUT_DTYPES = {1: "float32", 3: "int8", 6: "int32"}
# Ops evaluated at import when their inputs are constant, even without a converter; and
# ops whose output depends only on the input's (static) shape.
_SHAPE_ONLY = {"Shape", "Size"}
_NONDETERMINISTIC = {"RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial",
                     "Bernoulli"}


def _read(path_or_model):
    import onnx
    if isinstance(path_or_model, onnx.ModelProto):
        model = _text_names(path_or_model)
        return model, model.graph.name or "onnx_model"
    path = Path(os.fspath(path_or_model))
    data = read_file(path, "model file", MODEL_BYTES_MAX, ModelFormatError)
    try:
        model = onnx.load_model_from_string(data)
    except Exception as e:   # protobuf DecodeError and friends: a truncated or non-ONNX file
        _too_deep(e, data, path)
        raise ModelFormatError(f"{path} is not a readable ONNX model ({type(e).__name__}: {shown(str(e), 200)})",
                               hint="re-export the model; the file may be truncated") from None
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data
    if any(uses_external_data(t) for t in model.graph.initializer):
        try:   # weights in files next to the model (models over 2 GB); read by onnx itself
            load_external_data_for_model(model, str(path.parent))
        except Exception as e:
            raise ModelFormatError(f"{path}: cannot read its external weight files ({type(e).__name__}: "
                                   f"{shown(str(e), 200)})", hint="keep the weight files next to the model") from None
    return _text_names(model), valid_text(path.stem)


def _text_names(model):
    """`model` with every name a str. protobuf hands back a proto2 string field that is not
    valid UTF-8 as bytes, which the converters cannot use as names; such a name becomes its
    UTF-8 reading with U+FFFD for the bad bytes (as the TFLite reader does). A model passed in
    is copied, not changed. Two names that become one are refused: values are found by name."""
    def text(v):
        return v.decode("utf-8", "replace") if isinstance(v, bytes) else v

    g = model.graph
    values = [*(v.name for v in (*g.input, *g.output, *g.value_info, *g.initializer)),
              *(x for n in g.node for x in (*n.input, *n.output))]
    fields = [g.name, *(x for n in g.node for x in (n.name, n.op_type, n.domain)), *(o.domain for o in model.opset_import)]
    if not any(isinstance(v, bytes) for v in (*values, *fields)):
        return model
    if len({text(v) for v in values}) != len(set(values)):
        raise ModelFormatError("the ONNX model has value names that are not valid UTF-8 and become equal once read "
                               "as UTF-8", hint="rename its values (onnx.helper), or re-export the model")
    import onnx
    fixed = onnx.ModelProto()
    fixed.CopyFrom(model)
    g = fixed.graph
    g.name = text(g.name)
    for o in fixed.opset_import:
        o.domain = text(o.domain)
    for v in (*g.input, *g.output, *g.value_info, *g.initializer):
        v.name = text(v.name)
    for n in g.node:
        n.name, n.op_type, n.domain = text(n.name), text(n.op_type), text(n.domain)
        n.input[:] = [text(x) for x in n.input]
        n.output[:] = [text(x) for x in n.output]
    return fixed


def _too_deep(e: Exception, data: bytes, path) -> None:
    """Raise a clear error when protobuf refused `data` for nesting deeper than it reads
    (subgraphs in subgraphs: If/Loop/Scan bodies); return for any other decode error."""
    text = str(e).lower()
    if not any(word in text for word in ("depth", "nest", "recursion")):
        return
    found = node_with_subgraph(data)
    if found is None:
        raise ModelFormatError(f"{path}: the model nests messages deeper than protobuf reads (100 levels)",
                               hint="re-export the model; the file may be corrupted") from None
    op_type, name = found
    raise UnsupportedOpError(f"{path}: unsupported ONNX op {shown(op_type)} at node {shown(name)} (control flow: "
                             "its subgraphs nest deeper than protobuf reads, 100 levels)",
                             hint=_HINT_CONTROL_FLOW) from None


_HINT_CONTROL_FLOW = ("microcompile compiles graphs without control flow (If, Loop, Scan): export the model "
                      "with the branch taken, e.g. torch.onnx.export of a traced model, or onnxsim")


def _check(model) -> None:
    import onnx
    try:
        onnx.checker.check_model(model)
    except Exception as e:   # onnx.checker.ValidationError, or a C++ checker error
        # The checker's message spans lines (a node printed after "of node:"): keep it whole, on one line.
        text = " ".join(str(e).split()) or type(e).__name__
        raise ModelFormatError(f"the ONNX model fails onnx.checker: {shown(text, 400)}",
                               hint="re-export the model with a current exporter; "
                                    "`python -m onnx.checker`-style validation must pass") from None


def _check_tensors(model) -> None:
    """Every tensor the model stores (initializers, tensor attributes such as Constant's
    value) must decode: onnx.checker does not compare a tensor's data with its dims."""
    from onnx import numpy_helper
    tensors = [(t.name, t) for t in model.graph.initializer]
    for node in model.graph.node:
        for a in node.attribute:
            tensors += [(f"{node.name or node.op_type}.{a.name}", t) for t in ([a.t] if a.HasField("t") else [])
                        + list(a.tensors)]
    for name, t in tensors:
        try:
            numpy_helper.to_array(t)
        except Exception as e:   # a size/dims mismatch, an unknown data type, ...
            raise ModelFormatError(f"ONNX tensor {shown(name)!r} of shape {list(t.dims)} does not hold data of that "
                                   f"shape and type ({type(e).__name__}: {shown(str(e), 160)})",
                                   hint="the file is corrupted; re-export the model") from None


def _opsets(model) -> dict[str, int]:
    opsets = {imp.domain or "": imp.version for imp in model.opset_import}
    opsets.setdefault("ai.onnx", opsets.get("", 0))
    v = opsets.get("", 0)
    if not OPSET_MIN <= v <= OPSET_MAX:
        raise UserError(f"the model uses ONNX opset {v}; microcompile reads opsets {OPSET_MIN} to {OPSET_MAX}",
                        hint="convert it with onnx.version_converter.convert_version(model, 13)")
    return opsets


def parse_shape_arg(text: str) -> tuple[str, tuple[int, ...]]:
    """'name:1x3x32x32' -> ('name', (1, 3, 32, 32)); the CLI's --input-shape."""
    name, sep, dims = text.rpartition(":")
    try:
        shape = tuple(int(d) for d in dims.lower().split("x"))
        if not sep or not name:
            raise ValueError
    except ValueError:
        raise UserError(f"bad --input-shape {shown(text)!r}", hint="write NAME:DIMS, for example input:1x3x32x32") from None
    if any(d <= 0 for d in shape):
        raise UserError(f"bad --input-shape {shown(text)!r}: every dimension must be a positive integer",
                        hint="write NAME:DIMS, for example input:1x3x32x32")
    if math.prod(shape) > budget.TENSOR_BYTES:   # Python ints: no wrap, checked before any array exists
        raise UserError(f"bad --input-shape {shown(text)!r}: {math.prod(shape):,} elements, more than the "
                        f"{budget.TENSOR_BYTES:,} microcompile accepts for one tensor",
                        hint="give the shape of one input of the model, for example input:1x3x32x32")
    return name, shape


def _graph_inputs(model, input_shapes: dict | None) -> list[tuple[str, tuple[int, ...], str]]:
    init = {t.name for t in model.graph.initializer}
    pinned = dict(input_shapes or {})
    out = []
    for vi in model.graph.input:
        if vi.name in init:
            continue
        tt = vi.type.tensor_type
        if not vi.type.HasField("tensor_type"):
            raise UserError(f"input {vi.name} is not a tensor", hint="microcompile compiles tensor inputs only")
        dtype = _INPUT_DTYPES.get(tt.elem_type)
        if dtype is None:
            import onnx
            raise UserError(f"input {vi.name} has element type {onnx.TensorProto.DataType.Name(tt.elem_type)}",
                            hint="microcompile models take float32 (or int8) inputs")
        dims = [d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in tt.shape.dim]
        if vi.name in pinned:
            shape = tuple(int(d) for d in pinned.pop(vi.name))
            if len(shape) != len(dims) or any(d is not None and d != s for d, s in zip(dims, shape)):
                raise UserError(f"--input-shape {vi.name}:{'x'.join(map(str, shape))} does not match the model's "
                                f"shape {_show(tt.shape.dim)}", hint="give every dimension, keeping the fixed ones")
        elif None in dims or not tt.HasField("shape"):
            # Exporters write a dynamic size as a name, as nothing, or as -1 or 0: say which.
            odd = [f"dimension {k} is {d.dim_value}" for k, d in enumerate(tt.shape.dim)
                   if d.HasField("dim_value") and d.dim_value <= 0]
            raise UserError(f"input {vi.name} has a dynamic shape {_show(tt.shape.dim)}"
                            + (f" ({', '.join(odd)}, not a size)" if odd else ""),
                            hint=f"pin it: --input-shape {vi.name}:"
                                 + "x".join(str(d or 1) for d in dims or [1]))
        else:
            shape = tuple(dims)
        out.append((vi.name, shape, dtype))
    if pinned:
        raise UserError(f"--input-shape names unknown input(s) {', '.join(sorted(pinned))}",
                        hint="the model's inputs are " + ", ".join(n for n, _, _ in out))
    return out


def _show(dims) -> str:
    return "[" + ", ".join(d.dim_param or "?" if not d.HasField("dim_value") else str(d.dim_value)
                           for d in dims) + "]"


def _node_label(node) -> str:
    """How messages name a node: its name, else its first output, else its op type."""
    return shown(node.name or (node.output[0] if node.output else node.op_type))


def _plan(model, opsets) -> tuple[set[int], list[str]]:
    """Indices of nodes folded at import, and the list of unsupported-op problems."""
    const = {t.name for t in model.graph.initializer}
    folded, problems = set(), []
    for i, node in enumerate(model.graph.node):
        ins = [x for x in node.input if x]
        subgraphs = [a.name for a in node.attribute if a.HasField("g") or len(a.graphs)]
        if subgraphs:   # never folded: its subgraphs read outer values that are not among its inputs
            problems.append(f"{shown(node.op_type)} at node {_node_label(node)} (control flow: "
                            f"it runs the subgraph(s) {', '.join(map(shown, subgraphs))})")
            continue
        if node.op_type in _SHAPE_ONLY or (node.op_type not in _NONDETERMINISTIC and all(x in const for x in ins)):
            folded.add(i)
            const.update(node.output)
            continue
        if find_converter(node.op_type, opsets.get(node.domain or "", 0), node.domain or "") is None:
            where = f" (domain {node.domain})" if node.domain else ""
            problems.append(f"{node.op_type}{where} at node {_node_label(node)}")
    return folded, problems


def _convert_node(ctx: Ctx, node, opsets) -> None:
    """Convert one node; a node whose inputs or attributes do not fit its op (the checker
    does not infer every shape) is a bad model, named by the node."""
    try:
        find_converter(node.op_type, opsets.get(node.domain or "", 0), node.domain or "")(ctx, node)
    except MISFIT as e:
        raise ModelFormatError(f"ONNX node {shown(node.name or node.output[0])} ({node.op_type}): its inputs and "
                               f"attributes do not fit the op ({type(e).__name__}: {shown(str(e), 200)})",
                               hint="check the model with onnx.checker.check_model(model, full_check=True)") from None


def _convert(model, input_shapes, nhwc_io: bool, name: str | None) -> Graph:
    from onnx import numpy_helper
    label = str(model) if not hasattr(model, "graph") else "the ONNX model"
    model, stem = _read(model)
    _check(model)
    _check_tensors(model)
    opsets = _opsets(model)
    inputs = _graph_inputs(model, input_shapes)
    folded, problems = _plan(model, opsets)
    if problems:
        flow = _HINT_CONTROL_FLOW + "; " if any("(control flow" in p for p in problems) else ""
        raise UnsupportedOpError(f"the model uses {len(problems)} unsupported ONNX op(s): " + "; ".join(problems),
                                 hint=flow + "supported ONNX ops: " + ", ".join(sorted({k[1] for k in CONVERTERS})))
    ctx = Ctx(opsets[""], opsets, name or stem)
    for x in [i for n in model.graph.node for i in n.input] + [o.name for o in model.graph.output]:
        ctx.onnx_uses[x] = ctx.onnx_uses.get(x, 0) + 1
    for t in model.graph.initializer:
        ctx.set_const(t.name, numpy_helper.to_array(t))
    ir_inputs = []
    for in_name, shape, dtype in inputs:
        if nhwc_io and len(shape) == 4:
            ir = ctx.add_input(in_name, tuple(shape[i] for i in NCHW_TO_NHWC), dtype)
            ir_inputs.append(ir)
            ctx.node = None
            ctx.bind(in_name, ctx.to_nchw(ir))
        else:
            ir = ctx.add_input(in_name, shape, dtype)
            ir_inputs.append(ir)
            ctx.bind(in_name, ir)
    tally = budget.Tally("constant folding at import")
    readers = dict(ctx.onnx_uses)    # readers still to come, so that a folded value lives no longer
    made = set()                     # than its last one (many transient constants are not held at once)
    for i, node in enumerate(model.graph.node):
        ctx.node = node
        if i in folded:
            fold(ctx, node, opsets, tally)
            made.update(node.output)
        else:
            _convert_node(ctx, node, opsets)
        for x in node.input:
            readers[x] = readers.get(x, 1) - 1
            if readers[x] <= 0 and x in made:
                ctx.forget_const(x)
    ctx.node = None
    outputs = []
    for vi in model.graph.output:
        if vi.name not in ctx.values:
            raise UnsupportedOpError(f"output {vi.name} is a compile-time constant",
                                     hint="a model whose output does not depend on its input has nothing to run")
        ir = ctx.values[vi.name]
        if nhwc_io and len(ctx.tensors[ir].shape) == 4:
            ir = ctx.transpose(ir, NCHW_TO_NHWC)
        if ir in ir_inputs or ir in outputs:   # an output must be its own buffer
            ir = ctx.reshape(ir, ctx.tensors[ir].shape)
        outputs.append(ir)
    used = set(ir_inputs) | set(outputs) | {x for n in ctx.nodes for x in (*n.inputs, *n.outputs) if x}
    tensors = {k: v for k, v in ctx.tensors.items() if k in used}
    g = Graph(ctx.model_name, tensors, tuple(ctx.nodes), tuple(ir_inputs), tuple(outputs))
    try:
        g = verify(fold_qdq(verify(g), model))   # QDQ/QLinear models -> int8 ops (qdq_fold.py)
    except VerifyError as e:
        raise UnsupportedOpError(f"the converted ONNX model is not valid: {e}",
                                 hint="please report this model; an op feature may be unsupported") from None
    return validate(g, label)


def load(path_or_model, input_shapes=None, nhwc_io: bool = False, name: str | None = None) -> Graph:
    return _convert(path_or_model, input_shapes, nhwc_io, name)


def list_ops(path_or_model, input_shapes=None) -> list[tuple[int, str, str, bool]]:
    model, _ = _read(path_or_model)
    _check(model)
    opsets = _opsets(model)
    folded, _ = _plan(model, opsets)
    return [(i, n.op_type, n.output[0] if n.output else "", i in folded or
             find_converter(n.op_type, opsets.get(n.domain or "", 0), n.domain or "") is not None)
            for i, n in enumerate(model.graph.node)]
