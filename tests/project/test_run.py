import numpy as np
import pytest

from microcompile.errors import DeviceError
from microcompile.project import load_manifest, parse_output


def test_parse_concatenates_split_hex(artifact):
    m = load_manifest(artifact)
    text = ("boot noise\r\nMC-BEGIN\nMC-OUTPUT 0 000102030405060708\nMC-OUTPUT 0 090a0b0c0d0e0f\n"
            "MC-OUTPUT 1 0000803f00002040\nMC-TICKS 4294967295\nMC-END\n")
    outputs, ticks = parse_output(text, m)
    np.testing.assert_array_equal(outputs[0], np.arange(16, dtype=np.int8).reshape(1, 16))
    np.testing.assert_array_equal(outputs[1], np.array([[1.0, 2.5]], np.float32))
    assert ticks == 4294967295


@pytest.mark.parametrize("text, match", [
    ("", "no complete"),
    ("MC-BEGIN\nMC-OUTPUT 0 00\n", "no complete"),
    ("MC-ERROR mc_init\n", "mc_init"),
    ("MC-BEGIN\nMC-OUTPUT 0 zz\nMC-TICKS 1\nMC-END\n", "garbled hex"),
    ("MC-BEGIN\nMC-OUTPUT 0 00\nMC-OUTPUT 1 0000803f00002040\nMC-TICKS 1\nMC-END\n", "got 1 bytes"),
    ("MC-BEGIN\nMC-TICKS x\nMC-END\n", "garbled"),
    ("MC-BEGIN\nMC-END\n", "MC-TICKS"),
])
def test_parse_errors(artifact, text, match):
    with pytest.raises(DeviceError, match=match):
        parse_output(text, load_manifest(artifact))
