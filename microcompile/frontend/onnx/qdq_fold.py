"""QDQ import: rewrite `dequantize -> float op -> quantize` into the int8 op.

A QDQ model arrives from the converters (qdq.py) as float ops between IR `dequantize`
(int8 -> float) and `quantize` (float -> int8) nodes, with float weights that are the
exact dequantized values of int8 weights. Rewrites, applied until none matches:

  sink    dequantize -> layout op          ==> int8 layout op -> dequantize
  commute layout op -> relu/relu6 (float)  ==> relu/relu6 -> layout op (PyTorch programs put
          the NCHW transpose of a convolution between it and its activation)
  hoist   layout op -> quantize            ==> quantize -> int8 layout op
  fold    dequantize* -> op [-> relu] -> quantize ==> the int8 op (weights/bias recovered)
  pair    dequantize -> quantize           ==> nothing (same parameters) or one requantize

Layout ops (transpose, reshape, squeeze, expand_dims) move bytes only, so they commute
exactly with (de)quantization. An op whose int8 form cannot take the model's parameters
(for example an int8 softmax needs output scale 1/256) stays float between its
dequantize/quantize, which is exact, only slower.

Weights: a float weight W is recovered as int8 q with per-output-channel scales s only if
q * s == W holds exactly in float32, -128 <= q <= 127 (PyTorch's symmetric quantizers may use -128), and s is one of the weight scale vectors
of the ONNX model. So the int8 weights are exactly the model's; a weight that is not
representable (asymmetric uint8 weights, a folded alpha) leaves its op float. The int32
bias is round(b / (s_in * s_w)), the value onnxruntime's quantizer stored.

Rounding: every folded layer (and each requantizing QuantizeLinear) gets the attribute
rounding="onnx": it requantizes its int32 accumulator once, rounding half to even, as ONNX
specifies, instead of with TFLite's two roundings (gemmlowp's rounding doubling high
multiply, then a rounding right shift by r), which move values up to 2^-(r+1) of a step
across a half: 0.4% of a step for a typical convolution, a quarter step for a global
average pool over 2x2 (1/count folded into the multiplier leaves r = 1), which in
quantize_static'd MobileNets made 12-16% of those elements one step off (a systematic
error, measured with tests/frontend/qdq_layers.py). The result matches onnxruntime except
at near-ties that its float32 requantization breaks the other way, and where onnxruntime
fuses an op into an approximate kernel (its QLinearSoftmax), by one step. The ops without
the attribute (conv2d, depthwise, fully_connected, mean, mul and quantize have it) keep
TFLite's arithmetic: add/sub (its error window is 2^-21 of a step), average pool, and the
256-entry tables (logistic, tanh, hard_swish, ...).
"""

from __future__ import annotations

import numpy as np

from ...ir import Graph, Node, QuantParams, Tensor, ops
from ...reference import qparams
from ...ir.verify import VerifyError

LAYOUT_OPS = ("transpose", "reshape", "squeeze", "expand_dims")
# The ops this pass folds (the ones tested against onnxruntime); the weighted ones take their
# output-channel axis from the op registry's `weight_axis` trait.
WEIGHTED = ("conv2d", "depthwise_conv2d", "fully_connected")
FOLDABLE = (*WEIGHTED, "add", "sub", "mul", "average_pool2d", "max_pool2d", "mean", "relu", "relu6",
            "relu_n1_to_1", "leaky_relu", "logistic", "tanh", "hard_swish", "softmax", "concatenation")
# int8 kernels that pass values through unscaled (TFLite requires equal input and output
# quantization for them); with other parameters the op stays float.
SAME_QUANT = ("max_pool2d", "concatenation")
FUSABLE_ACT = {"relu": "RELU", "relu6": "RELU6", "relu_n1_to_1": "RELU_N1_TO_1"}
_Q_OPS = ("QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul")


