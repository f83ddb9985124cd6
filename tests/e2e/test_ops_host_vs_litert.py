"""Per op, through the whole compiler, against TFLite's reference kernels.

Each case of the declarative plans in tests/ir/op_cases.py becomes a single-op .tflite
(the project's writer), is read back by the TFLite frontend, optimized, lowered, scheduled
and emitted as C, compiled with the host gcc (-Wall -Wextra -Werror) and run. The output
is compared with LiteRT BUILTIN_REF directly: int8 and int16 byte-equal, float32 1e-5 relative.
All cases link into one program, so this stays fast.
"""

import pathlib
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent

from support.c_harness import run_on_host  # noqa: E402
from litert_ref import run_reference  # noqa: E402
from support.op_cases import PLANS, PLANS16, build_graph, cases  # noqa: E402

from microcompile.frontend.tflite.reader import load_tflite  # noqa: E402
from microcompile.frontend.tflite.writer import write_tflite  # noqa: E402
from microcompile.ir.compare import compare  # noqa: E402
from microcompile.transform import pipeline  # noqa: E402

PER_OP = {"int8": 24, "float32": 12}
KERNEL_OPS = [op for op in PLANS if op != "reshape"] + ["reshape"]
INT16_PER_OP = 12   # 16x8: int16 activations (the portable C kernels; QEMU tests run the DSP ones)


def _plan():
    plan = [c for op in KERNEL_OPS for dtype, n in PER_OP.items() for c in cases(op, dtype, n, seed=99)]
    plan += [c for op in PLANS16 for c in cases(op, "int16", INT16_PER_OP, seed=99)]
    return plan + cases("conv2d", "hybrid", 12, seed=99)


@pytest.mark.heavy
@pytest.mark.slow      # about 2 minutes; the default run checks every op on the Cortex-M twins (test_ops_on_cortex_m.py)
def test_every_op_compiled_for_host_matches_litert(tmp_path):
    plan = _plan()
    models = [write_tflite(build_graph(c)) for c in plan]
    graphs = [pipeline.run(load_tflite(m, name=f"case{k}")) for k, m in enumerate(models)]
    failures, counted = [], {}
    for (out, case), model, c in zip(run_on_host(graphs, tmp_path, seed=5), models, plan):
        ref = run_reference(model, case.inputs)
        counted[c["op"], c["dtype"]] = counted.get((c["op"], c["dtype"]), 0) + 1
        for name, got in case.outputs.items():   # several for split / unpack
            result = compare(got, ref[name].reshape(got.shape))
            if not result.equal:
                failures.append(f"{c['op']}-{c['dtype']}-{c['index']} {name} {c}: {result}")
    assert not failures, f"{len(failures)} of {len(plan)} cases differ from LiteRT:\n" + "\n".join(failures)
    # The plan really covered every op in every dtype.
    assert all(counted.get((op, dt)) == n for op in KERNEL_OPS for dt, n in PER_OP.items())
    assert all(counted.get((op, "int16")) == INT16_PER_OP for op in PLANS16)


@pytest.mark.parametrize("dtype", ["int8", "float32"])
@pytest.mark.parametrize("const_shape", [(1, 2, 3), (3,)])
def test_add_with_a_constant_operand(tmp_path, dtype, const_shape):
    """Regression: a constant ADD operand must live in flash (it has no arena slot)."""
    from microcompile.ir import Graph, Node, QuantParams, Tensor, verify

    rng = np.random.default_rng(3)
    q = (lambda s, z: QuantParams((s,), (z,))) if dtype == "int8" else (lambda s, z: None)
    data = (rng.integers(-128, 128, const_shape).astype(np.int8) if dtype == "int8"
            else rng.standard_normal(const_shape).astype(np.float32))
    t = {"x": Tensor("x", (1, 2, 3), dtype, q(0.1, 2)), "c": Tensor("c", const_shape, dtype, q(0.05, -3), data=data),
         "y": Tensor("y", (1, 2, 3), dtype, q(0.2, 1))}
    graph = verify(Graph("add_const", t, (Node("add", "add", ("x", "c"), ("y",), {"activation": "NONE"}),),
                         ("x",), ("y",)))
    model = write_tflite(graph)
    (out, case), = run_on_host([pipeline.run(load_tflite(model))], tmp_path)
    assert compare(out, run_reference(model, case.inputs)["y"]).equal
