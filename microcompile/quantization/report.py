"""Per-layer accuracy of a quantized graph: SQNR of each layer's int8 output against the
float32 graph's, on the calibration samples.

SQNR = 10 log10(sum f^2 / sum (f - dequantize(q))^2) over every element of every sample;
errors accumulate through the network, so a layer's figure includes its inputs' errors.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import shown
from ..ir import Graph
from ..reference import interp
from .ptq import dequantize_array, quantize_array

DEFAULT_THRESHOLD_DB = 20.0


@dataclass(frozen=True)
class LayerSQNR:
    node: str
    op: str
    tensor: str
    sqnr_db: float

    def to_json(self) -> dict:
        return {"node": self.node, "op": self.op, "tensor": self.tensor, "sqnr_db": self.sqnr_db}


def sqnr_db(signal_energy: float, noise_energy: float) -> float:
    if noise_energy == 0:
        return float("inf")
    if signal_energy == 0:
        return float("-inf")
    return float(10 * np.log10(signal_energy / noise_energy))


def sqnr(reference: np.ndarray, test: np.ndarray) -> float:
    ref = np.asarray(reference, np.float64)
    return sqnr_db(float(np.sum(ref ** 2)), float(np.sum((ref - np.asarray(test, np.float64)) ** 2)))


def quantized_inputs(qgraph: Graph, sample: dict[str, np.ndarray], names: tuple[str, ...]) -> dict:
    """A float sample as `qgraph`'s inputs (quantized where the graph takes int8)."""
    out = {}
    for src, name in zip(names, qgraph.inputs):
        t = qgraph.tensors[name]
        out[name] = quantize_array(sample[src], t.quant, t.dtype) if t.dtype in ("int8", "int16") else sample[src]
    return out


def _counterpart(qgraph: Graph, name: str) -> str | None:
    for candidate in (name + "/int8", name):
        if candidate in qgraph.tensors:
            return candidate
    return None


def layer_sqnr(fgraph: Graph, qgraph: Graph, samples: list[dict[str, np.ndarray]]) -> list[LayerSQNR]:
    """One row per float-graph node output that the quantized graph also computes."""
    pairs = []
    for n in fgraph.nodes:
        for o in n.outputs:
            c = _counterpart(qgraph, o)
            if c is not None and fgraph.tensors[o].dtype == "float32":
                pairs.append((n, o, c))
    signal = np.zeros(len(pairs))
    noise = np.zeros(len(pairs))
    for sample in samples:
        fenv = interp.run(fgraph, sample, keep_all=True)
        qenv = interp.run(qgraph, quantized_inputs(qgraph, sample, fgraph.inputs), keep_all=True)
        for k, (_, o, c) in enumerate(pairs):
            t = qgraph.tensors[c]
            got = dequantize_array(qenv[c], t.quant) if t.dtype in ("int8", "int16") else qenv[c]
            ref = fenv[o].astype(np.float64)
            signal[k] += float(np.sum(ref ** 2))
            noise[k] += float(np.sum((ref - got) ** 2))
    return [LayerSQNR(n.name, n.op, o, sqnr_db(s, e)) for (n, o, _), s, e in zip(pairs, signal, noise)]


def format_sqnr_table(rows: list[LayerSQNR], threshold_db: float = DEFAULT_THRESHOLD_DB) -> str:
    names = [shown(r.node, 60) for r in rows]
    width = max([len(n) for n in names] + [5])
    lines = [f"{'layer':<{width}}  {'op':<18} {'SQNR dB':>8}"]
    for r, name in zip(rows, names):
        flag = "  << below threshold" if r.sqnr_db < threshold_db else ""
        lines.append(f"{name:<{width}}  {r.op:<18} {r.sqnr_db:>8.1f}{flag}")
    low = sum(r.sqnr_db < threshold_db for r in rows)
    lines.append(f"{len(rows)} layers, {low} below {threshold_db:g} dB (int8 vs float32 on the calibration data)")
    return "\n".join(lines)
