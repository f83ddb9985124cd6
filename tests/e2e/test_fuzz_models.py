"""Fuzz: corrupted models and arrays never end in a traceback, a hang or an internal error.

Seeded mutants (mutants.py) of the project's own example model (the digits MLP, float32
and its PTQ int8 version), of the shared MLPerf Tiny models when present, of a small ONNX
CNN (float and QDQ) and of an input .npy. Every mutant must give exit 0 (it is still a
valid model) or 2 (a clear user error), never 3 (an internal error, whose crash log the
failure names) and never a traceback:

- `inspect`, in-process through cli.main, for every model mutant;
- for the mutants `inspect` accepts, the rest of `deploy` short of the C compiler, in-process:
  compile for mps2-an386 (lowering, schedules, memory plan, C emission) and run the reference
  interpreter; an exception other than a UserError there is a bug the import let through;
- `deploy --board=host` as a subprocess for a sample (the C compiler and the run included);
- .npy mutants as deploy inputs and as calibration data.

The default run tries a few hundred mutants (COUNTS). The long fuzz (SLOW_COUNTS, thousands,
every accepted mutant compiled) is marked `slow`, which the default run and CI leave out:
`./scripts/test --slow tests/e2e/test_fuzz_models.py` runs it.
"""

from __future__ import annotations

import pathlib
import sys
import tempfile

import numpy as np
import pytest
from microcompile.deploy import model_inputs

from support.cli_run import REPO, run_cli, run_cli_inprocess
from support.mutants import bytes_mutants, tflite_mutants
from tests.conftest import MODELS_DIR


SEED = 14
# mutants per source model: (inspect, of which also compiled in-process at most) in the default run
COUNTS = {"digits": (150, 150), "digits_int8": (150, 150), "onnx_cnn": (120, 120), "onnx_qdq": (80, 80),
          "kws_ref_model": (60, 6), "pretrainedResnet_quant": (40, 3), "ad01_int8": (40, 6),
          "kws_ref_model_float32": (30, 3), "pretrainedResnet": (20, 2), "ad01_fp32": (20, 3)}
SLOW_COUNTS = {name: (n * 10, n * 10) for name, (n, _) in COUNTS.items()}
NPY_COUNT, SLOW_NPY_COUNT = 200, 2000
DEPLOY_SAMPLE = 6     # mutants of the digits models deployed to the host board as a subprocess


# --- the source models -------------------------------------------------------------------------

@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[str, pathlib.Path]:
    """name -> model file: the digits MLP (float32 and int8), two ONNX CNNs, the shared models."""
    from support.digits import build_graph, load_digits_split, train
    from support import flows
    from microcompile.frontend.tflite.writer import write_tflite

    tmp = tmp_path_factory.mktemp("fuzz-sources")
    (xtr, ytr), _ = load_digits_split()
    digits = tmp / "digits.tflite"
    digits.write_bytes(write_tflite(build_graph(train(xtr, ytr, epochs=30))))
    np.save(tmp / "calib.npy", xtr[:40])
    flows.quantize(digits, tmp / "calib.npy", tmp / "digits_int8.tflite")
    out = {"digits": digits, "digits_int8": tmp / "digits_int8.tflite"}
    out.update(_onnx_models(tmp))
    for name in COUNTS:
        if (MODELS_DIR / f"{name}.tflite").is_file():
            out[name] = MODELS_DIR / f"{name}.tflite"
    return out


