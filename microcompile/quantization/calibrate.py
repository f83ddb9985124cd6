"""Calibration: run the float32 graph on sample inputs and choose an int8 range per tensor.

Two passes of the reference interpreter over the samples: the first records each
activation's min/max, the second a histogram over that range. The range selection
methods then work on the histograms:

  minmax      the observed [min, max] (TFLite's converter default)
  percentile  the 0.01% / 99.99% quantiles: ignores rare outliers
  mse         the clipping range that minimizes the expected squared int8 error over the
              histogram (rounding inside the range, clipping outside)

Every range is widened to contain 0 so that zero (padding, ReLU) is exact, as TFLite's
quantizer requires.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Iterable

import numpy as np
from tqdm import tqdm

from ..ir import Graph
from ..reference import interp
from ..ir.graph import QuantParams

METHODS = ("minmax", "percentile", "mse")
BINS = 2048
PERCENTILE = 99.99


@dataclass(frozen=True)
class Range:
    lo: float
    hi: float


def activation_qparams(r: Range) -> QuantParams:
    """TFLite's asymmetric int8 activation quantization of [lo, hi] (0 included):
    scale = (hi - lo) / 255, zero point = round(-128 - lo / scale) clamped to int8."""
    lo, hi = min(float(r.lo), 0.0), max(float(r.hi), 0.0)
    if hi - lo < 1e-12:
        return QuantParams((1.0 / 255,), (-128,))
    scale = float(np.float32((hi - lo) / 255.0))
    zp = int(np.clip(np.round(-128 - lo / scale), -128, 127))
    return QuantParams((scale,), (zp,))


class Calibration:
    """Per-tensor min/max and histograms of every non-constant float32 tensor of `graph`."""

    def __init__(self, graph: Graph, samples: list[dict[str, np.ndarray]], progress: bool = True):
        self.graph = graph
        names = [n for n, t in graph.tensors.items() if not t.is_const and t.dtype == "float32"]
        self.lo = {n: np.inf for n in names}
        self.hi = {n: -np.inf for n in names}
        # Per last-axis (channel) sums, for the bias correction of int4 weights (ptq.py).
        self._sum = {n: np.zeros(graph.tensors[n].shape[-1] if graph.tensors[n].shape else 1) for n in names}
        self._count = {n: 0 for n in names}
        runs = [] if len(samples) <= 64 else None   # small sets: keep the outputs for pass 2
        for env in self._run(samples, "calibrating (1/2: ranges)    ", progress):
            for n in names:
                v = env[n]
                self.lo[n] = min(self.lo[n], float(v.min()))
                self.hi[n] = max(self.hi[n], float(v.max()))
                rows = np.asarray(v, np.float64).reshape(-1, self._sum[n].size)
                self._sum[n] += rows.sum(axis=0)
                self._count[n] += rows.shape[0]
            if runs is not None:
                runs.append({n: env[n] for n in names})
        self.hist = {}
        for n in names:
            self.lo[n], self.hi[n] = min(self.lo[n], 0.0), max(self.hi[n], 0.0)
            self.hist[n] = np.zeros(BINS, np.int64)
        envs = runs if runs is not None else self._run(samples, "calibrating (2/2: histograms)", progress)
        for env in envs:
            for n in names:
                lo, hi = self.lo[n], self.hi[n]
                if hi > lo:
                    self.hist[n] += np.histogram(env[n], bins=BINS, range=(lo, hi))[0]

    def channel_mean(self, name: str) -> np.ndarray:
        """The mean of float tensor `name` over the samples, per index of its last axis."""
        return self._sum[name] / max(self._count[name], 1)

    def _run(self, samples, label, progress) -> Iterable[dict]:
        with tqdm(total=len(samples), desc=label.strip(), unit="sample", file=sys.stderr,
                  disable=not progress) as bar:
            for sample in samples:
                yield interp.run(self.graph, sample, keep_all=True)
                bar.update(1)

    def range(self, name: str, method: str) -> Range:
        lo, hi, hist = self.lo[name], self.hi[name], self.hist[name]
        if method == "minmax" or hi <= lo or hist.sum() == 0:
            return Range(lo, hi)
        edges = np.linspace(lo, hi, BINS + 1)
        if method == "percentile":
            cdf = np.cumsum(hist) / hist.sum()
            tail = (100.0 - PERCENTILE) / 100.0
            r_lo = edges[np.searchsorted(cdf, tail)] if lo < 0 else 0.0
            r_hi = edges[min(np.searchsorted(cdf, 1.0 - tail) + 1, BINS)] if hi > 0 else 0.0
            return Range(min(r_lo, 0.0), max(r_hi, 0.0))
        if method == "mse":
            return _mse_range(hist, edges)
        raise ValueError(f"unknown calibration method {method!r}; choose from {METHODS}")


def _mse_range(hist: np.ndarray, edges: np.ndarray) -> Range:
    """Search of clipped ranges [lo*a, hi*b] minimizing the histogram's squared error after
    int8 quantize-dequantize (bin centres stand for their bin): a geometric grid of (a, b)
    from 0.05 to 1, then a finer grid around the best pair."""
    centres = (edges[:-1] + edges[1:]) / 2
    lo, hi = min(edges[0], 0.0), max(edges[-1], 0.0)
    keep = hist > 0
    c, w = centres[keep], hist[keep].astype(np.float64)

    def error(a: float, b: float) -> float:
        q = activation_qparams(Range(lo * a, hi * b))
        deq = (np.clip(np.round(c / q.s) + q.zp, -128, 127) - q.zp) * q.s
        # 2048 bins are ~8 per int8 step, so the centres sample the rounding error too.
        return float(np.dot(w, (c - deq) ** 2))

    def search(a_grid, b_grid):
        a_grid = a_grid if lo < 0 else [1.0]
        b_grid = b_grid if hi > 0 else [1.0]
        return min(((error(a, b), a, b) for a in a_grid for b in b_grid))

    coarse = np.geomspace(0.05, 1.0, 40)
    step = coarse[-1] / coarse[-2]
    _, a0, b0 = search(coarse, coarse)
    fine = lambda f: np.clip(np.geomspace(f / step, f * step, 13), 0.0, 1.0)  # noqa: E731
    _, a, b = search(fine(a0), fine(b0))
    return Range(lo * a, hi * b)
