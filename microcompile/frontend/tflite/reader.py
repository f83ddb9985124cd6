"""TFLite flatbuffer → Graph.

Reading happens in three steps, so that a malformed file can never leak a raw
exception and an unsupported model fails before any conversion work:

1. `_parse` reads subgraph 0 of the flatbuffer into plain records (`_RawModel`). All
   flatbuffer access happens here, under one guard that turns IndexError, struct.error
   and friends into `ModelFormatError`; `structure.check_structure` then checks that the
   records form a dataflow graph (each tensor written once, before it is read; outputs
   computed). Other subgraphs are only named: `inspect` reports them as unused, and an op
   that would run one (WHILE, IF, CALL_ONCE) is unsupported control flow.
2. `_check_supported` collects every unsupported op (and unsupported fused activation)
   and raises one `UnsupportedOpError` listing all of them.
3. The converters in `CONVERTERS` (one function per TFLite builtin, registered by the
   op-family modules read_*.py with `@converter`) turn each raw op into
   a `Node`; the tensors the nodes use become `Tensor`s; `verify()` checks the result.

Hybrid (dynamic-range quantized) models, such as kws_ref_model_float32, have float
activations and int8 weights with a scale. They are read as they are: a float op whose
constant weights are int8 with quantization parameters. TFLite runs such ops with hybrid
kernels that quantize the input on the fly.

Only the `tflite` package (the flatc-generated reader for the schema) is used; it is
imported lazily so that `microcompile.frontend` imports without it.
"""

from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from ...errors import ModelFormatError, UnsupportedOpError, UserError, shown
from ...escape import valid_text
from ...files import MODEL_BYTES_MAX, read_file
from ...ir import NP_DTYPES, Graph, Node, QuantParams, Tensor, VerifyError, ops, verify
from ...ir.budget import elements
from ...ir.int4 import packed_bytes, unpack_int4
from ...ir.verify import MISFIT, node_problem
from ..validate import validate
from .structure import check_structure

FILE_IDENTIFIER = b"TFL3"

# TFLite TensorType enum value -> (our dtype, little-endian numpy dtype of the stored bytes).
RAW_DTYPES = {0: ("float32", "<f4"), 2: ("int32", "<i4"), 9: ("int8", "<i1"), 7: ("int16", "<i2"),
              4: ("int64", "<i8"), 17: ("int4", "<i1"), 15: ("uint32", "<u4"), 12: ("uint64", "<u8")}
TENSOR_TYPE_NAMES = {0: "FLOAT32", 1: "FLOAT16", 2: "INT32", 3: "UINT8", 4: "INT64", 5: "STRING",
                      6: "BOOL", 7: "INT16", 8: "COMPLEX64", 9: "INT8", 10: "FLOAT64",
                      11: "COMPLEX128", 12: "UINT64", 13: "RESOURCE", 14: "VARIANT",
                      15: "UINT32", 16: "UINT16", 17: "INT4", 18: "BFLOAT16"}
# ActivationFunctionType enum; only the clamps in ops.ACTIVATIONS are supported.
_ACTIVATIONS = {0: "NONE", 1: "RELU", 2: "RELU_N1_TO_1", 3: "RELU6", 4: "TANH", 5: "SIGN_BIT"}
_PADDING_SAME, _PADDING_VALID = 0, 1
# Ops that run other subgraphs, and the options fields naming them: control flow, which
# microcompile does not compile; read only to name the subgraphs in the message.
_CONTROL_FLOW = {"WHILE": ("WhileOptions", ("CondSubgraphIndex", "BodySubgraphIndex")),
                 "IF": ("IfOptions", ("ThenSubgraphIndex", "ElseSubgraphIndex")),
                 "CALL_ONCE": ("CallOnceOptions", ("InitSubgraphIndex",))}


# ---------------------------------------------------------------------------------------
# Step 1: flatbuffer -> plain records

@dataclass
class _RawTensor:
    index: int
    name: str            # as in the file (maybe empty or repeated)
    shape: tuple[int, ...]
    type: int            # TFLite TensorType
    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    quantized_dimension: int
    data: bytes | None   # constant bytes, little-endian, or None
    variable: bool = False   # state that persists between invocations (is_variable)


