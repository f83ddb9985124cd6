"""Declarative single-op test plans and the one helper that turns a case into a Graph.

`PLANS[op]` is a parameter space (name -> choices); `cases(op, dtype, count, seed)`
samples it deterministically; `build_graph(case)` makes a verified single-op Graph with
random (seeded) weights and quantization. Shared by the interpreter's differential
tests and usable by any backend that wants the same cases.
"""

from __future__ import annotations

import numpy as np

from microcompile.ir import Graph, Node, QuantParams, Tensor, ops, verify

ACTS = ("NONE", "RELU", "RELU6", "RELU_N1_TO_1")

# op -> parameter name -> choices. "padding" is SAME or VALID (mapped to explicit pixels).
PLANS: dict[str, dict[str, tuple]] = {
    "conv2d": {"batch": (1, 1, 2), "hw": (3, 5, 8, 11), "cin": (1, 3, 8), "cout": (1, 4, 7),
               "kernel": (1, 2, 3, 5), "stride": (1, 2, 3), "dilation": (1, 1, 2),
               "padding": ("SAME", "VALID"), "activation": ACTS, "per_channel": (True, False), "pot_scales": (False, False, True),
               "rect": (False, False, True)},   # no "bias": LiteRT 2.x CONV_2D requires one (conv.cc has_bias)
    "depthwise_conv2d": {"batch": (1, 2), "hw": (3, 6, 9), "cin": (1, 3, 5), "multiplier": (1, 1, 2, 3),
                         "kernel": (1, 3, 5), "stride": (1, 2), "dilation": (1, 1, 2),
                         "padding": ("SAME", "VALID"), "activation": ACTS, "per_channel": (True, False),
                         "pot_scales": (False, False, True), "rect": (False, False, True), "bias": (True, True, False)},
    "fully_connected": {"in_shape": ((1, 16), (3, 10), (2, 3, 8), (1, 2, 2, 5)), "units": (1, 6, 17),
                        "keep_num_dims": (False, True), "activation": ACTS, "per_channel": (False, False, True),
                        "bias": (True, True, False), "pot_scales": (False, False, True)},
    "average_pool2d": {"batch": (1, 2), "hw": (2, 5, 8), "c": (1, 4), "kernel": (1, 2, 3), "stride": (1, 2, 3),
                       "padding": ("SAME", "VALID"), "activation": ACTS},
    "add": {"shapes": (((1, 4, 4, 3), (1, 4, 4, 3)), ((1, 4, 4, 3), (3,)), ((2, 1, 5, 3), (1, 4, 1, 3)),
                       ((1, 3, 1, 2), (1, 3, 6, 1)), ((5,), (1, 2, 5)), ((2, 6), (2, 6))),
            "activation": ACTS, "pot_scales": (False, False, True)},
    "softmax": {"shape": ((1, 10), (2, 7), (1, 3, 3, 12), (1, 1)), "beta": (1.0, 0.5, 2.0, 1.0)},
    "reshape": {"shapes": (((1, 2, 3, 4), (1, 24)), ((6, 4), (2, 3, 4)), ((1, 10), (10,)))},
    "relu": {"shape": ((1, 5, 5, 3), (7,)), "requant": (False, True), "pot_scales": (False, True)},
    "relu6": {"shape": ((1, 5, 5, 3), (7,)), "requant": (False, True), "pot_scales": (False, True)},
    "relu_n1_to_1": {"shape": ((1, 5, 5, 3), (7,)), "requant": (False, True), "pot_scales": (False, True)},
}


# op -> fn(case, builder) -> (node inputs, attrs, output quant): the graph builders of op-family
# plan modules (op_cases_<family>.py), which add their plans to PLANS and builders here.
BUILDERS: dict = {}
# The int16 (16x8) variants: their own plans (dtype "int16"), and builders where the int8
# one does not fit (op_cases_s16.py fills both).
PLANS16: dict[str, dict[str, tuple]] = {}
BUILDERS16: dict = {}


