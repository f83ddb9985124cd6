"""Hostile inputs to the plain-integer and signal-op paths (review of issue 28's audio front
end): custom options built to explode when decoded, options of the wrong kind, an FFT length
that would build gigabytes of tables, and unquantized int8/int16 tensors reaching ops that
compute on quantized values. Each is a clear error (ModelFormatError / UnsupportedOpError),
never a hang, a traceback or a silent reinterpretation."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import signal_models
from signal_models import Input, Output, custom_op_model
from microcompile.errors import ModelFormatError, UnsupportedOpError, UserError
from microcompile.frontend.tflite import load_tflite
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, QuantParams, Tensor


def _shared_vectors(n: int, depth: int) -> bytes:
    """A flexbuffer whose root is a vector of n offsets to one child vector of n offsets, ...,
    depth times: a few hundred bytes that decode to n^depth objects."""
    buf = bytearray(struct.pack("<I", 1))
    prev = len(buf)
    buf += struct.pack("<i", 7) + bytes([(1 << 2) | 2])
    while len(buf) % 4:
        buf += b"\0"
    for _ in range(depth):
        buf += struct.pack("<I", n)
        start = len(buf)
        for _ in range(n):
            buf += struct.pack("<I", len(buf) - prev)
        buf += bytes([(10 << 2) | 2]) * n
        while len(buf) % 4:
            buf += b"\0"
        prev = start
    buf += struct.pack("<I", len(buf) - prev) + bytes([(10 << 2) | 2, 4])
    return bytes(buf)


def _auto_scale_model(options: bytes) -> bytes:
    class Raw:       # custom_op_model writes whatever Dumps returns
        @staticmethod
        def Dumps(_):
            return options
    saved, signal_models.flexbuffers = signal_models.flexbuffers, Raw
    try:
        return custom_op_model("SignalFftAutoScale", [Input((4,), "int16")],
                               [Output((4,), "int16"), Output((), "int32")], {})
    finally:
        signal_models.flexbuffers = saved


def test_options_that_would_expand_exponentially_are_refused_without_decoding_them():
    options = _shared_vectors(100, 4)      # 10^8 objects if decoded
    assert len(options) < 3000
    with pytest.raises(ModelFormatError, match="custom options are not a flexbuffer map"):
        load_tflite(_auto_scale_model(options))


def test_an_option_that_is_not_a_number_is_named():
    m = custom_op_model("SignalWindow", [Input((1, 8), "int16"), np.ones(8, np.int16)], [Output((1, 8), "int16")],
                        {"shift": [1, 2, 3]})
    with pytest.raises(ModelFormatError, match="option 'shift' is not a number"):
        load_tflite(m)


def test_an_rfft_type_that_is_not_a_number_is_an_unsupported_op():
    for t in ([1], {"a": 1}, 0):
        m = custom_op_model("SignalRfft", [Input((4,), "int16")], [Output((6,), "int16")], {"T": t, "fft_length": 4})
        with pytest.raises(UnsupportedOpError, match=r"CUSTOM\(SignalRfft\) of .* frames \(int16 only\)"):
            load_tflite(m)


def test_a_huge_fft_length_is_refused_before_any_table_is_built():
    m = custom_op_model("SignalRfft", [Input((4,), "int16")], [Output((6,), "int16")], {"T": 7, "fft_length": 1 << 26})
    with pytest.raises(ModelFormatError, match="fft_length 67108864 is outside 4..65536"):
        load_tflite(m)


OPS = [("average_pool2d", {"filter": (2, 2), "stride": (2, 2), "padding": (0, 0, 0, 0), "activation": "NONE"},
        (1, 2, 2, 1)),
       ("max_pool2d", {"filter": (2, 2), "stride": (2, 2), "padding": (0, 0, 0, 0), "activation": "NONE"}, (1, 2, 2, 1)),
       ("resize_bilinear", {"size": (8, 8)}, (1, 8, 8, 1)),
       ("reduce_max", {"axes": (1,), "keep_dims": True}, (1, 1, 4, 1))]


@pytest.mark.parametrize("op,attrs,shape", OPS, ids=[o[0] for o in OPS])
@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("quantized_output", [False, True])
def test_an_unquantized_tensor_into_a_quantized_op_is_refused(op, attrs, shape, dtype, quantized_output):
    q = QuantParams((0.5,), (0,)) if quantized_output else None
    t = {"x": Tensor("x", (1, 4, 4, 1), dtype), "y": Tensor("y", shape, dtype, quant=q)}
    g = Graph("g", t, (Node(op, op, ("x",), ("y",), attrs),), ("x",), ("y",))
    # (an int16 op without a 16x8 kernel may be named first: also a clear refusal)
    with pytest.raises(UserError, match=f"{dtype} tensor [xy] has no quantization parameters|with 16-bit activations"):
        load_tflite(write_tflite(g))


def test_a_byte_move_cannot_turn_plain_integers_into_quantized_ones():
    t = {"x": Tensor("x", (2, 3), "int8"), "y": Tensor("y", (3, 2), "int8", quant=QuantParams((0.5,), (0,)))}
    g = Graph("g", t, (Node("reshape", "r", ("x",), ("y",), {"shape": (3, 2)}),), ("x",), ("y",))
    with pytest.raises(ModelFormatError, match="moves bytes between quantized and plain"):
        load_tflite(write_tflite(g))