@dataclass
class _RawOp:
    index: int
    opname: str          # TFLite builtin name, e.g. "CONV_2D"; "CUSTOM(name)" for custom ops
    inputs: tuple[int, ...]   # tensor indices; -1 = absent optional input
    outputs: tuple[int, ...]
    options: dict | None = None   # the builtin options table (a custom op's flexbuffer map) as a dict
    intermediates: tuple[int, ...] = ()   # tensors a quantized LSTM reads its gate scales from


@dataclass
class _RawModel:
    tensors: list[_RawTensor]
    ops: list[_RawOp]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    subgraphs: tuple[tuple[str, int], ...] = ()   # (name, number of ops) of every subgraph, 0 included


# ---------------------------------------------------------------------------------------
# The converter table, filled by the op-family modules (read_*.py) with @converter

@dataclass(frozen=True)
class OpConverter:
    """How to read one TFLite builtin.

    fn(ctx, raw_op) -> (our op, input names, attrs); `options` is (options class, fields)
    for `_read_options`; `problem(raw, raw_op)` says why a use of the op is unsupported
    (None when it is supported), so that every problem of a model is reported at once."""

    fn: Callable
    options: tuple[str, tuple[str, ...]] | None = None
    problem: Callable | None = None
    # False when the op's FusedActivationFunction is not a clamp of its output (an LSTM's
    # cell activation): the op's own `problem` judges it, not the fused-clamp check.
    fused_clamp: bool = True


CONVERTERS: dict[str, OpConverter] = {}


def converter(*builtins: str, options: tuple[str, tuple[str, ...]] | None = None, problem: Callable | None = None,
              fused_clamp: bool = True):
    """Register the decorated fn(ctx, raw_op) as the converter of each TFLite builtin named."""
    def register(fn: Callable) -> Callable:
        for name in builtins:
            assert name not in CONVERTERS, f"TFLite converter for {name} registered twice"
            CONVERTERS[name] = OpConverter(fn, options, problem, fused_clamp)
        return fn
    return register


def _builtin_names() -> dict[int, str]:
    from tflite.BuiltinOperator import BuiltinOperator
    return {v: k for k, v in vars(BuiltinOperator).items() if not k.startswith("_")}


def _read_options(op, opname: str) -> dict | None:
    """Read the builtin options of a supported op into a dict (None when absent)."""
    import tflite
    from tflite.BuiltinOptions import BuiltinOptions

    spec = CONVERTERS[opname].options if opname in CONVERTERS else _CONTROL_FLOW.get(opname)
    if spec is None or op.BuiltinOptionsType() == BuiltinOptions.NONE:
        return None
    cls_name, fields = spec
    if op.BuiltinOptionsType() != getattr(BuiltinOptions, cls_name):
        raise ModelFormatError(f"op {opname} carries options of type {op.BuiltinOptionsType()}, "
                               f"expected {cls_name}")
    table = op.BuiltinOptions()
    opts = getattr(tflite, cls_name)()
    opts.Init(table.Bytes, table.Pos)
    out = {}
    for f in fields:
        if hasattr(opts, f"{f}IsNone"):   # a vector field (NewShape, SqueezeDims): None when absent
            out[f] = None if getattr(opts, f"{f}IsNone")() else tuple(int(v) for v in getattr(opts, f"{f}AsNumpy")())
        else:
            out[f] = getattr(opts, f)()
    return out


# A signal op's options are a handful of scalars; anything much larger is not TFLM's.
CUSTOM_OPTIONS_BYTES_MAX, CUSTOM_OPTIONS_KEYS_MAX = 4096, 64
# An option that is not an int, bool or float: kept as this marker, never decoded (a nested
# flexbuffer vector may share its children and expand exponentially).
NOT_A_SCALAR = object()


def _read_custom_options(op, opname: str) -> dict | None:
    """A supported custom op's options: the scalars of the flexbuffer map TFLM's kernels read
    (None for the other custom ops, whose bytes are never decoded: they come from an untrusted
    file). Only the map's keys and scalar values are read, each once."""
    from flatbuffers import flexbuffers

    if opname not in CONVERTERS or op.CustomOptionsLength() == 0:
        return None
    data = bytes(op.CustomOptionsAsNumpy())
    if len(data) > CUSTOM_OPTIONS_BYTES_MAX:
        raise ModelFormatError(f"op {opname}: its custom options take {len(data)} bytes (TFLM's take a few dozen)")
    try:
        root = flexbuffers.GetRoot(data)
        if not root.IsMap:
            raise ModelFormatError(f"op {opname}: its custom options are not a flexbuffer map")
        entries = root.AsMap
        if len(entries) > CUSTOM_OPTIONS_KEYS_MAX:
            raise ModelFormatError(f"op {opname}: its custom options hold {len(entries)} entries")
        options = {}
        for key, value in zip(entries.Keys, entries.Values):
            options[key.AsKey] = (value.AsBool if value.IsBool else value.AsInt if value.IsInt else
                                  value.AsFloat if value.IsFloat else NOT_A_SCALAR)
    except ModelFormatError:
        raise
    except Exception as e:      # any decoding failure of a corrupted map
        raise ModelFormatError(f"op {opname}: its custom options are not a valid flexbuffer "
                               f"({type(e).__name__})") from None
    return options


