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

import os
from pathlib import Path

from ...errors import ModelFormatError, UnsupportedOpError, UserError, shown
from ...files import MODEL_BYTES_MAX, read_file
from ...ir import Graph, VerifyError, budget, verify
from ...ir.verify import MISFIT
from ..validate import validate
from .registry import CONVERTERS, OPSET_MAX, OPSET_MIN, find_converter
from .context import NCHW_TO_NHWC, Ctx
from .fold import fold
from .qdq_fold import fold_qdq

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
        return path_or_model, path_or_model.graph.name or "onnx_model"
    path = Path(os.fspath(path_or_model))
    data = read_file(path, "model file", MODEL_BYTES_MAX, ModelFormatError)
    try:
        model = onnx.load_model_from_string(data)
    except Exception as e:   # protobuf DecodeError and friends: a truncated or non-ONNX file
        raise ModelFormatError(f"{path} is not a readable ONNX model ({type(e).__name__}: {shown(str(e), 200)})",
                               hint="re-export the model; the file may be truncated") from None
    from onnx.external_data_helper import load_external_data_for_model, uses_external_data
    if any(uses_external_data(t) for t in model.graph.initializer):
        try:   # weights in files next to the model (models over 2 GB); read by onnx itself
            load_external_data_for_model(model, str(path.parent))
        except Exception as e:
            raise ModelFormatError(f"{path}: cannot read its external weight files ({type(e).__name__}: "
                                   f"{shown(str(e), 200)})", hint="keep the weight files next to the model") from None
    return model, path.stem


def _check(model) -> None:
    import onnx
    try:
        onnx.checker.check_model(model)
    except Exception as e:   # onnx.checker.ValidationError, or a C++ checker error
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise ModelFormatError(f"the ONNX model fails onnx.checker: {first}",
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
        if not sep or not name or any(d <= 0 for d in shape):
            raise ValueError
    except ValueError:
        raise UserError(f"bad --input-shape {shown(text)!r}", hint="write NAME:DIMS, for example input:1x3x32x32") from None
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
            raise UserError(f"input {vi.name} has a dynamic shape {_show(tt.shape.dim)}",
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


def _plan(model, opsets) -> tuple[set[int], list[str]]:
    """Indices of nodes folded at import, and the list of unsupported-op problems."""
    const = {t.name for t in model.graph.initializer}
    folded, problems = set(), []
    for i, node in enumerate(model.graph.node):
        ins = [x for x in node.input if x]
        if node.op_type in _SHAPE_ONLY or (node.op_type not in _NONDETERMINISTIC and all(x in const for x in ins)):
            folded.add(i)
            const.update(node.output)
            continue
        if find_converter(node.op_type, opsets.get(node.domain or "", 0), node.domain or "") is None:
            where = f" (domain {node.domain})" if node.domain else ""
            problems.append(f"{node.op_type}{where} at node {node.name or node.output[0]}")
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
        raise UnsupportedOpError(f"the model uses {len(problems)} unsupported ONNX op(s): " + "; ".join(problems),
                                 hint="supported ONNX ops: " + ", ".join(sorted({k[1] for k in CONVERTERS})))
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
