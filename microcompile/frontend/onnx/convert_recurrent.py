"""LSTM and GRU (one direction, forward), as exported by PyTorch's nn.LSTM / nn.GRU.

ONNX recurrent ops are stateless: each inference starts from initial_h / initial_c (zeros
when absent), so the IR lstm / gru get those as constants or graph inputs, never variable
tensors. Weights are stacked per gate in ONNX's order (LSTM i, o, f, c; GRU z, r, h) and
reordered to the IR's (LSTM i, f, c, o); LSTM's two biases (Wb + Rb) are summed per gate.

Outputs: Y [seq, 1, batch, hidden] (layout 0) or [batch, seq, 1, hidden] (layout 1) is the
IR output reshaped; Y_h, the last step of Y, a slice of it. Y_c (the last cell state) has no
IR value and is refused when the model reads it, as are reverse / bidirectional directions,
peepholes, clip, sequence_lens other than the full length, input_forget and activations
other than the defaults.
"""

from __future__ import annotations

import numpy as np

from .registry import converter

_LSTM_ACTS = ["Sigmoid", "Tanh", "Tanh"]
_GRU_ACTS = ["Sigmoid", "Tanh"]


def _common_checks(ctx, node, default_acts: list[str]) -> tuple[int, int, int, int]:
    """(layout, seq, batch, input) after refusing what the IR op does not compute."""
    if ctx.attr(node, "direction", "forward") != "forward":
        ctx.unsupported(node, f"direction {ctx.attr(node, 'direction')!r} (only forward)")
    acts = ctx.attr(node, "activations", None)
    if acts is not None and [a.lower() for a in acts] != [a.lower() for a in default_acts]:
        ctx.unsupported(node, f"activations {acts} (only the defaults {default_acts})")
    if ctx.attr(node, "clip", None) is not None:
        ctx.unsupported(node, "clip")
    layout = int(ctx.attr(node, "layout", 0))
    shape = ctx.shape(node.input[0])
    if len(shape) != 3:
        ctx.unsupported(node, f"input of shape {shape}")
    seq, batch = (shape[0], shape[1]) if layout == 0 else (shape[1], shape[0])
    lens = ctx.const(node.input[4]) if len(node.input) > 4 and node.input[4] else None
    if len(node.input) > 4 and node.input[4] and (lens is None or np.any(np.asarray(lens) != seq)):
        ctx.unsupported(node, "sequence_lens other than the full sequence")
    return layout, seq, batch, shape[2]


def _weights(ctx, node, k: int, what: str) -> np.ndarray:
    w = ctx.const(node.input[k]) if len(node.input) > k and node.input[k] else None
    if w is None:
        ctx.unsupported(node, f"{what} must be a constant")
    return np.asarray(w, np.float32)[0]   # the one direction


def _initial_state(ctx, node, k: int, batch: int, hidden: int, hint: str) -> str:
    """initial_h / initial_c [1, batch, hidden] as an IR tensor of shape [batch, hidden]."""
    name = node.input[k] if len(node.input) > k else ""
    if not name:
        return ctx.add_const(np.zeros((batch, hidden), np.float32), f"{node.output[0] or hint}_{hint}0")
    value = ctx.const(name)
    if value is not None:
        return ctx.add_const(np.asarray(value, np.float32).reshape(batch, hidden), f"{name}_state")
    return ctx.reshape(ctx.ir(name), (batch, hidden))


def _outputs(ctx, node, y: str, layout: int, seq: int, batch: int, hidden: int, what: str) -> None:
    """Bind Y (and Y_h) from the IR output y: [seq, batch, hidden] (layout 0) or [batch, seq, hidden]."""
    outs = list(node.output) + [""] * 3
    if outs[2] and ctx.onnx_uses.get(outs[2], 0):
        ctx.unsupported(node, f"the final cell state Y_c of {what} is read")
    if outs[0]:
        ctx.reshape(y, (seq, 1, batch, hidden) if layout == 0 else (batch, seq, 1, hidden), out=outs[0])
    if outs[1]:
        begin = (seq - 1, 0, 0) if layout == 0 else (0, seq - 1, 0)
        size = (1, batch, hidden) if layout == 0 else (batch, 1, hidden)
        last = ctx.emit1("slice", [y], {"begin": begin, "size": size})
        ctx.reshape(last, (1, batch, hidden) if layout == 0 else (batch, 1, hidden), out=outs[1])


@converter("LSTM", opsets=(11, 21))
def _lstm(ctx, node):
    layout, seq, batch, _ = _common_checks(ctx, node, _LSTM_ACTS)
    if len(node.input) > 7 and node.input[7]:
        ctx.unsupported(node, "peephole weights P")
    if int(ctx.attr(node, "input_forget", 0)):
        ctx.unsupported(node, "input_forget (coupled input and forget gates)")
    w, r = _weights(ctx, node, 1, "W"), _weights(ctx, node, 2, "R")
    hidden = r.shape[1]
    b = (_weights(ctx, node, 3, "B") if len(node.input) > 3 and node.input[3]
         else np.zeros(8 * hidden, np.float32))
    bias = b[:4 * hidden] + b[4 * hidden:]
    order = (0, 2, 3, 1)   # ONNX i, o, f, c -> the IR's i, f, c, o

    def gate(a, k):
        return np.ascontiguousarray(a[order[k] * hidden:(order[k] + 1) * hidden])

    base = node.output[0] or node.name or "lstm"
    ws = [ctx.add_const(gate(w, k), f"{base}_w_{g}") for k, g in enumerate("ifco")]
    rs = [ctx.add_const(gate(r, k), f"{base}_r_{g}") for k, g in enumerate("ifco")]
    bs = [ctx.add_const(gate(bias, k), f"{base}_b_{g}") for k, g in enumerate("ifco")]
    h0 = _initial_state(ctx, node, 5, batch, hidden, "h")
    c0 = _initial_state(ctx, node, 6, batch, hidden, "c")
    y = ctx.emit1("lstm", [ctx.ir(node.input[0]), *ws, *rs, *bs, h0, c0], {"time_major": layout == 0},
                  hint=base)
    _outputs(ctx, node, y, layout, seq, batch, hidden, "LSTM")


@converter("GRU", opsets=(11, 21))
def _gru(ctx, node):
    layout, seq, batch, _ = _common_checks(ctx, node, _GRU_ACTS)
    w, r = _weights(ctx, node, 1, "W"), _weights(ctx, node, 2, "R")
    hidden = r.shape[1]
    b = (_weights(ctx, node, 3, "B") if len(node.input) > 3 and node.input[3]
         else np.zeros(6 * hidden, np.float32))
    base = node.output[0] or node.name or "gru"
    h0 = _initial_state(ctx, node, 5, batch, hidden, "h")
    ins = [ctx.ir(node.input[0]), ctx.add_const(w, f"{base}_w"), ctx.add_const(r, f"{base}_r"),
           ctx.add_const(b, f"{base}_b"), h0]
    y = ctx.emit1("gru", ins, {"time_major": layout == 0,
                               "linear_before_reset": bool(ctx.attr(node, "linear_before_reset", 0))}, hint=base)
    _outputs(ctx, node, y, layout, seq, batch, hidden, "GRU")