def _vector(obj, name: str) -> tuple:
    if getattr(obj, f"{name}IsNone")():
        return ()
    return tuple(getattr(obj, f"{name}AsNumpy")().tolist())


def _buffer_bytes(buf: bytes, model, index: int, tensor: str):
    """The bytes of buffer `index` (of `tensor`, for messages): inline data, or (models
    >2GB) offset/size into the file."""
    if index == 0:
        return None   # buffer 0 is the schema's empty sentinel
    if not 0 <= index < model.BuffersLength():
        raise ModelFormatError(f"{tensor} refers to buffer {index}, but the model has "
                               f"{model.BuffersLength()} buffers")
    b = model.Buffers(index)
    if b.DataLength() > 0:
        # A view into the file's bytes: the one copy is the tensor's own array (_tensor), so
        # loading a model holds the file plus its weights, not twice its weights.
        return b.DataAsNumpy()
    # Python ints: the fields are uint64, and their sum must not wrap.
    offset, size = (int(b.Offset()), int(b.Size())) if hasattr(b, "Offset") else (0, 0)
    if size > 0 and offset + size > len(buf):
        raise ModelFormatError(f"{tensor} uses buffer {index}, which points outside the file: offset "
                               f"{offset:,} and size {size:,} end past the {len(buf):,}-byte file")
    # An offset of 0 or 1 marks "no external data" (1 is the converter's placeholder), as in TFLite.
    if offset > 1 and size > 0:
        return bytes(buf[offset:offset + size])
    return None


def _parse(buf: bytes) -> _RawModel:
    import tflite

    model = tflite.Model.GetRootAs(buf, 0)
    if model.SubgraphsLength() < 1:
        raise ModelFormatError("the model has no subgraph")
    names = _builtin_names()
    opnames = []
    for i in range(model.OperatorCodesLength()):
        oc = model.OperatorCodes(i)
        # Schema v3a moved the code to `builtin_code`; old files only set the int8 field.
        code = max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())
        # The version is unused, but reading it makes a file cut inside the opcode table
        # (the converter writes that table last) fail here instead of parsing silently.
        oc.Version()
        if names.get(code) == "CUSTOM":
            custom = oc.CustomCode()
            opnames.append(f"CUSTOM({custom.decode('utf-8', 'replace') if custom else '?'})")
        else:
            opnames.append(names.get(code, f"BUILTIN_{code}"))

    subgraphs = []
    for i in range(model.SubgraphsLength()):
        name = model.Subgraphs(i).Name()
        subgraphs.append((name.decode("utf-8", "replace") if name else "", model.Subgraphs(i).OperatorsLength()))
    sg = model.Subgraphs(0)
    n_tensors = sg.TensorsLength()
    tensors = []
    for i in range(n_tensors):
        t = sg.Tensors(i)
        raw_name = t.Name()
        name = raw_name.decode("utf-8", "replace") if raw_name else ""
        shape = _shape(t, f"tensor {i} {shown(name)!r}")
        q = t.Quantization()
        scale, zp, qdim = (), (), 0
        if q is not None:
            scale = tuple(float(s) for s in _vector(q, "Scale"))
            zp = tuple(int(z) for z in _vector(q, "ZeroPoint"))
            qdim = q.QuantizedDimension()
        tensors.append(_RawTensor(
            index=i, name=name, shape=shape,
            type=t.Type(), scale=scale, zero_point=zp, quantized_dimension=qdim,
            data=_buffer_bytes(buf, model, t.Buffer(), f"tensor {i} {shown(name)!r}"),
            variable=bool(t.IsVariable())))

    def indices(vals, what, absent_ok=False):
        for v in vals:
            if v == -1 and not absent_ok:
                raise ModelFormatError(f"{what} refers to tensor -1 (none); only an op's optional input "
                                       "may be absent")
            if not -1 <= v < n_tensors:
                raise ModelFormatError(f"{what} refers to tensor {v}, but subgraph 0 has "
                                       f"{n_tensors} tensors")
        return tuple(int(v) for v in vals)

    raw_ops = []
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        idx = op.OpcodeIndex()
        if not 0 <= idx < len(opnames):
            raise ModelFormatError(f"operator {i} has opcode index {idx}, but the model "
                                   f"declares {len(opnames)} opcodes")
        opname = opnames[idx]
        raw_ops.append(_RawOp(i, opname, indices(_vector(op, "Inputs"), f"operator {i}", absent_ok=True),
                              indices(_vector(op, "Outputs"), f"operator {i} output"),
                              _read_custom_options(op, opname) if opname.startswith("CUSTOM(") else
                              _read_options(op, opname), indices(_vector(op, "Intermediates"), f"operator {i}")))
    raw = _RawModel(tensors, raw_ops, indices(_vector(sg, "Inputs"), "subgraph input"),
                    indices(_vector(sg, "Outputs"), "subgraph output"), tuple(subgraphs))
    _refuse_npu_models(raw)
    check_structure(raw)
    return raw


