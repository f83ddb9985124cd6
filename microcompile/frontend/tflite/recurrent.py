"""The recurrent family (ops_recurrent) in TFLite: UNIDIRECTIONAL_SEQUENCE_LSTM and SVDF,
the converter of each builtin (@converter), then the writer of each op (@writer).

UNIDIRECTIONAL_SEQUENCE_LSTM has 24 inputs; we read the standard cell (what a Keras LSTM
converts to): the four gates' weights and biases and the two variable state tensors. CIFG
(no input gate), peephole, projection and layer-norm variants, a fused activation other
than tanh and hybrid (float input, int8 weights) models are reported unsupported. An int8
LSTM carries five intermediate tensors; the fifth holds the hidden state's requantization
scale, which becomes the `hidden_quant` attribute (and is written back as an intermediate).
"""
from __future__ import annotations

import tflite

from ...errors import ModelFormatError
from ...ir.graph import Graph, Node, QuantParams, Tensor
from . import reader as r
from .reader import converter
from .writer import activation_code, unique_name, writer

# TFLite input index of each of our lstm inputs (lstm_shared.h): input, the input-to-gate
# weights (input, forget, cell, output), the recurrent weights, the gate biases, then the
# output (hidden) state and the cell state.
_LSTM_INDEX = (0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 13, 14, 15, 18, 19)
_CIFG, _PEEPHOLE, _PROJECTION, _LAYER_NORM = (1, 5), (9, 10, 11), (16, 17), (20, 21, 22, 23)
_TANH = 4


def _present(op, i: int) -> bool:
    return len(op.inputs) > i and op.inputs[i] >= 0


def _lstm_problem(raw, op) -> str | None:
    if len(op.inputs) != 24:
        return f"UNIDIRECTIONAL_SEQUENCE_LSTM with {len(op.inputs)} inputs"
    if not all(_present(op, i) for i in _CIFG):
        return "UNIDIRECTIONAL_SEQUENCE_LSTM with CIFG (coupled input and forget gates)"
    for idx, what in ((_PEEPHOLE, "peephole"), (_PROJECTION, "projection"), (_LAYER_NORM, "layer norm")):
        if any(_present(op, i) for i in idx):
            return f"UNIDIRECTIONAL_SEQUENCE_LSTM with {what}"
    if (op.options or {}).get("FusedActivationFunction", _TANH) != _TANH:
        return "UNIDIRECTIONAL_SEQUENCE_LSTM with a cell activation other than tanh"
    x, w = raw.tensors[op.inputs[0]], raw.tensors[op.inputs[2]]
    if x.type == r.TFL_FLOAT32 and w.type != r.TFL_FLOAT32:
        return "hybrid UNIDIRECTIONAL_SEQUENCE_LSTM (float32 input, int8 weights)"
    if x.type == r.TFL_INT8:
        if len(op.intermediates) != 5 or not raw.tensors[op.intermediates[4]].scale:
            return "int8 UNIDIRECTIONAL_SEQUENCE_LSTM without its hidden-state intermediate"
        if any(len(raw.tensors[op.inputs[i]].scale) != 1 for i in range(1, 9)):
            return "int8 UNIDIRECTIONAL_SEQUENCE_LSTM with per-channel weights"
    elif x.type != r.TFL_FLOAT32:
        return "UNIDIRECTIONAL_SEQUENCE_LSTM with 16-bit activations"
    return None


# The option field names come with TFLite's spelling.
@converter("UNIDIRECTIONAL_SEQUENCE_LSTM", options=("UnidirectionalSequenceLSTMOptions", (
    "FusedActivationFunction", "CellClip", "ProjClip", "TimeMajor", "AsymmetricQuantizeInputs")),
    problem=_lstm_problem, fused_clamp=False)
