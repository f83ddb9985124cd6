"""One-op .tflite models of TFLite Micro's signal library ops (CUSTOM ops with flexbuffer
options), built the way TFLM's audio preprocessor stores them, for per-op tests against
TFLM's host interpreter (`tests/tflm_ref.py`; LiteRT does not run these ops).

    model = custom_op_model("SignalWindow", [Input((1, 480), "int16"), weights],
                            [Output((1, 480), "int16")], {"shift": 12})

An input is an `Input(shape, dtype)` (a model input) or a numpy array (a constant).
"""

from __future__ import annotations

from dataclasses import dataclass

import flatbuffers
import numpy as np
from flatbuffers import flexbuffers

import tflite
from microcompile.frontend.tflite.writer import TENSOR_TYPE, buffer_tables, bytes_vector, int_vector, table_vector


@dataclass(frozen=True)
class Input:
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class Output:
    shape: tuple[int, ...]
    dtype: str


def _ints(b, values) -> int:
    return int_vector(b, [int(v) for v in values], b.PrependInt32)


def custom_op_model(code: str, inputs: list, outputs: list[Output], options: dict) -> bytes:
    """A model of one CUSTOM op `code`: its variable inputs are the model's inputs (in order),
    every output is a model output; `options` are written as a flexbuffer map, as TFLM reads them."""
    b = flatbuffers.Builder(1024)
    buffers: list[bytes | None] = [None]
    specs = []     # (shape, dtype, buffer index)
    for x in inputs:
        if isinstance(x, Input):
            specs.append((x.shape, x.dtype, 0))
        else:
            arr = np.ascontiguousarray(x)
            buffers.append(arr.astype(arr.dtype.newbyteorder("<")).tobytes())
            specs.append((arr.shape, str(arr.dtype), len(buffers) - 1))
    specs += [(o.shape, o.dtype, 0) for o in outputs]

    buffer_offsets = buffer_tables(b, buffers)
    tensor_offsets = []
    for k, (shape, dtype, buf) in enumerate(specs):
        name, dims = b.CreateString(f"t{k}"), _ints(b, shape)
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, dims)
        tflite.TensorAddType(b, TENSOR_TYPE[dtype])
        tflite.TensorAddBuffer(b, buf)
        tflite.TensorAddName(b, name)
        tensor_offsets.append(tflite.TensorEnd(b))

    custom = b.CreateString(code)
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, tflite.BuiltinOperator.CUSTOM)
    tflite.OperatorCodeAddBuiltinCode(b, tflite.BuiltinOperator.CUSTOM)
    tflite.OperatorCodeAddCustomCode(b, custom)
    tflite.OperatorCodeAddVersion(b, 1)
    opcode = tflite.OperatorCodeEnd(b)

    n_in = len(inputs)
    op_in, op_out = _ints(b, range(n_in)), _ints(b, range(n_in, len(specs)))
    opts = bytes_vector(b, bytes(flexbuffers.Dumps(options)))
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, 0)
    tflite.OperatorAddInputs(b, op_in)
    tflite.OperatorAddOutputs(b, op_out)
    tflite.OperatorAddCustomOptions(b, opts)
    tflite.OperatorAddCustomOptionsFormat(b, tflite.CustomOptionsFormat.FLEXBUFFERS)
    op = tflite.OperatorEnd(b)

    sg_tensors = table_vector(b, tensor_offsets)
    sg_in = _ints(b, [k for k, x in enumerate(inputs) if isinstance(x, Input)])
    sg_out = _ints(b, range(n_in, len(specs)))
    sg_ops = table_vector(b, [op])
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, sg_tensors)
    tflite.SubGraphAddInputs(b, sg_in)
    tflite.SubGraphAddOutputs(b, sg_out)
    tflite.SubGraphAddOperators(b, sg_ops)
    sg = tflite.SubGraphEnd(b)

    codes, subgraphs, bufs = table_vector(b, [opcode]), table_vector(b, [sg]), table_vector(b, buffer_offsets)
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, codes)
    tflite.ModelAddSubgraphs(b, subgraphs)
    tflite.ModelAddBuffers(b, bufs)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())