# Custom ops that mean "this model was compiled for an accelerator", by custom code: the
# tool that made them, and what to deploy instead.
_NPU_OPS = {"ethos-u": ("an Arm Ethos-U NPU by Vela", "the model Vela was given (the .tflite before vela)")}


def _refuse_npu_models(raw: _RawModel) -> None:
    """A model whose layers were compiled for an NPU holds command streams, not layers: say so
    before the structure check, which would call its scratch tensors a corruption."""
    for op in raw.ops:
        code = op.opname[len("CUSTOM("):-1] if op.opname.startswith("CUSTOM(") else None
        if code in _NPU_OPS:
            made_by, instead = _NPU_OPS[code]
            raise UnsupportedOpError(f"layer {op.index} is the custom op {code!r}: the model was compiled for "
                                     f"{made_by}, and its layers are a command stream for that NPU",
                                     hint=f"deploy {instead}; microcompile compiles the layers for the CPU")


def _shape(t, tensor: str) -> tuple[int, ...]:
    """The tensor's static shape. `shape` holds sizes; only `shape_signature`, read when
    `shape` is absent, marks a dynamic dimension with -1, taken as 1 (in practice the batch)."""
    shape = _vector(t, "Shape")
    if any(d < 0 for d in shape):
        raise ModelFormatError(f"{tensor} has shape {list(shape)}: a dimension cannot be negative (a dynamic "
                               "dimension is -1 in shape_signature, not in shape)")
    if shape or t.ShapeSignatureLength() == 0:
        return tuple(int(d) for d in shape)
    signature = _vector(t, "ShapeSignature")
    if any(d < -1 for d in signature):
        raise ModelFormatError(f"{tensor} has shape_signature {list(signature)}: -1 (dynamic) is the only "
                               "negative dimension it may hold")
    return tuple(1 if d == -1 else int(d) for d in signature)


