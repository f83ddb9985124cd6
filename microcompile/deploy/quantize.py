"""Post-training quantization of a float model as `quantize` and `deploy --quantize` run it:
read, fold (as TFLite does before quantizing), calibrate, quantize; save as .tflite."""

from __future__ import annotations

from pathlib import Path

from .. import quantization as qz
from ..errors import UserError
from ..files import write_file
from ..frontend import load_model
from ..frontend.tflite.writer import write_tflite
from ..ir import Graph
from ..transform import pipeline
from .options import QuantizeOptions


def quantize_model(model, calibration, options: QuantizeOptions = QuantizeOptions(), *, report: bool = True,
                   progress: bool = True, input_shapes: dict | None = None) -> qz.Quantized:
    """Quantize float model `model` (a path, bytes, an onnx.ModelProto or a Graph), calibrated on
    `calibration` (a path of samples, or the arrays; quantize.load_calibration). `report`
    computes each layer's SQNR."""
    # Fuse activations, fold batch-norm and constants first: TFLite quantizes the fused graph.
    graph = pipeline.run(load_model(model, input_shapes=input_shapes), passes=pipeline.BEFORE_QUANTIZE)
    samples = qz.load_calibration(calibration, graph)
    return qz.quantize(graph, samples, options, report=report, progress=progress)


def tflite_bytes(graph: Graph, description: str) -> bytes:
    """`graph` as a .tflite file; UserError when TFLite cannot express it."""
    try:
        return write_tflite(graph, description=description)
    except ValueError as e:
        raise UserError(f"cannot save the quantized model as .tflite: {e}",
                        hint="the model needs an op or padding TFLite cannot express") from None


def check_tflite_path(path) -> Path:
    """A quantized model is saved as .tflite: refuse another extension before any work."""
    if Path(path).suffix.lower() != ".tflite":
        raise UserError(f"cannot write {path}: quantized models are saved as .tflite",
                        hint="name the output model_int8.tflite (it reloads in microcompile and opens in Netron)")
    return Path(path)


def save_quantized(graph: Graph, path, description: str) -> Path:
    """Write `graph` to `path` (.tflite) atomically."""
    return write_file(check_tflite_path(path), tflite_bytes(graph, description), "output model")
