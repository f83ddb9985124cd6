"""The MobileNet fixtures (tests/fixtures/mobilenets: MobileNetV1 0.25 and MobileNetV2 0.35 at
96x96, int8, made by make_mobilenets.py) against LiteRT BUILTIN_REF, byte for byte: on the
host and on the Cortex-M4 twin. They are the networks the depthwise and memory work is
measured on (benchmarks/mlperf_tiny.py --mobilenets, benchmarks/memory.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from support import flows
from tests.litert_ref import make_interpreter, run_reference

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mobilenets"
NAMES = ["mobilenet_v1_025_96_int8", "mobilenet_v2_035_96_int8"]
# MLPerf Tiny's visual wake words network has 7.49M MACs; ours is the same architecture.
MACS = {"mobilenet_v1_025_96_int8": 7_491_968, "mobilenet_v2_035_96_int8": 10_678_448}


@pytest.mark.heavy
# The host build is `slow` (a minute each): the twin runs the same graph through the DSP kernels,
# and the portable C kernels are checked op by op on the host (tests/e2e/test_ops_host_vs_litert.py).
@pytest.mark.parametrize("board", [pytest.param("host", marks=pytest.mark.slow),
                                   pytest.param("mps2-an386", marks=pytest.mark.qemu)])
@pytest.mark.parametrize("name", NAMES)
def test_the_fixture_equals_litert(name, board, tmp_path):
    path = FIXTURES / f"{name}.tflite"
    x = np.load(FIXTURES / f"{name}.npz")["x"]
    np.save(tmp_path / "x.npy", x)
    result = flows.deploy(path, board, tmp_path / "project", emulate=board != "host", input_path=tmp_path / "x.npy",
                          progress=lambda s: None)
    want = run_reference(path.read_bytes(), {_input_name(path): x})
    for out_name, ref in want.items():
        assert result.outputs[out_name].tobytes() == ref.tobytes(), f"{name} on {board}: {out_name}"
    assert result.report["verified"]
    assert sum(layer["macs"] for layer in result.report["layers"]) == MACS[name]


def _input_name(path: Path) -> str:
    return make_interpreter(path.read_bytes()).get_input_details()[0]["name"]