def _read_bytes(path_or_bytes) -> tuple[bytes, str]:
    """The model bytes and a label for messages."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return bytes(path_or_bytes), "<bytes>"
    path = Path(os.fspath(path_or_bytes))
    return read_file(path, "model file", MODEL_BYTES_MAX, ModelFormatError), str(path)


_HINT_FORMAT = "the file may be truncated or not a TFLite model; re-export it with the TFLite converter"


def _parse_checked(buf: bytes, label: str) -> _RawModel:
    if len(buf) == 0:
        raise ModelFormatError(f"{label} is empty", hint=_HINT_FORMAT)
    if len(buf) < 8 or buf[4:8] != FILE_IDENTIFIER:
        found = buf[4:8] if len(buf) >= 8 else buf[:8]
        raise ModelFormatError(f"{label} is not a TFLite flatbuffer (expected identifier "
                               f"{FILE_IDENTIFIER!r} at bytes 4..8, found {found!r})", hint=_HINT_FORMAT)
    try:
        return _parse(buf)
    except ModelFormatError as e:
        raise ModelFormatError(f"{label}: {e.message}", hint=e.hint or _HINT_FORMAT) from e
    except (IndexError, struct.error, ValueError, TypeError, OverflowError, UnicodeDecodeError,
            AttributeError, MemoryError) as e:
        raise ModelFormatError(f"{label} is truncated or malformed: cannot parse the flatbuffer "
                               f"({type(e).__name__}: {e})", hint=_HINT_FORMAT) from e


# ---------------------------------------------------------------------------------------
# Step 2: unsupported ops

TFL_FLOAT32, TFL_INT8, TFL_INT16 = 0, 9, 7


def _op_problem(raw: _RawModel, op: _RawOp) -> str | None:
    """Why `op` is unsupported (the "X" of the message), or None when it is supported."""
    if op.opname in _CONTROL_FLOW:
        indices = [v for v in (op.options or {}).values() if v is not None]
        named = ", ".join(f"subgraph {i} {shown(raw.subgraphs[i][0])!r}" if 0 <= i < len(raw.subgraphs)
                          else f"subgraph {i} (the model has {len(raw.subgraphs)})" for i in indices)
        return f"{op.opname} (control flow: it runs {named or 'other subgraphs'})"
    if op.opname not in CONVERTERS:
        return op.opname
    check = CONVERTERS[op.opname].problem
    if check is not None and (problem := check(raw, op)) is not None:
        return problem
    if len(op.inputs) > 1 and min(op.inputs[:2]) >= 0:
        x, w = raw.tensors[op.inputs[0]], raw.tensors[op.inputs[1]]
        # Dynamic-range ("hybrid") quantization: float activations, int8 weights. TFLite
        # quantizes the input on the fly; we model its per-tensor CONV_2D kernel only.
        if x.type == TFL_FLOAT32 and w.type == TFL_INT8 and (op.opname != "CONV_2D" or len(w.scale) != 1):
            kind = "per-channel " if len(w.scale) > 1 else ""
            return f"hybrid {op.opname} (float32 input, {kind}int8 weights)"
    act = (op.options or {}).get("FusedActivationFunction", 0)
    if CONVERTERS[op.opname].fused_clamp and _ACTIVATIONS.get(act) not in ops.ACTIVATIONS:
        return f"{op.opname} with fused activation {_ACTIVATIONS.get(act, act)}"
    if (op.options or {}).get("WeightsFormat", 0) != 0:
        return f"{op.opname} with shuffled weights format"
    return None


def out_name(raw: _RawModel, op: _RawOp) -> str:
    return raw.tensors[op.outputs[0]].name if op.outputs and op.outputs[0] >= 0 else "?"


def _check_supported(raw: _RawModel) -> None:
    problems = [f"unsupported op {p} at layer {op.index} ({out_name(raw, op)})"
                for op in raw.ops if (p := _op_problem(raw, op)) is not None]
    if problems:
        flow = any(op.opname in _CONTROL_FLOW for op in raw.ops)
        raise UnsupportedOpError(
            f"the model uses {len(problems)} unsupported op(s):\n  " + "\n  ".join(problems),
            hint=("control flow is not supported: convert the model with its loops unrolled and its branches "
                  "taken; " if flow else "")
            + "microcompile supports " + ", ".join(sorted(CONVERTERS))
            + f" (fused activations {', '.join(ops.ACTIVATIONS)})")


# ---------------------------------------------------------------------------------------
# Step 3: converters, one per TFLite builtin

@dataclass
class Ctx:
    raw: _RawModel
    names: dict[int, str]                     # TFLite tensor index -> unique tensor name
    shape_override: dict[int, tuple] = field(default_factory=dict)
    notes: list = field(default_factory=list)  # what a converter tells `inspect`
    # Tensors a converter adds that the file does not have (the state TFLM keeps inside a
    # signal op), by name.
    new_tensors: dict[str, Tensor] = field(default_factory=dict)

    def new_tensor(self, t: Tensor) -> str:
        """Add `t` under a name no tensor of the file has; that name."""
        name = unique_tensor_names([*self.names.values(), *self.new_tensors, t.name])[-1]
        self.new_tensors[name] = t.replace(name=name)
        return name

    def name(self, index: int) -> str:
        return "" if index < 0 else self.names[index]

    def shape(self, index: int) -> tuple[int, ...]:
        return self.shape_override.get(index, self.raw.tensors[index].shape)


def need_options(op: _RawOp) -> dict:
    if op.options is None:
        raise ModelFormatError(f"op {op.opname} at layer {op.index} has no options")
    return op.options


def fused_activation(op: _RawOp) -> str:
    return _ACTIVATIONS[(op.options or {}).get("FusedActivationFunction", 0)]


def padding(kind: int, in_hw, k_hw, stride, dilation) -> tuple[int, int, int, int]:
    """TFLite SAME/VALID as explicit (top, left, bottom, right); SAME puts the odd pixel last."""
    if kind == _PADDING_VALID:
        return (0, 0, 0, 0)
    if kind != _PADDING_SAME:
        raise ModelFormatError(f"unknown padding kind {kind}")
    top, bottom = ops.same_padding(in_hw[0], k_hw[0], stride[0], dilation[0])
    left, right = ops.same_padding(in_hw[1], k_hw[1], stride[1], dilation[1])
    return (top, left, bottom, right)


def op_inputs(ctx: Ctx, op: _RawOp, n: int, required: int) -> tuple[str, ...]:
    """The first `n` inputs as names, "" for absent optional ones."""
    if len(op.inputs) < required or any(i < 0 for i in op.inputs[:required]):
        raise ModelFormatError(f"op {op.opname} at layer {op.index} has {len(op.inputs)} inputs, "
                               f"needs at least {required}")
    padded = tuple(op.inputs[:n]) + (-1,) * (n - len(op.inputs[:n]))
    return tuple(ctx.name(i) for i in padded)


def conv_attrs(ctx: Ctx, op: _RawOp, k_hw) -> dict:
    o = need_options(op)
    stride = (o["StrideH"], o["StrideW"])
    dilation = (o.get("DilationHFactor", 1), o.get("DilationWFactor", 1))
    if min(stride + dilation) < 1:
        raise ModelFormatError(f"op {op.opname} at layer {op.index} has stride {stride} and "
                               f"dilation {dilation}; both must be >= 1")
    in_shape = ctx.shape(op.inputs[0])
    if len(in_shape) != 4:
        raise ModelFormatError(f"op {op.opname} at layer {op.index} expects a 4-D NHWC input, "
                               f"got shape {in_shape}")
    return {"stride": stride, "dilation": dilation,
            "padding": padding(o["Padding"], in_shape[1:3], k_hw, stride, dilation),
            "activation": fused_activation(op)}


def standalone(our_op: str) -> Callable:
    def convert(ctx, op):
        return our_op, op_inputs(ctx, op, 1, 1), {}
    return convert


def _unique_names(raw: _RawModel) -> dict[int, str]:
    return dict(enumerate(unique_tensor_names([t.name for t in raw.tensors])))


def unique_tensor_names(names: list[str]) -> list[str]:
    """Our names for a subgraph's tensors, given their TFLite names in index order.

    TFLite tensor names are not guaranteed unique (or present); ours are dict keys. Public
    so that tools matching LiteRT's tensors to ours (`microcompile verify`) name them alike."""
    out, used = [], set()
    for index, base in enumerate(names):
        base = base or f"tensor_{index}"
        name, k = base, 1
        while name in used:
            name, k = f"{base}_{k}", k + 1
        used.add(name)
        out.append(name)
    return out


