"""Post-training quantization: calibration (observers), the PTQ pass and its SQNR report.

    quantize(float_graph, samples) -> Quantized(graph, layers)

`float_graph` is a float32 Graph after the transform pipeline (activations fused,
batch-norm folded); `samples` are the calibration inputs (see `data.load_calibration`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..errors import UserError
from ..ir import Graph
from .calibrate import METHODS, Calibration
from .data import CalibrationDataError, load_calibration
from .options import QuantizeOptions
from .ptq import (ACTIVATION_DTYPES, IO_MODES, WEIGHT_DTYPES, UnquantizableOpError, check_quantizable,
                  check_weights, dequantize_weights, quantize_graph)
from .report import DEFAULT_THRESHOLD_DB, LayerSQNR, format_sqnr_table, layer_sqnr

# Measured by benchmarks/quantization_accuracy.py (output SQNR and accuracy over the digits
# models and the three MLPerf float models); see the README's quantization section.
DEFAULT_METHOD = "mse"

__all__ = ["quantize", "Quantized", "QuantizeOptions", "METHODS", "DEFAULT_METHOD", "IO_MODES", "ACTIVATION_DTYPES",
           "WEIGHT_DTYPES", "load_calibration", "dequantize_weights", "CalibrationDataError", "UnquantizableOpError", "LayerSQNR",
           "format_sqnr_table", "DEFAULT_THRESHOLD_DB"]


@dataclass
class Quantized:
    graph: Graph                  # the int8 graph
    float_graph: Graph            # the float32 graph it was calibrated on
    layers: list[LayerSQNR] = field(default_factory=list)   # per-layer SQNR (when report=True)


def quantize(float_graph: Graph, samples: list[dict], options: QuantizeOptions = QuantizeOptions(), *,
             report: bool = True, progress: bool = True, calibration: Calibration | None = None) -> Quantized:
    """Calibrate `float_graph` on `samples` and quantize it as `options` say (see
    ptq.quantize_graph; activations="int16" is TFLite's 16x8 scheme). `report` computes each
    layer's SQNR; `calibration` reuses the ranges of an earlier calibration on these samples."""
    method, io, activations = options.method or DEFAULT_METHOD, options.io, options.activations
    keep_float = tuple(options.keep_float)
    if method not in METHODS:
        raise UserError(f"unknown calibration method {method!r}", hint=f"choose one of {', '.join(METHODS)}")
    if not samples:
        raise CalibrationDataError("no calibration samples", hint="give at least one input sample")
    float_graph = dequantize_weights(float_graph)
    # fail before the (slow) calibration
    check_weights(float_graph, options.weights, tuple(options.keep_int8), activations)
    check_quantizable(float_graph, keep_float, activations)
    calibration = calibration or Calibration(float_graph, samples, progress=progress)
    qgraph = quantize_graph(float_graph, lambda name: calibration.range(name, method), io, keep_float, activations,
                            options.weights, tuple(options.keep_int8), calibration.channel_mean)
    layers = layer_sqnr(float_graph, qgraph, samples) if report else []
    return Quantized(qgraph, float_graph, layers)
