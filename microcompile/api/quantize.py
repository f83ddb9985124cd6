"""`quantize`: post-training int8 (or 16x8) quantization of a float model."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ..deploy import QuantizeOptions
from ..deploy.quantize import quantize_model, save_quantized, tflite_bytes
from ..ir import Graph
from .common import name_of


class Quantized:
    """A quantized model in memory: give it to :func:`microcompile.compile`, or `save` it as
    .tflite. `layers` holds each layer's SQNR (int8 against float32, on the calibration data)."""

    def __init__(self, result, name: str, options: QuantizeOptions):
        self._result, self.name, self.options = result, name, options

    @property
    def graph(self) -> Graph:
        """The quantized graph."""
        return self._result.graph

    @property
    def float_graph(self) -> Graph:
        return self._result.float_graph

    @property
    def layers(self) -> list:
        """Per-layer SQNR rows (node, op, output, sqnr_db)."""
        return list(self._result.layers)

    def table(self, threshold_db: float | None = None) -> str:
        """The SQNR table `microcompile quantize` prints."""
        from ..quantization import DEFAULT_THRESHOLD_DB, format_sqnr_table
        return format_sqnr_table(self.layers, DEFAULT_THRESHOLD_DB if threshold_db is None else threshold_db)

    def tflite(self) -> bytes:
        """The model as a .tflite file's bytes (UserError when TFLite cannot express it)."""
        return tflite_bytes(self.graph, self._description())

    def save(self, path) -> Path:
        """Write the model as .tflite (atomically); returns the path."""
        return save_quantized(self.graph, path, self._description())

    def _description(self) -> str:
        return f"microcompile PTQ {self.options.scheme} ({self.options.method or 'mse'})"

    def __repr__(self) -> str:
        return f"<Quantized {self.name!r} ({self.options.scheme}), {len(self.graph.nodes)} layers>"


def quantize(model, calibration, *, input_shapes: dict | None = None, progress: bool = False,
             **scheme) -> Quantized:
    """Post-training quantization of a float32 model to TFLite's int8 scheme (per-channel
    weights, per-tensor activations), 16x8 with ``activations="int16"``, or int4 weights
    with ``weights="int4"``.

    Parameters
    ----------
    model : path, bytes, onnx.ModelProto or Graph
        A float32 model.
    calibration : array, list or dict of arrays, or a path
        Input samples: a batch ``[N, ...]`` per input (a .npy/.npz file or a directory of
        .npy files also works). ONNX image inputs may be NCHW.
    input_shapes : dict, optional
        Pins dynamic ONNX input dimensions.
    progress : bool
        Show the calibration's progress bars.
    **scheme
        The fields of `QuantizeOptions` (an unknown one is a TypeError):

        - ``activations`` : {"int8", "int16"}
        - ``method`` : {"minmax", "percentile", "mse"}, how each activation's range is chosen
          (default mse).
        - ``io`` : {"float32", "int8", "int16"}; float32 keeps float inputs and outputs
          (QUANTIZE/DEQUANTIZE at the edges).
        - ``keep_float`` : ops or layers left in float32.
        - ``weights`` : {"int8", "int4"}; int4 gives conv, depthwise conv and fully connected
          layers per-channel int4 weights (TFLite's packed INT4: half the flash; int8
          activations only).
        - ``keep_int8`` : with ``weights="int4"``, layers or ops that keep int8 weights (the
          sensitive ones: the per-layer SQNR table shows which).

    Examples
    --------
    >>> q = mc.quantize("model_fp32.onnx", calibration=batch)    # doctest: +SKIP
    >>> q.save("model_int8.tflite"); cm = mc.compile(q, board="stm32")   # doctest: +SKIP
    """
    fields = {f.name for f in dataclasses.fields(QuantizeOptions)}
    unknown = sorted(set(scheme) - fields)
    if unknown:
        raise TypeError(f"quantize() got unexpected keyword argument(s) {', '.join(unknown)}; "
                        f"the scheme's are {', '.join(sorted(fields))}")
    options = QuantizeOptions(**{k: tuple(v) if k in ("keep_float", "keep_int8") else v for k, v in scheme.items()})
    result = quantize_model(model, calibration, options, progress=progress, input_shapes=input_shapes)
    return Quantized(result, f"{name_of(model)}_{options.scheme}", options)