def _quant(t: _RawTensor, dtype: str, label: str, notes: list) -> QuantParams | None:
    if not t.scale or dtype == "float32":
        # An int8 or int16 without them is a plain integer (raw audio into TFLM's signal ops,
        # a CAST's result); the verifier refuses it where an op needs a quantized value.
        return None
    zp = t.zero_point or (0,)
    if len(zp) == 1 and len(t.scale) > 1:
        zp = zp * len(t.scale)
    if len(zp) != len(t.scale):
        raise ModelFormatError(f"{label}: tensor {t.name!r} has {len(t.scale)} scales but "
                               f"{len(zp)} zero points")
    axis = t.quantized_dimension if len(t.scale) > 1 else None
    if axis is not None and len(t.shape) == 1 and axis > 0 and t.shape[0] == len(t.scale):
        # Old converters (TFLM's person-detection model) wrote a per-channel bias with the
        # filter's quantized_dimension (3). TFLM runs it: a 1-D tensor has one axis, so the
        # meaning is unambiguous. (LiteRT refuses such a file.)
        notes.append(f"tensor {t.name!r}: per-channel quantization along axis {axis} of a 1-D tensor "
                     f"(an old converter's bias); read as axis 0, as TFLite Micro does")
        axis = 0
    if axis is not None and not (0 <= axis < len(t.shape) and t.shape[axis] == len(t.scale)):
        raise ModelFormatError(f"{label}: tensor {t.name!r} has {len(t.scale)} scales along axis "
                               f"{axis}, but its shape is {t.shape}")
    return QuantParams(t.scale, zp, axis)