def _lstm(ctx, op):
    o = op.options or {}
    attrs = {"time_major": bool(o.get("TimeMajor", False)), "cell_clip": float(o.get("CellClip", 0.0))}
    hidden = ctx.raw.tensors[op.intermediates[4]] if len(op.intermediates) == 5 else None
    if hidden is not None and hidden.scale:
        attrs["hidden_quant"] = (float(hidden.scale[0]), int((hidden.zero_point or (0,))[0]))
    return "lstm", tuple(ctx.name(op.inputs[i]) for i in _LSTM_INDEX), attrs


def _lstm_inputs(g: Graph, n: Node, tensors: dict) -> list[str]:
    out = [""] * 24
    for ours, idx in zip(n.inputs, _LSTM_INDEX):
        out[idx] = ours
    return out


def _lstm_intermediates(g: Graph, n: Node, tensors: dict) -> list[str]:
    """int8: LiteRT reads five intermediates; only the fifth (the hidden state's scale) is used
    without layer norm. The gate intermediates are float placeholders, as the converter writes."""
    if g.tensors[n.inputs[0]].dtype != "int8":
        return []
    names = []
    for k, what in enumerate(("input_to_input", "input_to_forget", "input_to_cell", "input_to_output")):
        name = unique_name(tensors, f"{n.name}/{what}_intermediate")
        tensors[name] = Tensor(name, (0,), "float32")
        names.append(name)
    scale, zp = n.attrs["hidden_quant"] or (g.tensors[n.inputs[13]].quant.s, g.tensors[n.inputs[13]].quant.zp)
    name = unique_name(tensors, f"{n.name}/effective_hidden_scale_intermediate")
    tensors[name] = Tensor(name, (0,), "int8", QuantParams((float(scale),), (int(zp),)))
    return names + [name]


@writer("lstm", "UNIDIRECTIONAL_SEQUENCE_LSTM", inputs=_lstm_inputs, intermediates=_lstm_intermediates)
def _lstm_options(b, g, n):
    tflite.UnidirectionalSequenceLSTMOptionsStart(b)
    tflite.UnidirectionalSequenceLSTMOptionsAddFusedActivationFunction(b, _TANH)
    tflite.UnidirectionalSequenceLSTMOptionsAddCellClip(b, float(n.attrs.get("cell_clip", 0.0)))
    tflite.UnidirectionalSequenceLSTMOptionsAddTimeMajor(b, bool(n.attrs.get("time_major", False)))
    return tflite.BuiltinOptions.UnidirectionalSequenceLSTMOptions, tflite.UnidirectionalSequenceLSTMOptionsEnd(b)


def _svdf_problem(raw, op) -> str | None:
    x, wf = raw.tensors[op.inputs[0]], raw.tensors[op.inputs[1]]
    if x.type == r.TFL_FLOAT32 and wf.type != r.TFL_FLOAT32:
        return "hybrid SVDF (float32 input, int8 weights)"
    if x.type not in (r.TFL_FLOAT32, r.TFL_INT8):
        return "SVDF with 16-bit activations"
    return None


@converter("SVDF", options=("SVDFOptions", ("Rank", "FusedActivationFunction", "AsymmetricQuantizeInputs")),
           problem=_svdf_problem)
def _svdf(ctx, op):
    ins = r.op_inputs(ctx, op, 5, 3)   # the bias (input 3) is optional
    if not ins[4]:
        raise ModelFormatError(f"SVDF at layer {op.index} has no activation state input")
    o = r.need_options(op)
    return "svdf", ins, {"rank": int(o["Rank"]), "activation": r.fused_activation(op)}


@writer("svdf", "SVDF")
def _svdf_options(b, g, n):
    tflite.SVDFOptionsStart(b)
    tflite.SVDFOptionsAddRank(b, int(n.attrs["rank"]))
    tflite.SVDFOptionsAddFusedActivationFunction(b, activation_code(n))
    return tflite.BuiltinOptions.SVDFOptions, tflite.SVDFOptionsEnd(b)