def cases(op: str, dtype: str, count: int, seed: int = 0) -> list[dict]:
    """`count` cases of `op`, each a dict of one choice per plan entry (plus op, dtype, seed)."""
    rng = np.random.default_rng([seed, sum(map(ord, op)), len(dtype)])
    plan = PLANS16[op] if dtype == "int16" else PLANS[op]
    out = []
    for k in range(count):
        case = {name: choices[rng.integers(len(choices))] for name, choices in plan.items()}
        out.append(dict(case, op=op, dtype=dtype, seed=int(rng.integers(1 << 30)), index=k))
    return out


def case_id(case: dict) -> str:
    return f"{case['op']}-{case['dtype']}-{case['index']}"


# --- the builder -----------------------------------------------------------------------

def _act_q(rng) -> QuantParams:
    return QuantParams((float(np.float32(10 ** rng.uniform(-2.5, -0.5))),), (int(rng.integers(-100, 100)),))


def _act_q16(rng) -> QuantParams:
    """int16 activations: symmetric (zero point 0), a finer scale."""
    return QuantParams((float(np.float32(10 ** rng.uniform(-4.5, -2.5))),), (0,))


def _weight_q(rng, channels: int, per_channel: bool, axis: int) -> QuantParams:
    n = channels if per_channel else 1
    scales = tuple(float(np.float32(s)) for s in 10 ** rng.uniform(-3, -1.5, n))
    return QuantParams(scales, (0,) * n, axis if per_channel else None)


def _explicit_padding(kind, hw, kernel, stride, dilation):
    """Explicit pixels for SAME/VALID; VALID falls back to SAME when the window does not fit."""
    fits = all((kernel[i] - 1) * dilation[i] + 1 <= hw[i] for i in (0, 1))
    if kind == "VALID" and fits:
        return (0, 0, 0, 0)
    (t, b), (l, r) = (ops.same_padding(hw[i], kernel[i], stride[i], dilation[i]) for i in (0, 1))
    return (t, l, b, r)


class _Builder:
    """Collects tensors for one single-op graph."""

    def __init__(self, case):
        self.rng = np.random.default_rng(case["seed"])
        # "int16": 16x8 quantization, int16 activations (zero point 0), int8 weights, int64
        # biases. `int8` means "quantized activations" for the builders, int16 included.
        self.int16 = case["dtype"] == "int16"
        self.int8 = case["dtype"] in ("int8", "int16")
        # "hybrid": float32 activations with int8 per-tensor weights (dynamic-range quantization).
        self.hybrid = case["dtype"] == "hybrid"
        self.tensors: dict[str, Tensor] = {}

    def act(self, name, shape, quant=None) -> str:
        if self.int8:
            quant = quant or (_act_q16(self.rng) if self.int16 else _act_q(self.rng))
            self.tensors[name] = Tensor(name, tuple(shape), "int16" if self.int16 else "int8", quant)
        else:
            self.tensors[name] = Tensor(name, tuple(shape), "float32")
        return name

    def weights(self, name, shape, channels, per_channel, axis) -> str:
        if self.int8 or self.hybrid:
            data = self.rng.integers(-127, 128, shape, dtype=np.int8)
            quant = _weight_q(self.rng, channels, per_channel and not self.hybrid, axis)
            self.tensors[name] = Tensor(name, tuple(shape), "int8", quant, data=data)
        else:
            data = self.rng.normal(0, 0.5, shape).astype(np.float32)
            self.tensors[name] = Tensor(name, tuple(shape), "float32", data=data)
        return name

    def bias(self, name, channels, x, w) -> str:
        if self.int8:
            in_s, wq = np.float32(self.tensors[x].quant.s), self.tensors[w].quant
            scales = tuple(float(in_s * np.float32(s)) for s in wq.scale)
            q = QuantParams(scales, (0,) * len(scales), 0 if wq.per_channel else None)
            if self.int16:   # an int64 bias, in units of in_s * w_s like int8's int32 one
                data = self.rng.integers(-3_000_000, 3_000_000, (channels,), dtype=np.int64)
                self.tensors[name] = Tensor(name, (channels,), "int64", q, data=data)
            else:
                data = self.rng.integers(-3000, 3000, (channels,), dtype=np.int32)
                self.tensors[name] = Tensor(name, (channels,), "int32", q, data=data)
        else:
            data = self.rng.normal(0, 0.5, (channels,)).astype(np.float32)
            self.tensors[name] = Tensor(name, (channels,), "float32", data=data)
        return name

    def output_quant(self, graph_so_far, x, w):
        """An output scale that keeps most results in range: in_s * w_s * sqrt(K) * ~30."""
        if not self.int8:
            return None
        in_s = self.tensors[x].quant.s
        w_s = float(np.max(self.tensors[w].quant.scale))
        k = self.tensors[w].data[0].size if self.tensors[w].data.ndim > 1 else 1
        scale = in_s * w_s * np.sqrt(k) * 60 * self.rng.uniform(0.5, 2)
        if self.int16:   # inputs of about +-10000 over an output range of +-32767
            return QuantParams((float(np.float32(scale * 0.6)),), (0,))
        return QuantParams((float(np.float32(scale)),), (int(self.rng.integers(-50, 50)),))


