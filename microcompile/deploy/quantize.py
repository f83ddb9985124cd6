"""Post-training quantization of a float model as `quantize` and `deploy --quantize` run it:
read, fold (as TFLite does before quantizing), calibrate, quantize; save as .tflite."""

from __future__ import annotations

from pathlib import Path

from .. import quantization as qz
from ..errors import UserError
from ..files import write_file
from ..frontend import is_torch_object, load_model
from ..frontend.tflite.writer import write_tflite
from ..ir import Graph
from ..transform import pipeline
from .options import QuantizeOptions


def quantize_model(model, calibration, options: QuantizeOptions = QuantizeOptions(), *, report: bool = True,
                   progress: bool = True, input_shapes: dict | None = None) -> qz.Quantized:
    """Quantize float model `model` (a path, bytes, an onnx.ModelProto, a torch.export program,
    a torch.nn.Module (exported with the first calibration sample) or a Graph), calibrated on
    `calibration` (a path of samples, or the arrays; quantize.load_calibration). `report`
    computes each layer's SQNR."""
    example = _first_sample(calibration) if is_torch_object(model) else None
    # Fuse activations, fold batch-norm and constants first: TFLite quantizes the fused graph.
    graph = pipeline.run(load_model(model, input_shapes=input_shapes, example_inputs=example),
                         passes=pipeline.BEFORE_QUANTIZE)
    samples = qz.load_calibration(calibration, graph)
    return qz.quantize(graph, samples, options, report=report, progress=progress)


def _first_sample(calibration) -> tuple | None:
    """The first sample of each input of in-memory calibration arrays (a batch [N, ...] per
    input): what torch.export traces a module with."""
    import numpy as np
    if isinstance(calibration, np.ndarray):
        return (calibration[:1],)
    if isinstance(calibration, dict):
        return tuple(np.asarray(v)[:1] for v in calibration.values())
    if isinstance(calibration, (list, tuple)) and calibration and all(isinstance(v, np.ndarray) for v in calibration):
        return tuple(v[:1] for v in calibration)
    return None     # a path: load_model asks for example inputs if the model is a module


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
