"""Layer-by-layer comparison of a QDQ ONNX model: microcompile's int8 graph against
onnxruntime, and each int8 layer against the float64 value it rounds.

onnxruntime's intermediate int8 tensors are the outputs of the model's QuantizeLinear
nodes (exposed as extra graph outputs); each is matched to the int8 tensor of our graph
that carries the same scale, zero point (uint8 moved by -128) and element count. Then,
per int8 layer of our graph:

  chained   our whole-model value of the layer output vs onnxruntime's: differences
            that accumulated from every layer before;
  isolated  our kernel run on onnxruntime's own int8 inputs vs onnxruntime's output:
            what this layer alone contributes;
  ties      for every isolated difference, the exact value (the op in float64 on the
            dequantized int8 inputs, over the output scale, plus the zero point) and its
            distance from the nearest half step. A difference there is a rounding tie
            the two implementations break differently only if that distance is within
            the op's rounding window (`tie_window`); anything else is a systematic
            difference.

`python tests/frontend/qdq_layers.py model.onnx [N]` prints the table for N random inputs.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

if __name__ == "__main__":   # run as a script: this checkout's microcompile, not an installed one
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from microcompile.frontend.onnx import load_onnx
from microcompile.ir import Graph, Node
from microcompile.reference import interp
from microcompile.reference import qparams as qp
from microcompile.reference.common import windows
from microcompile.transform import pipeline

# ops whose exact (pre-rounding) value float64_value computes
EXACT_OPS = ("conv2d", "depthwise_conv2d", "fully_connected", "add", "average_pool2d", "mean")
# onnxruntime requantizes in float32 (acc converted to float, times a float32 scale): its
# own error, in output steps, stays below this for the value ranges of int8 layers
ORT_FLOAT_ERROR = 1e-4


# op type -> the input positions of its output scale and zero point
_QUANTIZED_OUTPUT = {"QuantizeLinear": (1, 2), "QLinearConv": (6, 7), "QLinearMatMul": (6, 7)}


def _quantizing_nodes(model):
    """(node, scale input, zero point input) of every node with a quantized output."""
    for n in model.graph.node:
        if n.op_type in _QUANTIZED_OUTPUT:
            s, z = _QUANTIZED_OUTPUT[n.op_type]
            ins = list(n.input) + [""] * 8
            yield n, ins[s], ins[z]


def ort_quantized(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """onnxruntime's value of every quantized node output (QuantizeLinear, QLinearConv,
    QLinearMatMul; uint8 moved to int8), by name."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    inits = {t.name: t for t in model.graph.initializer}
    known = {o.name for o in probe.graph.output}
    names = []
    for n, _, zp in _quantizing_nodes(model):
        names.append(n.output[0])
        if n.output[0] not in known:
            dtype = inits[zp].data_type if zp in inits else onnx.TensorProto.UINT8
            probe.graph.output.append(helper.make_tensor_value_info(n.output[0], dtype, None))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    sess = ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
    values = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
    return {n: (values[n].astype(np.int16) - 128).astype(np.int8) if values[n].dtype == np.uint8 else values[n]
            for n in names}


def quant_of_q_outputs(model: onnx.ModelProto) -> dict[str, tuple[float, int]]:
    """Quantized output name -> (scale as float32, zero point in int8 terms)."""
    inits = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    out = {}
    for n, scale, zp in _quantizing_nodes(model):
        if scale not in inits or inits[scale].size != 1:
            continue
        z = inits[zp] if zp in inits else np.zeros((), np.uint8)
        out[n.output[0]] = (float(np.float32(inits[scale])), int(z) - (128 if z.dtype == np.uint8 else 0))
    return out


def match_tensors(g: Graph, model: onnx.ModelProto, ours: dict, theirs: dict) -> dict[str, np.ndarray]:
    """Our int8 tensor name -> onnxruntime's value of the same tensor, in our layout."""
    quants = quant_of_q_outputs(model)
    matched = {}
    for name, t in g.tensors.items():
        if t.dtype != "int8" or t.is_const or t.quant is None or t.quant.axis is not None or name not in ours:
            continue
        key = (float(np.float32(t.quant.s)), t.quant.zp)
        found = []
        for onnx_name, q in quants.items():
            v = theirs.get(onnx_name)
            if q != key or v is None or v.size != ours[name].size:
                continue
            if v.shape == tuple(t.shape):
                found.append(v)
            if v.ndim == 4 and v.transpose(0, 2, 3, 1).shape == tuple(t.shape):
                found.append(v.transpose(0, 2, 3, 1))     # NCHW -> our NHWC
        # tensors sharing parameters (a max pool's in and out), or a square map whose layout
        # the shape does not tell: the closest candidate
        if found:
            matched[name] = min(found, key=lambda v: int(np.sum(v != ours[name])))
    return matched