def _op_inputs(case, b: _Builder):
    """(node inputs, attrs, output quant or None meaning random) for the case's op."""
    op = case["op"]
    if b.int16 and op in BUILDERS16:
        return BUILDERS16[op](case, b)
    if op in BUILDERS:
        return BUILDERS[op](case, b)
    if op in ("conv2d", "depthwise_conv2d"):
        k, s, d = case["kernel"], case["stride"], case["dilation"]
        hw = (case["hw"], case["hw"] + 1)
        x = b.act("x", (case["batch"],) + hw + (case["cin"],))
        # "rect": height and width differ in kernel, stride and dilation (audio models' 10x4 kernels).
        kernel = (k, k % 3 + 1) if case.get("rect") else (k, k)
        stride = (s, s % 3 + 1) if case.get("rect") else (s, s)
        dilation = (d, 3 - d) if case.get("rect") else (d, d)
        attrs = {"stride": stride, "dilation": dilation, "activation": case["activation"],
                 "padding": _explicit_padding(case["padding"], hw, kernel, stride, dilation)}
        if op == "conv2d":
            cout = case["cout"]
            w = b.weights("w", (cout, *kernel, case["cin"]), cout, case["per_channel"], 0)
        else:
            cout = case["cin"] * case["multiplier"]
            w = b.weights("w", (1, *kernel, cout), cout, case["per_channel"], 3)
            attrs["depth_multiplier"] = case["multiplier"]
        bias = b.bias("b", cout, x, w) if case.get("bias", True) else ""
        return (x, w, bias), attrs, b.output_quant(None, x, w)
    if op == "fully_connected":
        depth, units = case["in_shape"][-1], case["units"]
        x = b.act("x", case["in_shape"])
        w = b.weights("w", (units, depth), units, case["per_channel"], 0)
        bias = b.bias("b", units, x, w) if case["bias"] else ""
        attrs = {"activation": case["activation"], "keep_num_dims": case["keep_num_dims"]}
        return (x, w, bias), attrs, b.output_quant(None, x, w)
    if op == "average_pool2d":
        k, s = case["kernel"], case["stride"]
        hw = (case["hw"], case["hw"] + 1)
        x = b.act("x", (case["batch"],) + hw + (case["c"],))
        attrs = {"filter": (k, k), "stride": (s, s), "activation": case["activation"],
                 "padding": _explicit_padding(case["padding"], hw, (k, k), (s, s), (1, 1))}
        return (x,), attrs, b.tensors[x].quant
    if op == "add":
        s1, s2 = case["shapes"]
        return (b.act("x", s1), b.act("y", s2)), {"activation": case["activation"]}, None
    if op == "softmax":
        out_q = QuantParams((1 / 256,), (-128,)) if b.int8 else None
        return (b.act("x", case["shape"]),), {"beta": case["beta"]}, out_q
    if op == "reshape":
        x = b.act("x", case["shapes"][0])
        return (x,), {"shape": case["shapes"][1]}, b.tensors[x].quant
    # relu, relu6, relu_n1_to_1
    x = b.act("x", case["shape"])
    return (x,), {}, (None if case["requant"] else b.tensors[x].quant)


