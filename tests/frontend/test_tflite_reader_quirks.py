"""What old and current TFLite converters write that LiteRT or TFLite Micro accept, and the
reader must too: a 1-D per-channel bias whose quantized_dimension is the filter's (TFLM's
person-detection model; TFLM runs it, LiteRT refuses it), and stale stored shapes of
intermediate tensors (TFLite recomputes every intermediate shape in Prepare)."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "ir"))

from litert_ref import run_reference  # noqa: E402
from op_cases import build_graph, cases, random_inputs  # noqa: E402
from tflm_ref import run_tflm  # noqa: E402
from microcompile.frontend.tflite.reader import load_tflite  # noqa: E402
from microcompile.frontend.tflite.writer import write_tflite  # noqa: E402
from microcompile.ir import QuantParams  # noqa: E402
from microcompile.reference import interp  # noqa: E402

FIXTURES = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "models"


def _old_converter_bias_model() -> bytes:
    """An int8 conv whose per-channel bias says quantized_dimension 3 (the filter's axis)."""
    g = build_graph(dict(cases("conv2d", "int8", 1, seed=5)[0], per_channel=True, cout=8))
    b = g.tensors["b"]
    return write_tflite(g.replace(tensors={**g.tensors, "b": b.replace(quant=QuantParams(b.quant.scale,
                                                                                           b.quant.zero_point, 3))}))


def test_bias_quantized_dimension_past_its_rank_is_read_as_tflm_does():
    model = _old_converter_bias_model()
    with pytest.raises(Exception, match="quantized_dimension"):   # LiteRT refuses the file
        run_reference(model, {})
    g = load_tflite(model)
    assert g.tensors["b"].quant.axis == 0
    assert any("axis 3 of a 1-D tensor" in note for note in g.notes)
    x = random_inputs(g, 1)[g.inputs[0]]
    assert np.array_equal(interp.run(g, {g.inputs[0]: x})[g.outputs[0]], run_tflm(model, [x])[0])


def test_inspect_prints_the_reader_notes(tmp_path, capsys):
    from microcompile.cli import main

    path = tmp_path / "old_bias.tflite"
    path.write_bytes(_old_converter_bias_model())
    assert main(["inspect", str(path)]) == 0
    assert "read as axis 0, as TFLite Micro does" in capsys.readouterr().out
