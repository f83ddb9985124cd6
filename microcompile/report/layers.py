"""Layer-by-layer comparison of a trace run (`microcompile verify`).

A trace build prints every kernel's outputs right after the kernel ran. Here each of those
device tensors is compared with two references:

  - our reference interpreter on the compiled (optimized) graph, tensor by tensor;
  - TFLite's reference kernels (LiteRT BUILTIN_REF with experimental_preserve_all_tensors),
    matched by tensor name. LiteRT is a test/verify-time dependency: without it only the
    first comparison is made, and the table says so.

One row per layer of the compiled graph, in execution order. A row stands for every source
layer that was fused into it (Node.origin); views (RESHAPE and friends) have no kernel, so
their device value is their input's bytes, which the memory plan aliases.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..escape import terminal
from ..frontend.tflite.reader import unique_tensor_names
from ..ir import Graph, ops
from ..reference import interp
from ..ir.compare import Comparison, compare


# float32 layers: 1e-5 relative per element (ir/compare.py), with a floor of 1e-5 of the
# tensor's largest magnitude instead of 1e-6. An element that a dot product of large terms
# cancels to near zero carries the rounding of those terms, not of its own size, and the
# device, our interpreter and TFLite each sum in their own order. Measured against TFLite
# (beyond the 1e-5 relative part): up to 1.0e-6 of the layer's maximum on ad01_fp32 and
# 3.7e-6 on pretrainedResnet, host and QEMU alike. int8 stays exact.
FLOAT_LAYER_ATOL_OF_MAX = 1e-5


def _compare(dev: np.ndarray, ref: np.ndarray) -> Comparison:
    return compare(dev, ref, FLOAT_LAYER_ATOL_OF_MAX)


@dataclass(frozen=True)
class LayerRow:
    index: int                       # position in the compiled graph
    node: str                        # our node name, e.g. conv_2d_3 (TFLite op index 3)
    layers: tuple[str, ...]          # the source layers it stands for (their output tensors)
    op: str                          # our op, with its fused activation, e.g. conv2d+RELU
    tensor: str
    shape: tuple[int, ...]
    dtype: str
    kernel: int | None               # kernel index, None for a view
    vs_ref: Comparison               # device vs our interpreter
    vs_tflite: Comparison | None     # device vs LiteRT; None when unavailable

    @property
    def equal(self) -> bool:
        return self.vs_ref.equal and (self.vs_tflite is None or self.vs_tflite.equal)

    def to_json(self) -> dict:
        return {"index": self.index, "node": self.node, "layers": list(self.layers), "op": self.op,
                "tensor": self.tensor, "shape": list(self.shape), "dtype": self.dtype, "kernel": self.kernel,
                "equal": self.equal, "vs_reference": self.vs_ref.to_json(),
                "vs_tflite": self.vs_tflite.to_json() if self.vs_tflite is not None else None}


def device_tensors(graph: Graph, kernel_nodes: list, traced: list[tuple[int, int, np.ndarray]],
                   inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every activation tensor's device value, by name: the traced kernel outputs
    (kernel index, output index, array), the inputs, and views derived from them."""
    device = dict(inputs)
    for k, j, array in traced:
        node = kernel_nodes[k]
        device[node.outputs[j]] = array.reshape(graph.tensors[node.outputs[j]].shape)
    compiled = {n.name for n in kernel_nodes}
    for node in graph.nodes:
        src = node.inputs[0] if node.inputs else ""
        if ops.get(node.op).is_view and src in device:
            device[node.outputs[0]] = device[src].reshape(graph.tensors[node.outputs[0]].shape)
        elif node.op == "concatenation" and node.name not in compiled and all(i in device for i in node.inputs):
            # Planned in place (memory/inplace.py): its producers wrote straight into its slices.
            device[node.outputs[0]] = np.concatenate([device[i] for i in node.inputs], axis=node.attrs.get("axis", 0))
    return device


