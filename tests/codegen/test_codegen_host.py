"""Generated C, compiled with the host gcc (-Wall -Wextra -Werror) and run, against the numpy
interpreter: every op family and dtype in ONE program, plus a multi-kernel model with a view.
Also: golden C snapshot, determinism, a cross-compile for Cortex-M4, and the manifest."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support.c_harness import RUNTIME, compile_graph, run_on_host
from support.op_cases import build_graph, cases

from support.lower_cases import hybrid_conv_graph  # noqa: E402
from microcompile.codegen.c_emitter import float_literal
from microcompile.escape import c_string
from microcompile.ir import Graph, Node, QuantParams, Tensor, verify
from microcompile.ir.compare import compare
from microcompile.reference import interp

KERNEL_OPS = ("conv2d", "depthwise_conv2d", "fully_connected", "average_pool2d", "add", "softmax",
              "relu", "relu6", "relu_n1_to_1")
PER_OP = {"int8": 16, "float32": 8}
GOLDEN = Path(__file__).parent / "golden" / "conv2d_int8_model.c"


def _matches(out, ref) -> bool:
    """int8 byte-equal, float32 within ir/compare.py's tolerance (the one definition)."""
    return compare(np.asarray(out), np.asarray(ref).reshape(np.shape(out))).equal


def _chain_graph() -> Graph:
    """conv2d -> reshape (a view) -> fully_connected -> softmax, int8."""
    rng = np.random.default_rng(7)

    def q(s, zp):
        return QuantParams((float(np.float32(s)),), (zp,))

    t = {
        "x": Tensor("x", (1, 6, 6, 2), "int8", q(0.05, 3)),
        "w1": Tensor("w1", (4, 3, 3, 2), "int8", QuantParams((0.01, 0.02, 0.015, 0.03), (0,) * 4, 0),
                     data=rng.integers(-127, 128, (4, 3, 3, 2), dtype=np.int8)),
        "b1": Tensor("b1", (4,), "int32", None, data=rng.integers(-500, 500, 4, dtype=np.int32)),
        "c1": Tensor("c1", (1, 3, 3, 4), "int8", q(0.08, -5)),
        "flat": Tensor("flat", (1, 36), "int8", q(0.08, -5)),
        "w2": Tensor("w2", (10, 36), "int8", q(0.01, 0), data=rng.integers(-127, 128, (10, 36), dtype=np.int8)),
        "logits": Tensor("logits", (1, 10), "int8", q(0.2, 10)),
        "probs": Tensor("probs", (1, 10), "int8", q(1 / 256, -128)),
    }
    nodes = (Node("conv2d", "conv1", ("x", "w1", "b1"), ("c1",),
                  {"stride": (2, 2), "padding": (1, 1, 0, 0), "activation": "RELU"}),
             Node("reshape", "flatten", ("c1",), ("flat",), {"shape": (1, 36)}),
             Node("fully_connected", "fc", ("flat", "w2", ""), ("logits",), {}),
             Node("softmax", "prob", ("logits",), ("probs",), {"beta": 1.0}))
    return verify(Graph("chain", t, nodes, ("x",), ("probs",)))


def test_all_ops_on_host(tmp_path):
    graphs = [build_graph(c) for op in KERNEL_OPS for dt, n in PER_OP.items() for c in cases(op, dt, n, seed=21)]
    graphs += [_chain_graph(), hybrid_conv_graph(seed=1), hybrid_conv_graph(seed=2, padding="VALID")]
    failures = []
    for out, case in run_on_host(graphs, tmp_path):
        ref = interp.run(case.graph, case.inputs)[case.graph.outputs[0]]
        if not _matches(out, ref):
            failures.append(f"{case.graph.name}: max diff {np.abs(out.astype(float) - ref).max()}")
    assert not failures, "\n".join(failures)


def _small_conv() -> Graph:
    case = dict(cases("conv2d", "int8", 1, seed=0)[0], batch=1, hw=3, cin=2, cout=2, kernel=3, stride=1,
                dilation=1, padding="SAME", activation="RELU", per_channel=True)
    return build_graph(case)


def test_golden_conv2d(tmp_path):
    compile_graph(_small_conv(), tmp_path)
    text = (tmp_path / "model.c").read_text()
    if os.environ.get("MC_UPDATE_GOLDEN"):
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text(), "generated C changed; MC_UPDATE_GOLDEN=1 regenerates the snapshot"


def test_emission_is_deterministic(tmp_path):
    g = _chain_graph()
    compile_graph(g, tmp_path / "a")
    compile_graph(g, tmp_path / "b")
    for name in ("model.c", "model.h", "model_weights.c", "model_weights.h", "model_weights.bin", "manifest.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_manifest(tmp_path):
    g = _chain_graph()
    m = compile_graph(g, tmp_path)
    assert json.loads((tmp_path / "manifest.json").read_text()) == m
    assert m["schema_version"] == 3 and m["model"] == "chain"
    assert [k["name"] for k in m["kernels"]] == ["k0_conv2d", "k1_fully_connected", "k2_softmax"]
    assert [k["layer"] for k in m["kernels"]] == ["conv1", "fc", "prob"]
    assert m["kernels"][0]["macs"] == 3 * 3 * 4 * 3 * 3 * 2
    assert m["inputs"][0] == {"name": "x", "shape": [1, 6, 6, 2], "dtype": "int8", "scale": float(np.float32(0.05)),
                              "zero_point": 3, "offset": 0, "bytes": 72}
    assert m["outputs"][0]["dtype"] == "int8" and m["outputs"][0]["bytes"] == 10
    # weights: conv filter (int8: no DSP, so no int16 copy) + bias + mult + shift, fc weights + bias,
    # the softmax's exp table (256 int32)
    assert m["weights_bytes"] == 72 + 16 + 16 + 16 + 360 + 40 + 1024
    assert m["constants"][0] == {"symbol": "mc_k0_conv2d_weights", "bytes": 72}
    assert (tmp_path / "model_weights.bin").stat().st_size == m["weights_bytes"]
    assert "#define MC_MODEL_ARENA_BYTES" in (tmp_path / "model.h").read_text()


@pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="arm-none-eabi-gcc not installed")
def test_cross_compiles_for_cortex_m4(tmp_path):
    graphs = [_chain_graph()] + [build_graph(c) for op in KERNEL_OPS for c in cases(op, "float32", 1, seed=4)]
    flags = ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16", "-std=c99",
             "-Wall", "-Wextra", "-Werror", "-O2", "-I", str(RUNTIME / "include")]
    for k, g in enumerate(graphs):
        d = tmp_path / f"m{k}"
        compile_graph(g, d)
        for src in ("model.c", "model_weights.c"):
            r = subprocess.run(["arm-none-eabi-gcc", *flags, f"-Wa,-I{d}", "-c", str(d / src), "-o", str(d / (src + ".o"))],
                               capture_output=True, text=True)
            assert r.returncode == 0, r.stderr


def test_literals():
    assert float_literal(1.0) == "1.0f" and float_literal(0.1) == "0.100000001f"
    assert np.float32(float(float_literal(0.1)[:-1])) == np.float32(0.1)
    assert c_string('a"b\\c\u00e9') == '"a\\042b\\134c\\303\\251"'
