"""ONNX's own backend test suite (`onnx.backend.test`) against microcompile.

Run: exactly the tests listed in expected_pass.txt (node tests and `pytorch-converted` /
`pytorch-operator` model tests, all shipped with the onnx package, offline; tests written
at opsets outside 11..21 are converted by onnx.version_converter, see backend.upgrade).
Each must pass: a listed test that microcompile refuses, that computes a wrong answer or
that onnx no longer ships fails the run. Outputs are compared at microcompile's own
tolerance (ir/compare.py: float32 within 1e-5 relative, floor 1e-6 of the largest
magnitude; integers exact), not at onnx's default rtol=1e-3.

The other candidates (node tests whose every op has a converter, and the remaining model
tests) must still be refused: when one starts to compile, test_unlisted_candidates_are_still_refused
names it, so that the list grows deliberately and a newly supported op gets its tests.

Every listed model is compiled to C and run on the host with gcc; the models of the
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

from support.backend import HOST, MicrocompileBackend, Refused, compile_model  # noqa: E402

from microcompile.frontend.onnx import find_converter  # noqa: E402
from microcompile.ir.compare import compare  # noqa: E402

pytestmark = pytest.mark.heavy
MODEL_KINDS = ("pytorch-converted", "pytorch-operator")
EXPECTED_FILE = Path(__file__).resolve().parent / "expected_pass.txt"


def expected_names() -> list[str]:
    lines = EXPECTED_FILE.read_text().splitlines()
    return [ln.strip() for ln in lines if ln.strip() and not ln.startswith("#")]


def _has_converters(model) -> bool:
    """Every op has a converter (at the test's opset brought into 11..21, see backend.upgrade)."""
    opsets = {i.domain or "": i.version for i in model.opset_import}
    return all(find_converter(n.op_type, min(max(opsets.get(n.domain or "", 0), 11), 21), n.domain or "")
               is not None or n.op_type in ("Constant", "Shape", "Size") for n in model.graph.node)


def _all_cases() -> dict[str, object]:
    """test name (without the _cpu suffix) -> onnx TestCase, for every node and model test we may run."""
    cases = {t.name: t for t in load_model_tests(kind="node")}
    for kind in MODEL_KINDS:
        cases.update({t.name: t for t in load_model_tests(kind=kind)})
    return cases


EXPECTED = expected_names()
ALL_CASES = _all_cases()
CASES = {name: ALL_CASES[name] for name in EXPECTED if name in ALL_CASES}


class MicrocompileBackendTest(onnx.backend.test.BackendTest):
    @classmethod
    def assert_similar_outputs(cls, ref_outputs, outputs, rtol, atol, model_dir=None):
        """Our tolerance, whatever rtol/atol the test case carries."""
        assert len(outputs) == len(ref_outputs), (len(outputs), len(ref_outputs))
        for k, (got, want) in enumerate(zip(outputs, ref_outputs)):
            got, want = np.asarray(got), np.asarray(want)
            assert got.shape == want.shape, f"output {k}: shape {got.shape}, expected {want.shape}"
            assert got.dtype == want.dtype, f"output {k}: dtype {got.dtype}, expected {want.dtype}"
            c = compare(got, want)
            assert c.equal, f"output {k} differs from onnx's expected output: {c}"


backend_test = MicrocompileBackendTest(MicrocompileBackend, __name__)
for _name in CASES:
    backend_test.include(f"^{re.escape(_name)}_cpu$")
TEST_CASES = backend_test.test_cases
for _cls in TEST_CASES.values():   # keep only the listed CPU tests
    for _attr in [a for a in vars(_cls) if a.startswith("test_")]:
        if not (_attr.endswith("_cpu") and _attr[: -len("_cpu")] in CASES):
            delattr(_cls, _attr)
globals().update(TEST_CASES)
del _cls, _attr, _name   # a class left in a module global would be collected twice


def test_expected_list_is_sorted_and_every_test_exists():
    assert EXPECTED == sorted(set(EXPECTED)), "keep expected_pass.txt sorted, one name per line"
    missing = [n for n in EXPECTED if n not in ALL_CASES]
    assert not missing, f"listed in expected_pass.txt but not shipped by onnx {onnx.__version__}: {missing}"
    generated = {a[: -len("_cpu")] for c in TEST_CASES.values() for a in vars(c) if a.startswith("test_")}
    assert generated == set(EXPECTED)


def test_unlisted_candidates_are_still_refused():
    candidates = sorted(n for n, c in ALL_CASES.items() if n not in CASES
                        and (c.model_dir is not None or _has_converters(c.model)))
    compiled = []
    for name in candidates:
        try:
            compile_model(_model(ALL_CASES[name]))
        except Refused:
            continue
        compiled.append(name)
    assert not compiled, (f"{len(compiled)} test(s) outside expected_pass.txt now compile: run them (add each "
                          f"name to the list, then this suite) and keep those that pass: {compiled}")


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
    """Compile every listed test of this session into one host program, once."""
    names = {item.name[: -len("_cpu")] for item in request.session.items
             if item.module.__name__ == __name__ and item.name.endswith("_cpu")}
    jobs = []
    for name in sorted(names & set(CASES)):
        model = _model(CASES[name])
        try:
            g = compile_model(model)
        except Exception:   # refused, or an import bug: the test itself reports it
            continue
        jobs += [(model, g, inputs) for inputs in _data_sets(CASES[name])]
    HOST.prefetch(jobs)