def float64_value(g: Graph, node: Node, args: list[np.ndarray | None]) -> np.ndarray | None:
    """The exact value our int8 kernel rounds, in output steps plus the zero point (None
    for an op not in EXACT_OPS or with a fused activation clamp that is not a no-op)."""
    if node.op not in EXACT_OPS:
        return None

    def real(i, a):
        t = g.tensors[node.inputs[i]]
        scale = np.asarray(t.quant.scale, np.float64)
        if t.quant.axis is not None:
            shape = [1] * a.ndim
            shape[t.quant.axis] = -1
            scale = scale.reshape(shape)
        return (a.astype(np.float64) - np.asarray(t.quant.zero_point, np.float64).reshape(np.shape(scale))) * scale

    xs = [real(i, a) if a is not None else None for i, a in enumerate(args)]
    if node.op == "conv2d":
        w = xs[1]
        cols = windows(xs[0], node, w.shape[1], w.shape[2])
        y = cols.reshape(-1, int(np.prod(w.shape[1:]))) @ w.reshape(w.shape[0], -1).T
        y = y.reshape(cols.shape[:3] + (w.shape[0],))
    elif node.op == "depthwise_conv2d":
        w = xs[1]
        cols = windows(xs[0], node, w.shape[1], w.shape[2])[..., np.arange(w.shape[3]) // (w.shape[3] // xs[0].shape[3])]
        y = np.einsum("nhwijc,ijc->nhwc", cols, w[0])
    elif node.op == "fully_connected":
        y = xs[0].reshape(-1, xs[1].shape[1]) @ xs[1].T
    elif node.op == "add":
        y = xs[0] + xs[1]
    elif node.op == "average_pool2d":
        kh, kw = node.attrs["filter"]
        ones = np.ones((1,) + xs[0].shape[1:3] + (1,))
        y = windows(xs[0], node, kh, kw).sum(axis=(3, 4)) / windows(ones, node, kh, kw).sum(axis=(3, 4))
    else:   # mean
        y = xs[0].mean(axis=tuple(node.attrs["axes"]), keepdims=node.attrs.get("keep_dims", False))
    if len(xs) > 2 and xs[2] is not None and node.op in ("conv2d", "depthwise_conv2d", "fully_connected"):
        y = y + xs[2]
    out = g.tensors[node.outputs[0]].quant
    return y.reshape(g.tensors[node.outputs[0]].shape) / out.s + out.zp


def tie_window(g: Graph, node: Node) -> float:
    """How far from a half step the exact value may be where a correct rounding (ours or
    onnxruntime's) can land on either side: TFLite's double rounding (gemmlowp's rounding
    doubling high multiply, then a rounding right shift by r) first rounds at 2^-r of a
    step, so it can move a value up to 2^-(r+1) of a step across the half; float32
    requantization in onnxruntime adds ORT_FLOAT_ERROR."""
    params = {"conv2d": qp.conv_params, "depthwise_conv2d": qp.depthwise_conv_params,
              "add": qp.add_params}.get(node.op)
    window = ORT_FLOAT_ERROR
    if params is not None:
        p = params(g, node)
        shifts = np.atleast_1d(p.output_shift)
        window += 0.5 * 2.0 ** float(np.min(shifts))    # the largest right shift rounds coarsest
    return window


@dataclass
class LayerRow:
    node: str
    op: str
    size: int
    chained_diff: int
    chained_max: int
    isolated_diff: int = -1           # -1: an input could not be matched
    isolated_max: int = -1
    untied: list = field(default_factory=list)   # isolated differences that are not near-ties
    closest: float | None = None      # the largest distance from a half step among isolated diffs


def layer_rows(model: onnx.ModelProto, feeds: dict[str, np.ndarray], g: Graph | None = None) -> list[LayerRow]:
    g = g or pipeline.run(load_onnx(model))
    x_name = model.graph.input[0].name
    ours = interp.run(g, {g.inputs[0]: feeds[x_name]}, keep_all=True)
    matched = match_tensors(g, model, ours, ort_quantized(model, feeds))
    rows = []
    for node in g.nodes:
        out = node.outputs[0]
        if len(node.outputs) != 1 or out not in matched or node.op in ("quantize", "dequantize", "transpose",
                                                                         "reshape"):
            continue
        theirs = matched[out].astype(np.int64)
        d = np.abs(ours[out].astype(np.int64) - theirs)
        row = LayerRow(node.name, node.op, d.size, int((d > 0).sum()), int(d.max(initial=0)))
        args, ok = [], True
        for i in node.inputs:
            if not i:
                args.append(None)
            elif g.tensors[i].is_const:
                args.append(g.tensors[i].data)
            elif i in matched:
                args.append(matched[i])
            else:
                ok = False
        if ok:
            iso = np.asarray(interp.KERNELS[node.op](g, node, *args)).reshape(theirs.shape).astype(np.int64)
            di = np.abs(iso - theirs)
            row.isolated_diff, row.isolated_max = int((di > 0).sum()), int(di.max(initial=0))
            exact = float64_value(g, node, args)
            if exact is not None and row.isolated_diff:
                dist = np.abs(exact - np.floor(exact) - 0.5)[di > 0]
                row.closest = float(dist.max())
                window = tie_window(g, node)
                row.untied = [float(v) for v in dist if v > window]
            elif row.isolated_diff:
                row.untied = [float("nan")] * row.isolated_diff    # not checkable: no exact value
        rows.append(row)
    return rows


def format_rows(rows: list[LayerRow]) -> str:
    lines = [f"{'layer':<44} {'op':<18} {'elems':>6} {'chained diff':>13} {'isolated diff':>14} "
             f"{'max dist from half':>19} {'not ties':>8}"]
    for r in rows:
        iso = "n/a" if r.isolated_diff < 0 else f"{r.isolated_diff} (max {r.isolated_max})"
        lines.append(f"{r.node[:44]:<44} {r.op:<18} {r.size:>6} {f'{r.chained_diff} (max {r.chained_max})':>13} "
                     f"{iso:>14} {'' if r.closest is None else f'{r.closest:.2e}':>19} {len(r.untied):>8}")
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    model = onnx.load(argv[0])
    count = int(argv[1]) if len(argv) > 1 else 1
    inp = model.graph.input[0]
    shape = [d.dim_value or 1 for d in inp.type.tensor_type.shape.dim]
    g = pipeline.run(load_onnx(model))
    rng = np.random.default_rng(0)
    for k in range(count):
        feeds = {inp.name: rng.standard_normal(shape).astype(np.float32)}
        print(f"input {k}:\n{format_rows(layer_rows(model, feeds, g))}\n")


if __name__ == "__main__":
    main(sys.argv[1:])
