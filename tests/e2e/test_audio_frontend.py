"""TFLite Micro's audio front end (its signal-library ops, ir/ops_signal.py) end to end: the
project's own preprocessor (tests/support/audio_frontend.py, TFLM's micro_speech model op for
op, int8 and float32 features) written by our writer, run by TFLM's interpreter (the oracle:
LiteRT does not run these ops), read back by our reader, and compared over a stream of frames
(the noise estimate carries over), on the host and on the emulated Cortex-M3, M4 and M55."""

from __future__ import annotations

import numpy as np
import pytest

import microcompile as mc
from support.audio_frontend import audio_frontend_graph
from support.c_harness import run_on_host
from tflm_ref import tflm_interpreter
from microcompile.errors import ModelFormatError, UnsupportedOpError
from microcompile.frontend.tflite import load_tflite, write_tflite
from microcompile.reference import interp

LEVELS = (3000, 300, 30000, 10, 0, 1000, 32767, 5000)    # quiet, loud, silent and clipped frames


def _frames(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for k, level in enumerate(LEVELS):
        tone = level * np.sin(2 * np.pi * (300 + 400 * k) * np.arange(480) / 16000)
        out.append(np.clip(tone + rng.normal(0, level / 4 + 1, 480), -32768, 32767).astype(np.int16).reshape(1, 480))
    return out


@pytest.fixture(scope="module", params=["int8", "float"])
def model(request) -> bytes:
    return write_tflite(audio_frontend_graph(request.param))


def _tflm_stream(data: bytes, frames) -> list[np.ndarray]:
    tf = tflm_interpreter(data)
    out = []
    for x in frames:
        tf.set_input(x, 0)
        tf.invoke()
        out.append(np.array(tf.get_output(0), copy=True))
    return out


def test_the_reference_equals_tflm_over_a_stream_of_frames(model):
    g = load_tflite(model)
    frames = _frames(1)
    want = _tflm_stream(model, frames)
    state = interp.initial_state(g)
    got = [interp.run(g, {g.inputs[0]: x}, state=state)[g.outputs[0]] for x in frames]
    for k, (a, b) in enumerate(zip(got, want)):
        assert a.dtype == b.dtype and np.array_equal(a, b), k
    # The state matters: the same frame again gives other features (the noise estimate grew).
    again = interp.run(g, {g.inputs[0]: frames[0]}, state=state)[g.outputs[0]]
    assert not np.array_equal(again, got[0])
    # every frame gives its own features, except the two near-silent ones (all at the floor)
    assert len({a.tobytes() for a in got}) == len(got) - 1


def test_the_host_c_equals_tflm(model, tmp_path):
    g = load_tflite(model)
    (out, case), = run_on_host([g], tmp_path)
    want = _tflm_stream(model, [case.inputs[g.inputs[0]]])[0]
    assert np.array_equal(out, want)


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an385", "mps2-an386", "mps3-an547"])
def test_the_cortex_m_firmware_equals_tflm(model, board, tmp_path):
    g = load_tflite(model)
    x = _frames(2)[0]
    r = mc.compile(g, board).deploy(tmp_path / "p", inputs=x, emulate=True)
    want = _tflm_stream(model, [x])[0]
    assert r.verified and np.array_equal(r.outputs[g.outputs[0]], want)


def _rewrite_options(data: bytes, code: str, options: bytes) -> bytes:
    """`data` with the custom options of op `code` replaced by `options` (same length)."""
    old = tflite_options(data, code)
    assert len(options) == len(old)
    at = data.index(old)
    return data[:at] + options + data[at + len(old):]


def test_bad_custom_options_are_named():
    window = write_tflite(audio_frontend_graph("int8"))
    m = tflite_options(window, "SignalWindow")
    with pytest.raises(ModelFormatError, match="custom options"):
        load_tflite(_rewrite_options(window, "SignalWindow", b"\xff" * len(m)))
    # an option of the wrong name: TFLM would read garbage
    bad = m.replace(b"shift", b"shfit")
    with pytest.raises(ModelFormatError, match="option 'shift' is missing"):
        load_tflite(_rewrite_options(window, "SignalWindow", bad))


def tflite_options(data: bytes, code: str) -> bytes:
    import tflite
    m = tflite.Model.GetRootAs(data, 0)
    sg = m.Subgraphs(0)
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        if m.OperatorCodes(op.OpcodeIndex()).CustomCode() == code.encode():
            return bytes(op.CustomOptionsAsNumpy())
    raise AssertionError(code)


def test_a_float_rfft_is_refused_by_name():
    data = write_tflite(audio_frontend_graph("float"))
    opts = tflite_options(data, "SignalRfft")
    from flatbuffers import flexbuffers
    assert flexbuffers.Loads(opts)["T"] == 7
    # flexbuffer maps store values after the sorted keys: T is the first value, 7 -> 0 (FLOAT32)
    at = len(opts) - 1 - opts[::-1].index(bytes([7]))
    float_opts = opts[:at] + bytes([0]) + opts[at + 1:]
    assert flexbuffers.Loads(float_opts)["T"] == 0
    with pytest.raises(UnsupportedOpError, match=r"CUSTOM\(SignalRfft\) of float32 frames \(int16 only\)"):
        load_tflite(_rewrite_options(data, "SignalRfft", float_opts))
