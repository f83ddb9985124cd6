"""The host agent build the device tests use (a fixture; imported by name, as a conftest.py here would
shadow the one other tests import): multi_op_models' residual_int8 on the host board."""

import numpy as np
import pytest

from microcompile import project
from support import flows
from microcompile.target import load_board
from support import multi_op_models as M

QUIET = lambda s: None  # noqa: E731


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("agent_host")
    path = M.write("residual_int8", tmp)
    rng = np.random.default_rng(1)
    from microcompile.frontend import load_tflite

    g = load_tflite(path)
    x = rng.integers(-128, 128, g.tensors[g.inputs[0]].shape).astype(np.int8)
    np.save(tmp / "x.npy", x)
    result = flows.run(path, "host", tmp / "p", input_path=tmp / "x.npy", progress=QUIET)
    assert result.report["verified"], result.report
    compiled = flows.compile_model(path, load_board("host"), tmp / "artifact")
    return {"project": tmp / "p", "x": x, "graph": compiled.graph, "kernels": compiled.kernels,
            "build_id": project.read_marker(tmp / "p")["build_id"]}


