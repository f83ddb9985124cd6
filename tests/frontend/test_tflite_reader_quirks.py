"""What old and current TFLite converters write that LiteRT or TFLite Micro accept, and the
reader must too: a 1-D per-channel bias whose quantized_dimension is the filter's (TFLM's
person-detection model; TFLM runs it, LiteRT refuses it), and stale stored shapes of
intermediate tensors (TFLite recomputes every intermediate shape in Prepare)."""

from __future__ import annotations

import pathlib
import sys

import numpy as np
import pytest


from litert_ref import run_reference  # noqa: E402
from support.op_cases import build_graph, cases, random_inputs  # noqa: E402
from tflm_ref import run_tflm  # noqa: E402
from microcompile.frontend.tflite.reader import load_tflite  # noqa: E402
from microcompile.frontend.tflite.writer import write_tflite  # noqa: E402
from microcompile.ir import QuantParams  # noqa: E402
from microcompile.reference import interp  # noqa: E402

CORPUS = pathlib.Path(__file__).resolve().parent.parent / "fixtures" / "corpus"


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


@pytest.mark.parametrize("name", ["dilated_f32.tflite", "dilated_int8.tflite"])
def test_stale_stored_shapes_are_inferred_and_noted(name):
    """The TF converter's dilated convs: SPACE_TO_BATCH_ND yields batch 4, the file says 1."""
    g = load_tflite(CORPUS / name)
    stale = [note for note in g.notes if "the file stores shape" in note]
    assert len(stale) == 4, g.notes
    s2b = [n for n in g.nodes if n.op == "space_to_batch_nd"]
    assert s2b and all(g.tensors[n.outputs[0]].shape[0] == 4 for n in s2b)
    x = random_inputs(g, 2)[g.inputs[0]]
    got = interp.run(g, {g.inputs[0]: x})[g.outputs[0]]
    ref = run_reference((CORPUS / name).read_bytes(), {g.inputs[0]: x})[g.outputs[0]]
    assert np.allclose(got, ref, rtol=1e-5, atol=1e-6 * np.abs(ref).max()) if got.dtype == np.float32 \
        else np.array_equal(got, ref)


def test_inspect_lists_the_stale_shapes(capsys):
    from microcompile.cli import main

    assert main(["inspect", str(CORPUS / "dilated_int8.tflite")]) == 0
    out = capsys.readouterr().out
    assert "the file stores shape [1, 10, 10, 3], but SPACE_TO_BATCH_ND at layer 0 produces [4, 10, 10, 3]" in out


def test_a_model_vela_compiled_for_an_ethos_u_npu_is_refused_by_name(tmp_path):
    """Vela replaces the layers by one CUSTOM 'ethos-u' op reading a command stream and scratch
    tensors no op writes: named as an NPU model, not called corrupt."""
    from support.build_not_a_model import RawBuffer, RawOp, RawSubgraph, RawTensor, raw_tflite
    from support.cli_run import run_cli

    sg = RawSubgraph("main", [RawTensor("input", (1, 8)), RawTensor("command_stream", (64,), buffer=1, type=3),
                              RawTensor("scratch", (128,), type=3), RawTensor("output", (1, 8))],
                     [RawOp("CUSTOM:ethos-u", (1, 2, 0), (3,))], (0,), (3,))
    (tmp_path / "m_vela.tflite").write_bytes(raw_tflite([sg], [RawBuffer(bytes(64))]))
    p = run_cli("inspect", tmp_path / "m_vela.tflite")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "compiled for an Arm Ethos-U NPU by Vela" in p.stderr and "deploy the model Vela was given" in p.stderr