def _onnx_models(tmp: pathlib.Path) -> dict[str, pathlib.Path]:
    """A float CNN (conv, relu, pool, gemm, softmax) and the same with QDQ int8 weights and activations."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(SEED)
    w = lambda *s: rng.normal(0, 0.3, s).astype(np.float32)   # noqa: E731
    inits = {"w1": w(4, 2, 3, 3), "b1": w(4), "w2": w(3, 16), "b2": w(3)}
    nodes = [("Conv", ["x", "w1", "b1"], ["c"], {"pads": [1, 1, 1, 1]}), ("Relu", ["c"], ["r"], {}),
             ("MaxPool", ["r"], ["p"], {"kernel_shape": [2, 2], "strides": [2, 2]}),
             ("Flatten", ["p"], ["f"], {}), ("Gemm", ["f", "w2", "b2"], ["z"], {"transB": 1}),
             ("Softmax", ["z"], ["y"], {})]

    def model(nodes, inits, out="y"):
        g = helper.make_graph([helper.make_node(op, i, o, **a) for op, i, o, a in nodes], "cnn",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 4, 4])],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, [1, 3])],
                              [numpy_helper.from_array(v, k) for k, v in inits.items()])
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
        m.ir_version = 8
        return m

    qdq_nodes, qinits = [], dict(inits)

    def qdq(value, scale, zp, axis=None, dtype=np.int8):
        qinits[f"{value}_s"], qinits[f"{value}_z"] = np.asarray(scale, np.float32), np.asarray(zp, dtype)
        kw = {} if axis is None else {"axis": axis}
        qdq_nodes.append(("QuantizeLinear", [value, f"{value}_s", f"{value}_z"], [f"{value}_q"], kw))
        qdq_nodes.append(("DequantizeLinear", [f"{value}_q", f"{value}_s", f"{value}_z"], [f"{value}_dq"], kw))
        return f"{value}_dq"

    dq = {"x": qdq("x", 0.02, 0)}
    for op, ins, outs, attrs in nodes:
        args = [qdq(i, np.abs(inits[i]).max(axis=tuple(range(1, inits[i].ndim))) / 127,
                    np.zeros(inits[i].shape[0], np.int8), 0) if i in ("w1", "w2") else dq.get(i, i) for i in ins]
        qdq_nodes.append((op, args, outs, attrs))
        dq[outs[0]] = qdq(outs[0], 1 / 256, -128) if op == "Softmax" else qdq(outs[0], 0.05, 3)
    qdq_nodes.append(("Identity", [dq["y"]], ["y_out"], {}))
    paths = {"onnx_cnn": tmp / "cnn.onnx", "onnx_qdq": tmp / "cnn_qdq.onnx"}
    onnx.save(model(nodes, inits), paths["onnx_cnn"])
    onnx.save(model(qdq_nodes, qinits, "y_out"), paths["onnx_qdq"])
    return paths


def _mutants(name: str, path: pathlib.Path, n: int) -> list[bytes]:
    data = path.read_bytes()
    return tflite_mutants(data, SEED, n) if path.suffix == ".tflite" else bytes_mutants(data, SEED, n)


# --- in-process checks ---------------------------------------------------------------------------

def _compile_and_run(path: pathlib.Path) -> None:
    """deploy up to the C compiler: import, passes, lowering, schedules, plan, C; then the reference."""
    from support import flows
    from microcompile.errors import UserError
    from microcompile.reference import interp
    from microcompile.target import load_board

    with tempfile.TemporaryDirectory() as tmp:
        try:
            compiled = flows.compile_model(path, load_board("mps2-an386"), pathlib.Path(tmp))
            interp.run(compiled.graph, model_inputs(compiled.graph, None))
        except UserError:
            pass   # e.g. unsupported after the passes: a clear error, as the CLI would show it


def _fuzz_models(sources, counts, tmp_path) -> dict[str, dict[str, int]]:
    tally = {}
    for name, (n, n_compile) in counts.items():
        if name not in sources:
            continue
        src = sources[name]
        codes = {0: 0, 2: 0}
        compiled = 0
        for i, data in enumerate(_mutants(name, src, n)):
            path = tmp_path / f"{name}-{i}{src.suffix}"
            path.write_bytes(data)
            p = run_cli_inprocess("inspect", path)
            rc = p.returncode
            assert rc in (0, 2), f"mutant {i} of {name} (mutants.py, seed {SEED}): exit {rc}\n{p.stderr}"
            codes[rc] += 1
            if rc == 0 and compiled < n_compile:
                _compile_and_run(path)
                compiled += 1
            path.unlink()
        tally[name] = {"mutants": n, "exit 0": codes[0], "exit 2": codes[2], "compiled": compiled}
    print("\nfuzz tally:", tally)
    return tally


def test_model_mutants_under_inspect_and_compile(sources, tmp_path):
    tally = _fuzz_models(sources, COUNTS, tmp_path)
    for name in ("digits", "digits_int8", "onnx_cnn", "onnx_qdq"):
        t = tally[name]
        assert t["exit 0"] and t["exit 2"], f"{name}: the mutants must reach both outcomes, got {t}"


@pytest.mark.slow
def test_model_mutants_long_run(sources, tmp_path):
    _fuzz_models(sources, SLOW_COUNTS, tmp_path)


def test_model_mutants_under_deploy_on_the_host(sources, tmp_path):
    """A sample through the whole CLI: the C compiler, the native run, the comparison."""
    seen = 0
    for name in ("digits_int8", "digits"):
        for i, data in enumerate(_mutants(name, sources[name], 40)):
            if seen >= DEPLOY_SAMPLE:
                return
            path = tmp_path / f"{name}-{i}.tflite"
            path.write_bytes(data)
            if run_cli_inprocess("inspect", path).returncode != 0:
                continue   # the deploy sample is spent on mutants that import
            p = run_cli("deploy", path, "--board=host", "-o", tmp_path / f"out-{name}-{i}")
            assert p.returncode in (0, 1, 2), f"mutant {i} of {name}: exit {p.returncode}\n{p.stderr}"
            seen += 1
    assert seen == DEPLOY_SAMPLE


# --- .npy mutants --------------------------------------------------------------------------------

def _fuzz_arrays(sources, n: int, tmp_path) -> dict[str, int]:
    from support import flows
    from microcompile.errors import UserError
    from microcompile.frontend import load_model
    from microcompile.quantization import load_calibration

    graph = load_model(sources["digits"])
    good = tmp_path / "good.npy"
    np.save(good, np.random.default_rng(SEED).random((1, 64), np.float32))
    batch = tmp_path / "batch.npz"
    np.savez(batch, pixels=np.random.default_rng(SEED).random((3, 64), np.float32))
    tally = {"input ok": 0, "input refused": 0, "calibration ok": 0, "calibration refused": 0}
    for src, kind in ((good, "input"), (batch, "calibration")):
        for i, data in enumerate(bytes_mutants(src.read_bytes(), SEED, n, hot=128, hot_share=0.7)):
            path = tmp_path / f"m{i}{src.suffix}"
            path.write_bytes(data)
            try:
                if kind == "input":
                    model_inputs(graph, path)
                else:
                    load_calibration(path, graph)
                tally[f"{kind} ok"] += 1
            except UserError as e:
                assert "allow_pickle" not in str(e), e
                tally[f"{kind} refused"] += 1
    print("\nnpy fuzz tally:", tally)
    return tally


def test_npy_mutants_as_input_and_calibration(sources, tmp_path):
    tally = _fuzz_arrays(sources, NPY_COUNT, tmp_path)
    assert all(tally.values()), tally


@pytest.mark.slow
def test_npy_mutants_long_run(sources, tmp_path):
    _fuzz_arrays(sources, SLOW_NPY_COUNT, tmp_path)


def test_npy_mutants_through_the_cli(sources, tmp_path):
    good = tmp_path / "x.npy"
    np.save(good, np.random.default_rng(SEED).random((1, 64), np.float32))
    for i, data in enumerate(bytes_mutants(good.read_bytes(), SEED + 1, 3, hot=128, hot_share=1.0)):
        bad = tmp_path / f"m{i}.npy"
        bad.write_bytes(data)
        p = run_cli("deploy", sources["digits"], "--board=host", "--input", bad, "-o", tmp_path / "out")
        assert p.returncode in (0, 1, 2), p.stderr