def build_graph(case: dict) -> Graph:
    """A verified single-op Graph for `case` (weights, biases and quantization from its seed)."""
    b = _Builder(case)
    # A builder may return a 4th item: the number of outputs (split, unpack); "out", "out1", ...
    inputs, attrs, out_q, *n_out = _op_inputs(case, b)
    outputs = ("out",) + tuple(f"out{k}" for k in range(1, n_out[0] if n_out else 1))
    node = Node(case["op"], case["op"], tuple(inputs), outputs, attrs)
    probe = Graph("probe", dict(b.tensors), (node,), (), ())
    for name, (shape, _) in zip(outputs, ops.get(case["op"]).infer(probe, node)):
        b.act(name, shape, out_q)
    tensors = _pot_scales(b.tensors, node) if case.get("pot_scales") and b.int8 else b.tensors
    graph_inputs = tuple(dict.fromkeys(i for i in inputs if i and not (tensors[i].is_const or tensors[i].variable)))
    return verify(Graph(case_id(case), tensors, (node,), graph_inputs, outputs))


def _pot_scales(tensors: dict[str, Tensor], node: Node) -> dict[str, Tensor]:
    """Round every scale to a power of two: multipliers become exactly 2^k, so exact
    rounding ties are frequent and a wrong rounding scheme shows up."""
    out = {}
    for name, t in tensors.items():
        q = t.quant
        if q is not None and not (node.op == "softmax" and name == "out"):
            scales = tuple(float(2.0 ** np.round(np.log2(s))) for s in q.scale)
            t = t.replace(quant=QuantParams(scales, q.zero_point, q.axis))
        out[name] = t
    if len(node.inputs) > 2 and node.inputs[2]:   # the bias scale stays in_s * w_s
        x, w, bias = (out[i] for i in node.inputs)
        scales = tuple(x.quant.s * s for s in w.quant.scale)
        out[bias.name] = bias.replace(quant=QuantParams(scales, bias.quant.zero_point, bias.quant.axis))
    return out


def random_inputs(graph: Graph, seed: int, float_std: float = 1.5) -> dict[str, np.ndarray]:
    """Seeded inputs: int8, int32 and uint32 uniform over the whole range, int16 normal(0, 8000)
    clipped, uint64 uniform below 2^62, float32 normal(0, float_std)."""
    rng = np.random.default_rng(seed)
    out = {}
    for name in graph.inputs:
        t = graph.tensors[name]
        if t.dtype == "int8":
            out[name] = rng.integers(-128, 128, t.shape, dtype=np.int8)
        elif t.dtype == "int16":
            out[name] = np.clip(np.rint(rng.normal(0, 8000, t.shape)), -32768, 32767).astype(np.int16)
        elif t.dtype == "int32":
            out[name] = rng.integers(-(1 << 31), 1 << 31, t.shape, dtype=np.int64).astype(np.int32)
        elif t.dtype == "uint32":
            out[name] = rng.integers(0, 1 << 32, t.shape, dtype=np.uint64).astype(np.uint32)
        elif t.dtype == "uint64":
            out[name] = rng.integers(0, 1 << 62, t.shape, dtype=np.uint64)
        else:
            out[name] = rng.normal(0, float_std, t.shape).astype(np.float32)
    return out


from support import op_cases_vision  # noqa: E402,F401  (transpose conv, max pool, mean, pad, resize)
from support import op_cases_shape  # noqa: E402,F401  (shape and data-movement ops)
from support import op_cases_elementwise  # noqa: E402,F401  (elementwise binary ops, activations, quantize)
from support import op_cases_reduce  # noqa: E402,F401  (reduce_max)
from support import op_cases_recurrent  # noqa: E402,F401  (lstm, svdf)
from support import op_cases_s16  # noqa: E402,F401  (the int16 variants: 16x8 quantization)