def tflite_tensors(model, inputs: dict[str, np.ndarray]) -> dict[str, np.ndarray] | None:
    """Every tensor LiteRT BUILTIN_REF holds after one run, under our names for them; None when
    ai_edge_litert is not installed or `model` (a path or a file's bytes) is not a .tflite model."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType
    except ImportError:
        return None
    if isinstance(model, (bytes, bytearray)):
        data = bytes(model)
    elif isinstance(model, (str, os.PathLike)):
        data = Path(model).read_bytes()
    else:
        return None
    if data[4:8] != b"TFL3":
        return None
    it = Interpreter(model_content=data, experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                     experimental_preserve_all_tensors=True)
    it.allocate_tensors()
    details = sorted(it.get_tensor_details(), key=lambda d: d["index"])
    ours = dict(zip((d["index"] for d in details), unique_tensor_names([d["name"] for d in details])))
    for d in it.get_input_details():
        it.set_tensor(d["index"], np.asarray(inputs[ours[d["index"]]]))
    it.invoke()
    out = {}
    for d in details:
        try:
            out[ours[d["index"]]] = it.get_tensor(d["index"]).copy()
        except ValueError:   # tensors without data (optional inputs, freed scratch)
            continue
    return out


def compare_layers(graph: Graph, kernel_nodes: list, device: dict[str, np.ndarray],
                   inputs: dict[str, np.ndarray], tflite: dict[str, np.ndarray] | None) -> list[LayerRow]:
    """One LayerRow per output of every node of `graph` (the compiled graph)."""
    reference = interp.run(graph, inputs, keep_all=True)
    kernel_of = {n.name: k for k, n in enumerate(kernel_nodes)}
    rows = []
    for i, node in enumerate(graph.nodes):
        act = node.attrs.get("activation", "NONE")
        op = node.op if act == "NONE" else f"{node.op}+{act}"
        for out in node.outputs:
            t = graph.tensors[out]
            dev = device.get(out)
            missing = Comparison(False, float("inf"), t.size, ())
            vs_ref = _compare(dev, reference[out]) if dev is not None else missing
            vs_tfl = None
            if tflite is not None:
                ref = tflite.get(out)
                vs_tfl = _compare(dev, ref.reshape(t.shape)) if dev is not None and ref is not None and \
                    ref.size == t.size else None
            rows.append(LayerRow(i, node.name, tuple(node.origin) or (node.name,), op, out, tuple(t.shape),
                                 t.dtype, kernel_of.get(node.name), vs_ref, vs_tfl))
    return rows


def short_layer_name(name: str, width: int = 40) -> str:
    """A TFLite tensor name for a table cell: the converter joins every name a fused tensor
    had with ';', the first is the layer's own; long paths keep their informative tail."""
    name = terminal(name.split(";")[0])
    return name if len(name) <= width else "..." + name[-(width - 3):]


def _diff_cells(c: Comparison | None) -> tuple[str, str, str]:
    if c is None:
        return "-", "-", "-"
    if c.first_mismatch == ():
        return "n/a", "all", "missing"
    first = "-" if c.first_mismatch is None else "[" + ",".join(map(str, c.first_mismatch)) + "]"
    return f"{c.max_abs_diff:.3g}", str(c.n_diff), first


def format_layer_table(rows: list[LayerRow], tflite_available: bool) -> str:
    """The table `microcompile verify` prints, with a verdict line."""
    header = ("#", "node", "layer", "op", "shape", "dtype", "max|diff|", "differ", "first", "TFLite max|diff|",
              "differ", "first")
    body = []
    for r in rows:
        layer = " + ".join(short_layer_name(x) for x in r.layers)
        body.append((str(r.index), r.node, layer, r.op if r.kernel is not None else f"{r.op} (view)",
                     "x".join(map(str, r.shape)) or "scalar", r.dtype,
                     *_diff_cells(r.vs_ref), *_diff_cells(r.vs_tflite)))
    widths = [max([len(h)] + [len(b[k]) for b in body]) for k, h in enumerate(header)]
    numeric = {0, 6, 7, 9, 10}

    def line(cells):
        return "  ".join(c.rjust(w) if k in numeric else c.ljust(w)
                         for k, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = ["columns: device vs our reference interpreter, then device vs TFLite (LiteRT BUILTIN_REF)",
           line(header), line(["-" * w for w in widths]), *(line(b) for b in body)]
    if not tflite_available:
        out.append("note: ai_edge_litert is not installed (or the model is not .tflite): compared with "
                   "our reference interpreter only; `pip install ai-edge-litert` adds the TFLite column")
    bad = [r for r in rows if not r.equal]
    if bad:
        first = bad[0]
        out.append(f"MISMATCH in {len(bad)} of {len(rows)} layers; the first is #{first.index} {first.node} "
                   f"({first.op}, layer {' + '.join(first.layers)})")
    else:
        out.append(f"all {len(rows)} layers match")
    return "\n".join(out)
