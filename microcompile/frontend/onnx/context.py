"""The conversion context: ONNX value names -> IR tensors or compile-time constants.

See the package docstring for the converter API. Output shapes of emitted nodes come from
the op registry's own inference, so a converter never computes a shape by hand that the IR
could disagree with.
"""

from __future__ import annotations

import numpy as np

from ...errors import UnsupportedOpError, shown
from ...ir import NP_DTYPES, Graph, Node, QuantParams, Tensor, budget, ops

NCHW_TO_NHWC = (0, 2, 3, 1)
NHWC_TO_NCHW = (0, 3, 1, 2)

# numpy dtype kind/size -> IR dtype for materialized constants.
_IR_DTYPE = {np.dtype(np.float32): "float32", np.dtype(np.float64): "float32", np.dtype(np.float16): "float32",
             np.dtype(np.int64): "int32", np.dtype(np.int32): "int32", np.dtype(np.int8): "int8",
             np.dtype(np.int16): "int16", np.dtype(np.bool_): "int32", np.dtype(np.uint8): "int32"}
_NP = {"float32": np.float32, "int32": np.int32, "int8": np.int8, "int16": np.int16}


class Ctx:
    def __init__(self, opset: int, opsets: dict[str, int], model_name: str):
        self.opset = opset
        self.opsets = opsets            # domain -> opset version
        self.model_name = model_name
        self.tensors: dict[str, Tensor] = {}
        self.nodes: list[Node] = []
        self.values: dict[str, str] = {}          # ONNX value -> IR tensor name
        self.consts: dict[str, np.ndarray] = {}   # ONNX value -> constant (ONNX dtype)
        self.node: object | None = None           # the ONNX node being converted (for origin)
        self.onnx_uses: dict[str, int] = {}       # ONNX value -> readers (nodes and graph outputs)
        self._names: set[str] = set()         # tensor names
        self._node_names: set[str] = set()    # node names: their own namespace, so tensors keep ONNX names

    # --- names ---------------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        base = "".join(c if c.isalnum() or c in "_." else "_" for c in (hint or "t")) or "t"
        name, k = base, 1
        while name in self._names or name in self.tensors:
            name, k = f"{base}_{k}", k + 1
        self._names.add(name)
        return name

    def _fresh_node(self, hint: str) -> str:
        name, k = hint, 1
        while name in self._node_names:
            name, k = f"{hint}_{k}", k + 1
        self._node_names.add(name)
        return name

    @staticmethod
    def what(node) -> str:
        """How messages name an ONNX node: "ONNX node 'name' (OpType)"."""
        return f"ONNX node {shown(node.name or (node.output[0] if node.output else '?'))!r} ({node.op_type})"

    # --- reading ONNX values -------------------------------------------------------------
    @staticmethod
    def attr(node, key: str, default=None):
        from onnx import helper, numpy_helper
        for a in node.attribute:
            if a.name == key:
                v = helper.get_attribute_value(a)
                if isinstance(v, bytes):
                    return v.decode()
                if hasattr(v, "dims") and hasattr(v, "data_type"):
                    return numpy_helper.to_array(v)
                if isinstance(v, list):
                    return [x.decode() if isinstance(x, bytes) else x for x in v]
                return v
        return default

    def const(self, name: str) -> np.ndarray | None:
        if not name:
            return None
        if name in self.consts:
            return self.consts[name]
        t = self.tensors.get(self.values.get(name, ""))
        return None if t is None or not t.is_const else t.data

    def has(self, name: str) -> bool:
        return name in self.consts or name in self.values

    def shape(self, name: str) -> tuple[int, ...]:
        if name in self.consts:
            return tuple(self.consts[name].shape)
        return self.tensors[self.values[name]].shape

    def dtype(self, name: str) -> str:
        if name in self.consts:
            return _IR_DTYPE.get(self.consts[name].dtype, str(self.consts[name].dtype))
        return self.tensors[self.values[name]].dtype

    def ir(self, name: str) -> str:
        """The IR tensor holding ONNX value `name` (constants become IR constants)."""
        if name in self.values:
            return self.values[name]
        arr = self.consts[name]
        ir_name = self.add_const(arr, name)
        self.values[name] = ir_name
        return ir_name

    # --- building ------------------------------------------------------------------------
    def add_const(self, arr, hint: str = "const", dtype: str | None = None, quant: QuantParams | None = None) -> str:
        arr = np.asarray(arr)
        dtype = dtype or _IR_DTYPE.get(arr.dtype)
        if dtype is None:
            raise UnsupportedOpError(f"constant {hint} has dtype {arr.dtype}", hint="microcompile handles "
                                     "float32 and integer constants")
        name = self.fresh(hint)
        data = np.ascontiguousarray(arr.astype(_NP[dtype]))
        self.tensors[name] = Tensor(name, tuple(data.shape), dtype, quant=quant, data=data)
        return name

    def add_input(self, name: str, shape, dtype: str) -> str:
        budget.check_tensor(f"input {shown(name)!r}", shape, np.dtype(NP_DTYPES[dtype]).itemsize)
        ir_name = self.fresh(name)
        self.tensors[ir_name] = Tensor(ir_name, tuple(shape), dtype)
        return ir_name

    def bind(self, onnx_name: str, ir_name: str) -> None:
        self.values[onnx_name] = ir_name
        self.consts.pop(onnx_name, None)

    def set_const(self, onnx_name: str, arr) -> None:
        self.consts[onnx_name] = np.asarray(arr)
        self.values.pop(onnx_name, None)

    def forget_const(self, onnx_name: str) -> None:
        """Drop a constant no node will read any more (its IR tensor, if any, stays)."""
        self.consts.pop(onnx_name, None)

    def set_quant(self, ir_name: str, qp: QuantParams | None) -> None:
        self.tensors[ir_name] = self.tensors[ir_name].replace(quant=qp)

    def emit(self, op: str, inputs, attrs: dict | None = None, outputs=None, quant=None,
             hint: str | None = None) -> list[str]:
        """Append an IR node; returns its IR output names (bound to `outputs` if given)."""
        od = ops.get(op)
        full = dict(od.attrs)
        full.update(attrs or {})
        onnx_node = self.node
        base = hint or (outputs[0] if outputs else (onnx_node.output[0] if onnx_node is not None else op))
        node_name = self._fresh_node(f"{base}_{op}" if not outputs else base)
        n_out = len(outputs) if outputs else 1
        out_names = [self.fresh(o if outputs else f"{base}_{op}_out") for o in (outputs or [None] * n_out)]
        origin = (onnx_node.name or onnx_node.output[0],) if onnx_node is not None else ()
        node = Node(op, node_name, tuple(inputs), tuple(out_names), full, origin=origin)
        view = Graph(self.model_name, self.tensors, (), (), ())
        inferred = od.infer(view, node)
        # Before any converter allocates from these shapes (a Dropout mask, a resize's tables).
        for shape, dtype in inferred:
            budget.check_tensor(self.what(onnx_node) if onnx_node is not None else f"{op} node {shown(node_name)!r}",
                                shape, np.dtype(NP_DTYPES[dtype]).itemsize)
        if len(inferred) != n_out:   # split with a number of outputs known only from the node
            out_names = [self.fresh(f"{base}_{op}_out{i}") for i in range(len(inferred))]
            node = node.replace(outputs=tuple(out_names))
        for k, (o, (shape, dtype)) in enumerate(zip(out_names, inferred)):
            q = quant[k] if isinstance(quant, (list, tuple)) else quant
            self.tensors[o] = Tensor(o, tuple(int(d) for d in shape), dtype, quant=q)
        self.nodes.append(node)
        if outputs:
            for onnx_name, o in zip(outputs, out_names):
                self.bind(onnx_name, o)
        return out_names

    def emit1(self, op: str, inputs, attrs: dict | None = None, out: str | None = None, **kw) -> str:
        return self.emit(op, inputs, attrs, outputs=[out] if out else None, **kw)[0]

    def transpose(self, ir_name: str, perm) -> str:
        return self.emit1("transpose", [ir_name], {"perm": tuple(int(p) for p in perm)},
                          quant=self.tensors[ir_name].quant)

    def to_nhwc(self, ir_name: str) -> str:
        return self.transpose(ir_name, NCHW_TO_NHWC)

    def to_nchw(self, ir_name: str, out: str | None = None) -> str:
        name = self.emit1("transpose", [ir_name], {"perm": NHWC_TO_NCHW}, out=out,
                          quant=self.tensors[ir_name].quant)
        return name

    def reshape(self, ir_name: str, shape, out: str | None = None) -> str:
        return self.emit1("reshape", [ir_name], {"shape": tuple(int(d) for d in shape)}, out=out,
                          quant=self.tensors[ir_name].quant)

    def unsupported(self, node, why: str):
        raise UnsupportedOpError(f"ONNX node {node.name or node.output[0]} ({node.op_type}): {why}",
                                 hint="this feature is not supported; the model cannot be compiled as is")