def _tensor(t: _RawTensor, name: str, shape: tuple[int, ...], label: str, notes: list) -> Tensor:
    if t.type not in RAW_DTYPES:
        raise UserError(f"{label}: tensor {t.name!r} has dtype "
                        f"{TENSOR_TYPE_NAMES.get(t.type, t.type)}, which microcompile does not support",
                        hint="use a float32 model, an int8 model (full-integer quantization with "
                             "int8 input/output and int32 biases) or a 16x8 model (int16 activations)")
    dtype, le = RAW_DTYPES[t.type]
    data = None
    # A variable tensor's buffer, if any, is ignored: TFLite resets the state to zero.
    if t.data is not None and not t.variable:
        n = elements(shape)
        expected = packed_bytes(n) if dtype == "int4" else n * np.dtype(le).itemsize
        if len(t.data) != expected:
            raise ModelFormatError(f"{label}: constant {t.name!r} of shape {shape} needs {expected} "
                                   f"bytes, its buffer has {len(t.data)}", hint=_HINT_FORMAT)
        if dtype == "int4":
            data = unpack_int4(t.data, n).reshape(shape)
        else:
            # Stored little-endian; astype gives a native-order copy independent of the file.
            data = np.frombuffer(t.data, le).reshape(shape).astype(NP_DTYPES[dtype])
    elif dtype == "int4":
        raise UserError(f"{label}: tensor {t.name!r} is INT4 but not a constant",
                        hint="INT4 is supported for constant weights only (conv, depthwise conv, fully connected)")
    return Tensor(name, shape, dtype, _quant(t, dtype, label, notes), data, variable=t.variable)


# What an op's shape inference raises when the file's shapes cannot work together.
_INFER_ERRORS = (VerifyError, ValueError, AssertionError, IndexError, KeyError, TypeError, ZeroDivisionError)


def _infer_outputs(ctx: Ctx, op: _RawOp, node: Node, tensors: dict, label: str, notes: list) -> None:
    """Replace the stored shapes of `node`'s outputs with the shapes the op produces.

    TFLite recomputes every intermediate shape in Prepare and runs the file whatever its
    stored shapes say; so do we: only the model inputs and the constants keep their stored
    shapes. A stored shape that disagrees is noted (`inspect` prints the notes)."""
    od = ops.get(node.op)
    if od.infer is None:
        return
    probe = Graph("probe", {nm: tensors[nm] for nm in (*node.inputs, *node.outputs) if nm}, (node,), (), ())
    try:
        # The op's own check first (ranks, channels, broadcasting: issue 14's validation), so
        # that a corrupted file is named by its layer, not by a numpy error inside inference.
        problem = node_problem(probe, node)
        inferred = od.infer(probe, node) if problem is None else None
    except _INFER_ERRORS as e:
        problem = f"cannot infer its output shape ({type(e).__name__}: {e})"
    if problem is not None:
        raise ModelFormatError(f"{label}: layer {op.index} ({op.opname}, node {node.name}, output "
                               f"{out_name(ctx.raw, op)}): {problem}", hint=_HINT_FORMAT)
    for idx, nm, (shape, _) in zip(op.outputs, node.outputs, inferred):
        shape = tuple(int(d) for d in shape)
        if shape == tensors[nm].shape:
            continue
        stored = ctx.raw.tensors[idx].shape
        if stored:
            notes.append(f"tensor {nm!r}: the file stores shape {list(stored)}, but {op.opname} at layer "
                         f"{op.index} produces {list(shape)}; using {list(shape)}, as TFLite does")
        ctx.shape_override[idx] = shape
        tensors[nm] = tensors[nm].replace(shape=shape)


def _convert(ctx: Ctx, op: _RawOp, label: str):
    """Convert one op; tensors that do not fit it (a filter of the wrong rank, an axis out of
    range) make a corrupted file, reported with the layer's name."""
    try:
        return CONVERTERS[op.opname].fn(ctx, op)
    except MISFIT as e:
        shapes = ", ".join(f"{ctx.name(i)} {ctx.shape(i)}" for i in op.inputs if i >= 0)
        raise ModelFormatError(f"{label}: layer {op.index} ({op.opname}, {out_name(ctx.raw, op)}): its tensors "
                               f"({shapes}) do not fit the op ({type(e).__name__}: {e})",
                               hint=_HINT_FORMAT) from None


