"""Declarative single-op ONNX test plans: each case is one node built with onnx.helper.

    case(op, inputs, attrs, opset=, outputs=)
      inputs: a tuple shape (a runtime float32 graph input) or an ndarray (an initializer)
              or None (an absent optional input, "")

Shapes and attributes are drawn from a seeded RNG per family, so the plans cover varied
shapes deterministically. onnxruntime (CPU) is the oracle for every case.
"""

from __future__ import annotations

import numpy as np

RNG = np.random.default_rng(4)
CASES: list[dict] = []


def case(op: str, inputs, attrs=None, opset: int = 13, outputs: int = 1, name: str | None = None) -> None:
    CASES.append({"op": op, "inputs": list(inputs), "attrs": dict(attrs or {}), "opset": opset,
                  "outputs": outputs, "id": name or f"{op}-op{opset}-{len(CASES)}"})


def w(*shape, scale=0.5):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def i64(*v):
    return np.array(v, np.int64)


def build_model(c: dict):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    names, graph_inputs, inits = [], [], []
    for k, v in enumerate(c["inputs"]):
        if v is None:
            names.append("")
        elif isinstance(v, tuple):
            names.append(f"x{k}")
            graph_inputs.append(helper.make_tensor_value_info(f"x{k}", TensorProto.FLOAT, list(v)))
        else:
            names.append(f"c{k}")
            inits.append(numpy_helper.from_array(np.asarray(v), f"c{k}"))
    outs = [f"y{k}" for k in range(c["outputs"])]
    node = helper.make_node(c["op"], names, outs, **c["attrs"])
    graph = helper.make_graph([node], c["id"].replace("-", "_"), graph_inputs,
                              [onnx.ValueInfoProto(name=o) for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", c["opset"])])
    model.ir_version = 7 if c["opset"] <= 15 else 8 if c["opset"] <= 18 else 9 if c["opset"] <= 20 else 10
    return onnx.shape_inference.infer_shapes(model, strict_mode=True)   # types the outputs


def onnx_inputs(c: dict, seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {f"x{k}": rng.normal(0, 1.5, v).astype(np.float32) for k, v in enumerate(c["inputs"])
            if isinstance(v, tuple)}


# --- convolutions and matrix products ---------------------------------------------------
for opset in (11, 13, 21):
    n, ci, h, wd = 1, int(RNG.integers(1, 5)), int(RNG.integers(5, 10)), int(RNG.integers(5, 10))
    co = int(RNG.integers(1, 6))
    case("Conv", [(n, ci, h, wd), w(co, ci, 3, 3), w(co)], {"pads": [1, 1, 1, 1]}, opset)
case("Conv", [(1, 3, 9, 8), w(4, 3, 3, 2)], {"strides": [2, 1], "pads": [0, 1, 2, 0]})
case("Conv", [(1, 2, 11, 10), w(3, 2, 3, 3), w(3)], {"dilations": [2, 2], "pads": [2, 1, 2, 3]})
case("Conv", [(1, 2, 8, 7), w(3, 2, 2, 3)], {"strides": [2, 2], "auto_pad": "SAME_LOWER"})
case("Conv", [(1, 2, 8, 7), w(3, 2, 3, 3)], {"auto_pad": "VALID"}, 17)
case("Conv", [(1, 4, 7, 7), w(4, 1, 3, 3), w(4)], {"group": 4, "pads": [1, 1, 1, 1]})    # depthwise
case("Conv", [(1, 3, 6, 6), w(6, 1, 3, 3)], {"group": 3, "strides": [2, 2]})               # multiplier 2
case("Conv", [(1, 4, 6, 6), w(6, 2, 3, 3), w(6)], {"group": 2, "pads": [1, 1, 1, 1]})     # grouped
case("Conv", [(1, 3, 12), w(4, 3, 3), w(4)], {"pads": [1, 1], "strides": [2]})             # 1-D
case("ConvTranspose", [(1, 3, 4, 5), w(3, 2, 3, 3), w(2)], {"strides": [2, 2]})
case("ConvTranspose", [(1, 2, 4, 4), w(2, 3, 4, 4)], {"strides": [2, 2], "pads": [1, 1, 1, 1]})
case("ConvTranspose", [(1, 2, 3, 3), w(2, 2, 3, 3)], {"strides": [2, 2], "pads": [1, 1, 1, 1],
                                                       "output_padding": [1, 1]})
case("Gemm", [(3, 5), w(5, 4), w(4)])
case("Gemm", [(2, 6), w(3, 6), w(1, 3)], {"transB": 1, "alpha": 0.5, "beta": 2.0}, 11)
case("Gemm", [(6, 2), w(6, 3), w(2, 3)], {"transA": 1})
case("MatMul", [(4, 7), w(7, 3)])
case("MatMul", [(2, 3, 5), w(5, 4)], opset=21)

# --- elementwise ------------------------------------------------------------------------
for op in ("Add", "Sub", "Mul", "Div", "Max", "Min"):
    case(op, [(1, 3, 4, 5), (1, 3, 4, 5)])
    case(op, [(2, 3, 4), w(3, 1)], opset=int(RNG.choice([11, 14, 21])))
case("Add", [(1, 4, 3, 3), (4, 1, 1)])
case("Mul", [(5,), (2, 1, 5)])
for op, attrs in (("Relu", {}), ("Sigmoid", {}), ("Tanh", {}), ("LeakyRelu", {"alpha": 0.1}), ("LeakyRelu", {}),
                  ("HardSigmoid", {}), ("HardSigmoid", {"alpha": 0.3, "beta": 0.4}), ("HardSwish", {}), ("Abs", {}),
                  ("Identity", {})):
    case(op, [(1, 3, 4, 4)], attrs, opset=14 if op == "HardSwish" else 13)
case("PRelu", [(1, 3, 4, 4), w(3, 1, 1)])
case("PRelu", [(2, 5), w(5)], opset=16)
case("Clip", [(1, 3, 4, 4), np.float32(0), np.float32(6)], opset=11)
case("Clip", [(1, 3, 4, 4), np.float32(-1), np.float32(1)])
case("Clip", [(1, 3, 4, 4), np.float32(0)])
case("Clip", [(2, 7), np.float32(-0.5), np.float32(2.5)], opset=21)
case("Clip", [(2, 7), None, np.float32(0.7)])
case("Dropout", [(2, 6)], opset=13)
for opset, axis in ((11, 1), (11, 2), (13, 1), (13, -1), (21, 2)):
    case("Softmax", [(2, 3, 4)], {"axis": axis}, opset)
    case("LogSoftmax", [(2, 3, 4)], {"axis": axis}, opset)
# Pow with a constant exponent (0.5 and -0.5 need positive inputs: tests/transform/test_fuse_rows.py)
for _e in (1.0, 2.0, 3.0):
    case("Pow", [(2, 3, 5), np.array(_e, np.float32)], opset=13 if _e != 3.0 else 15)
# Where with a constant condition (masking): the masked value constant or the other operand
case("Where", [np.triu(np.ones((5, 5), bool), 1), np.array(-1e4, np.float32), (2, 5, 5)])
case("Where", [RNG.random((4, 1)) > 0.5, (3, 4, 6), w(4, 6)])
case("Softmax", [(3, 5)])

# --- pooling and reductions -------------------------------------------------------------
case("MaxPool", [(1, 3, 8, 8)], {"kernel_shape": [2, 2], "strides": [2, 2]})
case("MaxPool", [(1, 2, 7, 9)], {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, 11)
case("MaxPool", [(1, 2, 7, 8)], {"kernel_shape": [3, 2], "strides": [2, 2], "ceil_mode": 1})
case("MaxPool", [(1, 2, 6, 6)], {"kernel_shape": [3, 3], "auto_pad": "SAME_UPPER"})
case("AveragePool", [(1, 3, 8, 8)], {"kernel_shape": [2, 2], "strides": [2, 2]})
case("AveragePool", [(1, 2, 7, 7)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]})
case("AveragePool", [(1, 2, 7, 7)], {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1], "count_include_pad": 1}, 19)
case("AveragePool", [(1, 2, 7, 8)], {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1})
case("AveragePool", [(1, 3, 10)], {"kernel_shape": [3], "strides": [2]})
case("GlobalAveragePool", [(1, 5, 6, 7)])
case("GlobalMaxPool", [(1, 5, 6, 7)])
case("ReduceMean", [(1, 3, 4, 5)], {"axes": [2, 3]}, 13)
case("ReduceMean", [(2, 3, 4), i64(1)], {"keepdims": 0}, 18)
case("ReduceMean", [(2, 3, 4)], {}, 11)
case("ReduceMax", [(1, 3, 4, 5)], {"axes": [2, 3]}, 13)
case("ReduceMax", [(1, 3, 4, 5), i64(-1, -2)], {"keepdims": 0}, 18)
case("ReduceMax", [(2, 3, 4)], {"axes": [1]}, 11)
case("ReduceMax", [(2, 3, 4)], {"keepdims": 0}, 13)

# --- shape and data movement ------------------------------------------------------------
case("Flatten", [(1, 3, 4, 5)])
case("Flatten", [(2, 3, 4)], {"axis": 0}, 11)
case("Reshape", [(1, 3, 4, 5), i64(0, -1, 5)])
case("Reshape", [(2, 6), i64(0, 3, 2)], opset=21)
case("Transpose", [(2, 3, 4)], {"perm": [2, 0, 1]})
case("Transpose", [(2, 3, 4)])
case("Concat", [(1, 2, 3, 3), (1, 3, 3, 3), w(1, 1, 3, 3)], {"axis": 1})
case("Concat", [(2, 3), (2, 4)], {"axis": -1}, 11)
case("Split", [(1, 6, 4, 4)], {"axis": 1}, 13, outputs=3)
case("Split", [(2, 7)], {"axis": 1, "split": [3, 4]}, 11, outputs=2)
case("Split", [(2, 7), i64(2, 5)], {"axis": -1}, 13, outputs=2)
case("Split", [(7, 2)], {"num_outputs": 3}, 18, outputs=3)
case("Slice", [(1, 5, 6, 6), i64(1, 1), i64(4, 100), i64(1, 3), i64(1, 2)])
case("Slice", [(4, 6), i64(-1), i64(-100), i64(1), i64(-2)], opset=11)
case("Slice", [(3, 8), i64(1), i64(-1)])   # a negative end (from row 2 the slice is empty: refused, frontend/runnable.py)
case("Squeeze", [(1, 3, 1, 4)], {"axes": [0, 2]}, 11)
case("Squeeze", [(1, 3, 1, 4), i64(2)], opset=13)
case("Squeeze", [(1, 3, 1, 4)], opset=21)
case("Unsqueeze", [(3, 4)], {"axes": [0, 3]}, 11)
case("Unsqueeze", [(3, 4), i64(-1, 0)])
case("Pad", [(1, 2, 4, 4), i64(0, 0, 1, 2, 0, 0, 2, 1)], opset=13)
case("Pad", [(2, 5), i64(1, 2, 0, 1), np.float32(0.75)], opset=11)
case("Pad", [(1, 2, 4, 4), i64(1, 1, 1, 1), np.float32(0), i64(2, 3)], opset=18)
case("Gather", [(3, 5, 2), i64(4, 0, 2)], {"axis": 1})
case("Resize", [(1, 2, 3, 4), None, np.array([1, 1, 2, 2], np.float32)], {"mode": "nearest"}, 13)
case("Resize", [(1, 2, 3, 4), np.zeros(0, np.float32), np.array([1, 1, 2, 2], np.float32)],
     {"mode": "nearest", "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"}, 11)
case("Resize", [(1, 2, 3, 4), None, np.array([1, 1, 2, 3], np.float32)], {"mode": "linear"}, 13)
case("Resize", [(1, 2, 3, 4), None, None, i64(1, 2, 5, 7)],
     {"mode": "linear", "coordinate_transformation_mode": "align_corners"}, 13)
case("Resize", [(1, 2, 4, 4), None, None, i64(1, 2, 8, 6)],
     {"mode": "linear", "coordinate_transformation_mode": "asymmetric"}, 19)
case("Resize", [(1, 2, 3, 3), np.zeros(0, np.float32), np.array([1, 1, 2, 2], np.float32)],
     {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"}, 11)


# --- recurrent: LSTM and GRU, forward, as PyTorch exports them ----------------------------
def _rnn(op: str, gates: int, seq: int, batch: int, inp: int, hidden: int, layout: int = 0, bias: bool = True,
         initial: str | None = None, outputs: int = 1, opset: int = 14, **attrs) -> None:
    """initial: None (zeros), "const" (an initializer) or "input" (a runtime graph input).
    (onnxruntime refuses layout 1, so every case is sequence-major; test_onnx_rnn_layout.py
    checks layout 1 against the layout-0 twin.)"""
    x = (seq, batch, inp) if layout == 0 else (batch, seq, inp)
    ins = [x, w(1, gates * hidden, inp, scale=0.6), w(1, gates * hidden, hidden, scale=0.6),
           w(1, 2 * gates * hidden, scale=0.3) if bias else None, None]
    h0 = {None: None, "const": w(1, batch, hidden), "input": (1, batch, hidden)}[initial]
    ins.append(h0)
    if op == "LSTM":
        ins.append(w(1, batch, hidden) if initial == "const" else None)
    while ins and ins[-1] is None:
        ins.pop()
    if layout and opset >= 14:
        attrs["layout"] = 1
    case(op, ins, dict(attrs, hidden_size=hidden), opset, outputs=outputs,
         name=f"{op}-l{layout}-{seq}x{batch}x{inp}-h{hidden}-{initial}-{len(CASES)}")


_rnn("LSTM", 4, 5, 1, 3, 4)
_rnn("LSTM", 4, 3, 2, 6, 8, initial="const", outputs=2)
_rnn("LSTM", 4, 7, 2, 4, 5, bias=False, initial="input", outputs=2, opset=11)
_rnn("LSTM", 4, 1, 3, 2, 16)
_rnn("GRU", 3, 5, 1, 3, 4, linear_before_reset=1)
_rnn("GRU", 3, 4, 2, 6, 8, initial="const", outputs=2)
_rnn("GRU", 3, 6, 2, 4, 5, bias=False, initial="input", outputs=2, linear_before_reset=0, opset=11)
_rnn("GRU", 3, 2, 1, 7, 3, linear_before_reset=1, opset=21)
