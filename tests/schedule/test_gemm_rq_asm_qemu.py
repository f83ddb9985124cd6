"""The assembly column loop of mc_gemm_p4_rq_dsp_s16 (k a multiple of 8) on QEMU mps2-an386:
pointwise and 3x3 convolutions whose panels fill one, two and three record chunks (8 panels
each) and end in a partial panel, next to ones it leaves to the C loop (k not a multiple of
8), all byte-equal to the reference interpreter, each layer's output compared."""

from __future__ import annotations

import pytest

from support import flows
from microcompile.frontend.tflite import writer as tflite_writer
from microcompile.tir.nodes import Call, walk
from support import multi_op_models as M


def _model():
    m = M._Model("rq_asm_float32", seed=11)
    x = m.input("x", (1, 5, 4, 8))
    a = m.conv(x, 40, 1, "pw40", act="RELU")          # k 8, m 40: a chunk of 8 panels and 2 more
    b = m.conv(a, 70, 1, "pw70")                      # k 40, m 70: 17 panels (3 chunks) + 2 rows
    c = m.conv(b, 6, 3, "c3x3")                       # k 630 (not a multiple of 8): the C loop
    d = m.conv(a, 6, 3, "c3x3b", act="RELU")          # k 360, m 6: one panel + a partial one
    return M.quantize_graph(m.graph([a, b, c, d]), "rq_asm_int8")


@pytest.mark.qemu
def test_the_assembly_column_loop_is_bit_exact(tmp_path):
    path = tmp_path / "rq_asm_int8.tflite"
    path.write_bytes(tflite_writer.write_tflite(_model()))
    result = flows.deploy(path, "mps2-an386", tmp_path / "p", emulate=True, progress=lambda s: None)
    kernels = [f for _, f, _ in result.compiled.kernels]
    calls = {c.name for f in kernels for c in walk(f.body) if isinstance(c, Call)}
    assert "mc_gemm_p4_rq_dsp_s16" in calls
    assert result.report["verified"], result.report["outputs"]
    assert set(result.report["outputs"]) == {"pw40", "pw70", "c3x3", "c3x3b"}