def _build(raw: _RawModel, name: str, label: str) -> Graph:
    # Every op that runs another subgraph is unsupported (_CONTROL_FLOW), so here they all are unused.
    notes = [f"subgraph {i} {shown(sg_name)!r} ({n_ops} ops) is not used: microcompile compiles subgraph 0"
             for i, (sg_name, n_ops) in enumerate(raw.subgraphs) if i > 0]
    ctx = Ctx(raw, _unique_names(raw), notes=notes)
    index_of = {nm: idx for idx, nm in ctx.names.items()}
    tensors: dict[str, Tensor] = {}

    def add(idx: int) -> None:
        """The tensor of `idx` with its current shape: stored for inputs and constants,
        inferred for everything an op produces (the op runs before its consumers)."""
        tname = ctx.names[idx]
        if tname not in tensors:
            tensors[tname] = _tensor(raw.tensors[idx], tname, ctx.shape(idx), label, notes)

    for idx in raw.inputs:
        add(idx)
    nodes, no_int16 = [], []
    for op in raw.ops:
        our_op, ins, attrs = _convert(ctx, op, label)
        outs = tuple(ctx.name(i) for i in op.outputs)
        # CUSTOM(SignalRfft) -> custom_signalrfft_3
        node_name = re.sub(r"\W+", "_", op.opname.lower()).strip("_")
        node = Node(our_op, f"{node_name}_{op.index}", ins, outs, attrs, origin=(out_name(raw, op),))
        # By name, not position: a converter may reorder inputs (TRANSPOSE_CONV) or drop constant ones.
        for nm in (*ins, *outs):
            if nm in ctx.new_tensors:
                tensors[nm] = ctx.new_tensors[nm]
            elif nm:
                add(index_of[nm])
        _infer_outputs(ctx, op, node, tensors, label, notes)
        nodes.append(node)
        probe = Graph("probe", tensors, (), (), ())
        if ops.variant(probe, node) == "int16" and not ops.get(our_op).int16:
            no_int16.append(f"unsupported op {op.opname} with 16-bit activations at layer {op.index} "
                            f"({out_name(raw, op)})")
    if no_int16:
        raise UnsupportedOpError(f"the model uses {len(no_int16)} unsupported op(s):\n  " + "\n  ".join(no_int16),
                                 hint="16x8 (int16 activation) kernels exist for " + ", ".join(
                                     sorted(n.upper() for n, o in ops.REGISTRY.items() if o.int16)))
    for idx in raw.outputs:
        add(idx)
    return Graph(name, tensors, tuple(nodes), tuple(ctx.name(i) for i in raw.inputs),
                 tuple(ctx.name(i) for i in raw.outputs), notes=tuple(dict.fromkeys(notes)))


# ---------------------------------------------------------------------------------------
# Public API

def load_tflite(path_or_bytes, name: str | None = None, label: str | None = None) -> Graph:
    """Read subgraph 0 of a .tflite model (a path or the file's bytes) into a verified Graph.

    Raises ModelFormatError for anything that is not a well-formed TFLite file (or a model
    the kernels cannot run, see frontend/validate.py) and UnsupportedOpError (listing every
    offending layer) for ops microcompile cannot compile. `label` names the bytes in messages.
    """
    buf, read_label = _read_bytes(path_or_bytes)
    label = label or read_label
    raw = _parse_checked(buf, label)
    _check_supported(raw)
    if name is None:
        name = valid_text(Path(label).stem) if label != "<bytes>" else "model"
    try:
        g = _build(raw, name, label)
        return validate(verify(g), label)
    except VerifyError as e:
        raise ModelFormatError(f"{label}: the model is inconsistent: {e}",
                               hint="the file may be corrupted; if TFLite runs it, this is a "
                                    "microcompile bug, please report it") from e


def list_ops(path_or_bytes) -> list[tuple[int, str, str, bool]]:
    """(layer index, TFLite op name, output tensor name, supported) for every op of
    subgraph 0, without converting anything; for `inspect` on unsupported models."""
    buf, label = _read_bytes(path_or_bytes)
    raw = _parse_checked(buf, label)
    return [(op.index, op.opname, out_name(raw, op), _op_problem(raw, op) is None) for op in raw.ops]