def weight_scales(model) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every distinct (scale, zero point) vector pair of a constant DequantizeLinear /
    QLinear weight; uint8 zero points are moved to int8 (-128), like the activations."""
    from onnx import numpy_helper
    consts = {t.name for t in model.graph.initializer}
    for n in model.graph.node:   # constant-ness, transitively: PyTorch writes DQ(Q(float weight))
        if all(i in consts for i in n.input if i):
            consts.update(n.output)
    values = {t.name: t for t in model.graph.initializer}
    for n in model.graph.node:
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value":
            values[n.output[0]] = n.attribute[0].t
    found: dict[bytes, tuple[np.ndarray, np.ndarray]] = {}
    for n in model.graph.node:
        ins = list(n.input) + ["", ""]
        if n.op_type in ("DequantizeLinear", "QuantizeLinear") and n.input[0] in consts:
            scale, zp = ins[1], ins[2]
        elif n.op_type in ("QLinearConv", "QLinearMatMul"):
            scale, zp = ins[4], ins[5]
        else:
            continue
        if scale not in values:
            continue
        s = numpy_helper.to_array(values[scale]).astype(np.float32).reshape(-1)
        z = numpy_helper.to_array(values[zp]).reshape(-1) if zp in values else np.zeros(s.shape, np.int8)
        z = z.astype(np.int64) - (128 if z.dtype == np.uint8 else 0)
        found.setdefault(s.tobytes() + z.tobytes(), (s, z))
    return list(found.values())


def is_quantized(model) -> bool:
    return any(n.op_type in _Q_OPS for n in model.graph.node)


class _Rewriter:
    def __init__(self, g: Graph, scales: list[np.ndarray]):
        self.name = g.name
        self.tensors = dict(g.tensors)
        self.nodes = list(g.nodes)
        self.inputs, self.outputs = g.inputs, g.outputs
        self.scales = scales
        self._n = 0

    def graph(self) -> Graph:
        return Graph(self.name, self.tensors, tuple(self.nodes), self.inputs, self.outputs)

    def fresh(self, base: str) -> str:
        names = {n.name for n in self.nodes}
        while True:
            self._n += 1
            name = f"{base}_q{self._n}"
            if name not in self.tensors and name not in names:
                return name

    def new_tensor(self, like: str, dtype: str, quant, shape=None) -> str:
        name = self.fresh(like)
        t = self.tensors[like]
        self.tensors[name] = Tensor(name, tuple(shape if shape is not None else t.shape), dtype, quant=quant)
        return name

    # --- analysis --------------------------------------------------------------------------
    def maps(self):
        prod = {o: n for n in self.nodes for o in n.outputs}
        uses: dict[str, list[Node]] = {}
        for n in self.nodes:
            for i in n.inputs:
                if i:
                    uses.setdefault(i, []).append(n)
        return prod, uses

    def only_use(self, name: str, uses, op: str | tuple) -> Node | None:
        us = uses.get(name, [])
        ok = len(us) == 1 and (us[0].op in op if isinstance(op, tuple) else us[0].op == op)
        return us[0] if ok and name not in self.outputs else None

    # --- rewrites ---------------------------------------------------------------------------
    def run(self) -> Graph:
        while any(step() for step in (self.sink, self.commute, self.hoist, self.fold, self.pair)):
            self.dce()
        self.dce()
        return self.graph()

    def sink(self) -> bool:
        prod, _ = self.maps()
        for k, n in enumerate(self.nodes):
            d = prod.get(n.inputs[0]) if n.op in LAYOUT_OPS else None
            if d is None or d.op != "dequantize":
                continue
            src = d.inputs[0]
            moved = self.new_tensor(n.outputs[0], "int8", self.tensors[src].quant)
            self.nodes[k:k + 1] = [n.replace(name=self.fresh(n.name), inputs=(src, *n.inputs[1:]), outputs=(moved,)),
                                   d.replace(name=self.fresh(d.name), inputs=(moved,), outputs=n.outputs)]
            return True
        return False

    def commute(self) -> bool:
        """A float activation (elementwise, so it commutes exactly with a layout op) moves above
        the layout op feeding it when nothing else reads that op's output."""
        prod, uses = self.maps()
        for k, a in enumerate(self.nodes):
            n = prod.get(a.inputs[0]) if a.op in FUSABLE_ACT else None
            if n is None or n.op not in LAYOUT_OPS or self.tensors[n.inputs[0]].dtype != "float32" \
                    or self.only_use(n.outputs[0], uses, a.op) is None:
                continue
            early = self.new_tensor(n.inputs[0], "float32", None)
            j = self.nodes.index(n)
            self.nodes[j] = a.replace(name=self.fresh(a.name), inputs=(n.inputs[0],), outputs=(early,))
            self.nodes[k] = n.replace(name=self.fresh(n.name), inputs=(early, *n.inputs[1:]), outputs=a.outputs)
            return True
        return False

    def hoist(self) -> bool:
        prod, uses = self.maps()
        for k, q in enumerate(self.nodes):
            n = prod.get(q.inputs[0]) if q.op == "quantize" else None
            if n is None or n.op not in LAYOUT_OPS or self.only_use(n.outputs[0], uses, "quantize") is None:
                continue
            qp = self.tensors[q.outputs[0]].quant
            early = self.new_tensor(n.inputs[0], "int8", qp)
            self.nodes[k:k + 1] = [q.replace(name=self.fresh(q.name), inputs=(n.inputs[0],), outputs=(early,)),
                                   n.replace(name=self.fresh(n.name), inputs=(early, *n.inputs[1:]), outputs=q.outputs)]
            return True
        return False

    def pair(self) -> bool:
        prod, uses = self.maps()
        for k, q in enumerate(self.nodes):
            d = prod.get(q.inputs[0]) if q.op == "quantize" else None
            if d is None or d.op != "dequantize":
                continue
            src, out = d.inputs[0], q.outputs[0]
            if self.tensors[src].quant.same_as(self.tensors[out].quant) and out not in self.outputs:
                del self.nodes[k]
                self.rename(out, src)
            else:   # a requantization: quantize int8 -> int8, rounded as ONNX's QuantizeLinear
                self.nodes[k] = q.replace(inputs=(src,), attrs=dict(q.attrs, rounding="onnx"))
            return True
        return False

    def rename(self, old: str, new: str) -> None:
        self.nodes = [n.replace(inputs=tuple(new if i == old else i for i in n.inputs)) for n in self.nodes]

    def fold(self) -> bool:
        prod, uses = self.maps()
        for k, n in enumerate(self.nodes):
            if n.op in FOLDABLE and self.tensors[n.outputs[0]].dtype == "float32" and self._fold(k, n, prod, uses):
                return True
        return False

    def _fold(self, k: int, n: Node, prod, uses) -> bool:
        if len(n.outputs) != 1:
            return False
        # The output: straight into a quantize, or through a standalone relu into one.
        out, act = n.outputs[0], None
        nxt = self.only_use(out, uses, ("quantize", *FUSABLE_ACT))
        if nxt is not None and nxt.op in FUSABLE_ACT and n.attrs.get("activation") == "NONE":
            act = FUSABLE_ACT[nxt.op]
            nxt = self.only_use(nxt.outputs[0], uses, "quantize")
        if nxt is None or nxt.op != "quantize":
            return False
        q = nxt
        weight_role = 1 if n.op in WEIGHTED else None
        new_inputs, consts = [], {}    # consts: new int8/int32 constant tensors by name
        for role, i in enumerate(n.inputs):
            if not i:
                new_inputs.append(i)
            elif role == weight_role or (n.op in WEIGHTED and role == 2):
                new_inputs.append(i)    # replaced below
            elif prod.get(i) is not None and prod[i].op == "dequantize":
                new_inputs.append(prod[i].inputs[0])
            elif self.tensors[i].is_const and (c := self._const_int8(i)) is not None:
                consts[c.name] = c      # a dequantized int8 constant operand (a bias Add)
                new_inputs.append(c.name)
            else:
                return False            # a float runtime or constant operand: stays float
        attrs = dict(n.attrs)
        if act is not None:
            attrs["activation"] = act
        if "rounding" in ops.get(n.op).attrs:
            attrs["rounding"] = "onnx"     # ONNX requantizes once, ties to even (see the module doc)
        if weight_role is not None:
            w = self._weight(n, new_inputs[0])
            if w is None:
                return False
            consts.update({t.name: t for t in w.values()})
            new_inputs[1] = w["w"].name
            new_inputs[2] = w["b"].name if "b" in w else ""
        qo = self.tensors[q.outputs[0]].quant
        if n.op in SAME_QUANT and not all((consts.get(i) or self.tensors[i]).quant.same_as(qo)
                                        for i in new_inputs if i):
            return False
        cand = n.replace(inputs=tuple(new_inputs), outputs=q.outputs, attrs=attrs)
        tensors = dict(self.tensors)
        for t in consts.values():
            tensors[t.name] = t
        view = Graph(self.name, tensors, (), (), ())
        try:
            (shape, dtype), = ops.get(n.op).infer(view, cand)
            if dtype != "int8" or tuple(shape) != tuple(tensors[q.outputs[0]].shape):
                return False
            qparams.params(view, cand)
        except (ValueError, AssertionError, VerifyError, KeyError):
            return False
        self.tensors = tensors
        self.nodes[self.nodes.index(q)] = cand
        return True

    def _const_int8(self, name: str) -> Tensor | None:
        """A float constant that is exactly a per-tensor dequantized int8 constant."""
        c = self.tensors[name]
        if c.dtype != "float32":
            return None
        for s, z in self.scales:
            if s.size != 1:
                continue
            q = np.rint(c.data / s[0]) + z[0]
            if q.min(initial=0) >= -128 and q.max(initial=0) <= 127 and np.array_equal(
                    ((q - z[0]).astype(np.float32) * s[0]).astype(np.float32), c.data):
                return Tensor(self.fresh(name), c.shape, "int8", QuantParams((float(s[0]),), (int(z[0]),)),
                              q.astype(np.int8))
        return None

    def _weight(self, n: Node, x: str) -> dict | None:
        """int8 weights and int32 bias for conv/depthwise/fully_connected, or None."""
        w = self.tensors[n.inputs[1]]
        if not w.is_const or w.dtype != "float32":
            return None
        axis = ops.get(n.op).weight_axis
        channels = w.shape[axis]
        bshape = [1] * len(w.shape)
        bshape[axis] = channels
        for s, z in self.scales:
            if s.size not in (1, channels) or z.any():   # TFLite int8 weights are symmetric
                continue
            sv = np.broadcast_to(s, (channels,)).astype(np.float32)
            q = np.rint(w.data / sv.reshape(bshape))
            if q.min(initial=0) < -128 or q.max(initial=0) > 127 or not np.array_equal((q.astype(np.float32) * sv.reshape(bshape))
                                                                      .astype(np.float32), w.data):
                continue
            per_channel = n.op != "fully_connected" or s.size > 1
            wq = QuantParams(tuple(float(v) for v in sv) if per_channel else (float(s[0]),),
                             (0,) * (channels if per_channel else 1), axis if per_channel else None)
            out = {"w": Tensor(self.fresh(w.name), w.shape, "int8", wq, q.astype(np.int8))}
            if n.inputs[2]:
                b = self.tensors[n.inputs[2]]
                if not b.is_const or b.dtype != "float32" or b.size != channels:
                    return None
                bs = np.float32(self.tensors[x].quant.s) * sv
                qb = np.rint(b.data.astype(np.float64) / bs.astype(np.float64))
                if np.abs(qb).max(initial=0) >= 2 ** 31:
                    return None
                bq = QuantParams(tuple(float(v) for v in bs) if per_channel else (float(bs[0]),),
                                 (0,) * (channels if per_channel else 1), 0 if per_channel else None)
                out["b"] = Tensor(self.fresh(b.name), b.shape, "int32", bq, qb.astype(np.int32))
            return out
        return None

    def dce(self) -> None:
        while True:
            _, uses = self.maps()
            keep = [n for n in self.nodes if any(o in self.outputs or uses.get(o) for o in n.outputs)]
            if len(keep) == len(self.nodes):
                break
            self.nodes = keep
        used = set(self.inputs) | set(self.outputs) | {x for n in self.nodes for x in (*n.inputs, *n.outputs) if x}
        self.tensors = {k: v for k, v in self.tensors.items() if k in used}


def fold_qdq(g: Graph, model) -> Graph:
    """The int8 graph of a QDQ / QLinear model (unchanged for a float model)."""
    from ...errors import UnsupportedOpError
    if not is_quantized(model):
        return g
    for vi in model.graph.output:
        if vi.type.tensor_type.elem_type == 2:   # UINT8: we hold it as int8 shifted by 128
            raise UnsupportedOpError(f"output {vi.name} is uint8",
                                     hint="microcompile's quantized outputs are int8 or float32; "
                                          "re-quantize the model with int8 activations")
    return _Rewriter(g, weight_scales(model)).run()
