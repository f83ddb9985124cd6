"""ONNX's own backend test suite (`onnx.backend.test`) against microcompile.

Selected: the node tests whose every op has a microcompile converter (tests written at
opsets outside 11..21 are converted by onnx.version_converter, see backend.upgrade),
and all `pytorch-converted` / `pytorch-operator` model tests (shipped with the onnx
package, offline). Not selected: the `real` model tests (they download models) and the
`simple` / `light` ones. Excluded: EXCLUDED in excluded.py, one reason per test. A test
that microcompile cannot compile is skipped with "unsupported: <why>"; it is never run
with a guessed answer.

Every selected model is compiled to C and run on the host with gcc; the models of the
whole session are prefetched into one program (backend.HostRunner) so the suite stays fast.
"""

from __future__ import annotations

import glob
import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

import onnx  # noqa: E402
import onnx.backend.test  # noqa: E402
from onnx import numpy_helper  # noqa: E402
from onnx.backend.test.loader import load_model_tests  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from backend import HOST, MicrocompileBackend, compile_model  # noqa: E402
from excluded import EXCLUDED  # noqa: E402

from microcompile.frontend.onnx import find_converter  # noqa: E402

pytestmark = pytest.mark.slow
MODEL_KINDS = ("pytorch-converted", "pytorch-operator")


def _supported(model) -> bool:
    """Every op has a converter (at the test's opset brought into 11..21, see backend.upgrade)."""
    opsets = {i.domain or "": i.version for i in model.opset_import}
    return all(find_converter(n.op_type, min(max(opsets.get(n.domain or "", 0), 11), 21), n.domain or "")
               is not None or n.op_type in ("Constant", "Shape", "Size") for n in model.graph.node)


def selected_cases() -> dict[str, object]:
    """test name (without the _cpu suffix) -> onnx TestCase, for every selected test."""
    cases = {t.name: t for t in load_model_tests(kind="node") if _supported(t.model)}
    for kind in MODEL_KINDS:
        cases.update({t.name: t for t in load_model_tests(kind=kind)})
    return cases


CASES = selected_cases()
backend_test = onnx.backend.test.BackendTest(MicrocompileBackend, __name__)
for _name in CASES:
    backend_test.include(f"^{re.escape(_name)}_cpu$")
for _name in EXCLUDED:
    backend_test.exclude(f"^{re.escape(_name)}_cpu$")
TEST_CASES = backend_test.test_cases
for _cls in TEST_CASES.values():   # keep only the selected CPU tests (the rest would be noise skips)
    for _attr in [a for a in vars(_cls) if a.startswith("test_")]:
        if not (_attr.endswith("_cpu") and _attr[: -len("_cpu")] in CASES):
            delattr(_cls, _attr)
globals().update(TEST_CASES)
del _cls, _attr, _name   # a class left in a module global would be collected twice


def _data_sets(case) -> list[list[np.ndarray]]:
    if case.model_dir is None:
        return [[np.asarray(x) for x in inputs] for inputs, _ in case.data_sets]
    out = []
    for d in sorted(glob.glob(os.path.join(case.model_dir, "test_data_set*"))):
        files = sorted(glob.glob(os.path.join(d, "input_*.pb")), key=lambda f: int(f.rsplit("_", 1)[1][:-3]))
        tensors = []
        for f in files:
            t = onnx.TensorProto()
            with open(f, "rb") as fh:
                t.ParseFromString(fh.read())
            tensors.append(numpy_helper.to_array(t))
        out.append(tensors)
    return out


def _model(case):
    return case.model if case.model_dir is None else onnx.load(os.path.join(case.model_dir, "model.onnx"))


@pytest.fixture(scope="module", autouse=True)
def prefetch(request):
    """Compile every test of this session that will run into one host program, once."""
    names = {item.name[: -len("_cpu")] for item in request.session.items
             if item.module.__name__ == __name__ and item.name.endswith("_cpu")}
    jobs = []
    for name in sorted(names & set(CASES) - set(EXCLUDED)):
        model = _model(CASES[name])
        try:
            g = compile_model(model)
        except Exception:   # unsupported, or an import bug: the test itself reports it
            continue
        jobs += [(model, g, inputs) for inputs in _data_sets(CASES[name])]
    HOST.prefetch(jobs)
