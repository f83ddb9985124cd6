"""Recurrent ops: their state persists from one inference to the next.

  lstm   TFLite's UNIDIRECTIONAL_SEQUENCE_LSTM (and ONNX LSTM, one direction), the standard
         cell: inputs x [B, T, I] (or [T, B, I] with time_major), the input weights of the four
         gates [H, I] and their recurrent weights [H, H] in the order input, forget, cell,
         output, the four biases [H], then the hidden state h [B, H] and the cell state
         c [B, H]. Output [B, T, H] (time-major: [T, B, H]): the hidden state of every step.
         float32, or int8 with an int16 cell state (`hidden_quant`: the scale and zero point
         of the hidden state's requantization, TFLite's fifth intermediate tensor).
  gru    ONNX GRU, one direction, float32: x, w [3H, I] and r [3H, H] in gate order z, r, h,
         b [6H] (input then recurrent biases), h [B, H]; `linear_before_reset`.
  svdf   TFLite SVDF: x [B, I], weights_feature [F, I], weights_time [F, M], bias [U]
         (optional), state [B, F * M]; U = F / rank. float32, or int8 with int16 weights_time
         and state.

A state input is read at the start of an inference and, when it is a variable tensor
(Tensor.variable), updated in place at the end: the node never lists it as an output, the
memory planner puts it in the state buffer rather than the arena. A constant or activation
in its place (ONNX's initial_h, or none) makes the op stateless.
"""

from __future__ import annotations

from .graph import Graph, Node
from .ops import OpDef, in_tensor, register
from .verify import VerifyError

LSTM_INPUTS = ("input", "w_i", "w_f", "w_c", "w_o", "r_i", "r_f", "r_c", "r_o", "b_i", "b_f", "b_c", "b_o",
               "h", "c")


def _infer_lstm(g: Graph, n: Node):
    x, h = in_tensor(g, n, 0), in_tensor(g, n, 13)
    if len(x.shape) != 3:
        raise VerifyError(f"{n.name}: lstm input must be 3-D, got {x.shape}")
    hidden = g.tensors[n.inputs[5]].shape[1]
    if h.size % hidden or in_tensor(g, n, 14).size != h.size:
        raise VerifyError(f"{n.name}: lstm states {h.shape} do not hold [batch, {hidden}]")
    return [((x.shape[0], x.shape[1], hidden), x.dtype)]


def _macs_lstm(g: Graph, n: Node) -> int:
    x = in_tensor(g, n, 0)
    units, depth = g.tensors[n.inputs[1]].shape
    return int(x.shape[0] * x.shape[1] * 4 * units * (depth + g.tensors[n.inputs[5]].shape[1]))


def _infer_gru(g: Graph, n: Node):
    x, r = in_tensor(g, n, 0), in_tensor(g, n, 2)
    if len(x.shape) != 3:
        raise VerifyError(f"{n.name}: gru input must be 3-D, got {x.shape}")
    return [((x.shape[0], x.shape[1], r.shape[1]), x.dtype)]


def _macs_gru(g: Graph, n: Node) -> int:
    x, w, r = in_tensor(g, n, 0), in_tensor(g, n, 1), in_tensor(g, n, 2)
    return int(x.shape[0] * x.shape[1] * (w.size + r.size))


def _infer_svdf(g: Graph, n: Node):
    x, wf, wt = in_tensor(g, n, 0), in_tensor(g, n, 1), in_tensor(g, n, 2)
    rank = n.attrs["rank"]
    if len(x.shape) != 2 or wf.shape[0] % rank or wt.shape[0] != wf.shape[0]:
        raise VerifyError(f"{n.name}: svdf input {x.shape}, weights {wf.shape} / {wt.shape}, rank {rank}")
    return [((x.shape[0], wf.shape[0] // rank), x.dtype)]


def _macs_svdf(g: Graph, n: Node) -> int:
    x, wf, wt = in_tensor(g, n, 0), in_tensor(g, n, 1), in_tensor(g, n, 2)
    return int(x.shape[0] * (wf.size + wt.size))


register(OpDef("lstm", LSTM_INPUTS, attrs={"time_major": False, "cell_clip": 0.0, "hidden_quant": ()},
               infer=_infer_lstm, macs=_macs_lstm))
register(OpDef("gru", ("input", "w", "r", "b", "h"), optional=("b",),
               attrs={"time_major": False, "linear_before_reset": False}, infer=_infer_gru, macs=_macs_gru))
register(OpDef("svdf", ("input", "weights_feature", "weights_time", "bias", "state"), optional=("bias",),
               attrs={"rank": 1, "activation": "NONE"}, infer=_infer_svdf, macs=_macs_svdf))


def state_inputs(g: Graph, n: Node) -> list[str]:
    """The variable (persistent) tensors a node updates in place."""
    return [i for i in n.inputs if i and g.tensors[i].variable]
