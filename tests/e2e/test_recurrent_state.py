"""Recurrent state on the device: it lives in the state buffer (not the arena), carries over
from one mc_run to the next as LiteRT's variable tensors do from one invoke to the next, and
mc_reset_state starts over. Host gcc, the generated C and the real runtime, against LiteRT."""

from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent

from support.c_harness import CFLAGS, RUNTIME, compile_graph  # noqa: E402
from litert_ref import make_interpreter  # noqa: E402
from support.op_cases import build_graph, cases, random_inputs  # noqa: E402

from microcompile.frontend.tflite.writer import write_tflite  # noqa: E402
from microcompile.frontend import load_model

STEPS = 3

_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include "mc_runtime.h"
#include "model.h"

uint32_t mc_platform_cycles(void) { return 0; }
static uint8_t arena[MC_MODEL_ARENA_BYTES + 16] __attribute__((aligned(16)));

static void io(const char *mode, const char *path, void *p, uint32_t n)
{
    FILE *f = fopen(path, mode);
    if (f == NULL || (mode[0] == 'r' ? fread(p, 1, n, f) : fwrite(p, 1, n, f)) != n) exit(1);
    fclose(f);
}

int main(void)
{
    mc_ctx_t ctx;
    char path[64];
    int k;
    if (mc_init(&ctx, &mc_model, arena, sizeof arena) != MC_OK) return 2;
    /* STEPS inferences in a row (the state carries over), then one after a reset */
    for (k = 0; k <= %(steps)d; k++) {
        if (k == %(steps)d) mc_reset_state(&ctx);
        snprintf(path, sizeof path, "in%%d.bin", k %% %(steps)d);
        io("rb", path, mc_input(&ctx, 0), mc_model.inputs[0].bytes);
        mc_run(&ctx);
        snprintf(path, sizeof path, "out%%d.bin", k);
        io("wb", path, mc_output(&ctx, 0), mc_model.outputs[0].bytes);
    }
    return 0;
}
"""


@pytest.mark.parametrize("op, dtype", [("lstm", "int8"), ("lstm", "float32"), ("svdf", "int8"), ("svdf", "float32")])
def test_state_persists_between_runs_and_resets(op, dtype, tmp_path):
    case = cases(op, dtype, 1, seed=31)[0]
    g = build_graph(dict(case, batch=2, units=4, memory=3, rank=1) if op == "svdf"
                    else dict(case, time=4, units=6, batch=2))
    manifest = compile_graph(g, tmp_path / "model")
    assert manifest["state_bytes"] >= sum(t.nbytes for t in g.tensors.values() if t.variable) > 0
    model_c = (tmp_path / "model" / "model.c").read_text()
    assert "static uint8_t mc_state[" in model_c
    inputs = [random_inputs(g, 50 + k)[g.inputs[0]] for k in range(STEPS)]
    for k, x in enumerate(inputs):
        (tmp_path / f"in{k}.bin").write_bytes(np.ascontiguousarray(x).tobytes())
    (tmp_path / "main.c").write_text(_MAIN % {"steps": STEPS})
    srcs = ["main.c", "model/model.c", "model/model_weights.c", str(RUNTIME / "src" / "mc_runtime.c"),
            str(RUNTIME / "kernels" / "mc_recurrent.c")]
    subprocess.run(["gcc", *CFLAGS, "-I", str(RUNTIME / "include"), "-I", "model", *srcs, "-lm", "-o", "prog"],
                   cwd=tmp_path, check=True)
    subprocess.run([str(tmp_path / "prog")], cwd=tmp_path, check=True)
    out = g.tensors[g.outputs[0]]
    device = [np.fromfile(tmp_path / f"out{k}.bin", out.data.dtype if out.data is not None else
                          {"int8": np.int8, "float32": np.float32}[out.dtype]).reshape(out.shape)
              for k in range(STEPS + 1)]
    model = write_tflite(g)
    li = make_interpreter(model)
    index = li.get_input_details()[0]["index"]
    carried_over = False
    for k, x in enumerate(inputs):
        li.set_tensor(index, x)
        li.invoke()
        ref = li.get_tensor(li.get_output_details()[0]["index"])
        fresh = make_interpreter(model)
        fresh.set_tensor(index, x)
        fresh.invoke()
        carried_over |= not np.array_equal(ref, fresh.get_tensor(fresh.get_output_details()[0]["index"]))
        if dtype == "int8":
            assert np.array_equal(device[k], ref), f"inference {k}"
        else:
            np.testing.assert_allclose(device[k], ref, rtol=1e-5, atol=1e-6 * float(np.abs(ref).max()))
    assert carried_over, "the case does not show the state (LiteRT gives the fresh-state outputs)"
    np.testing.assert_array_equal(device[STEPS], device[0])   # after mc_reset_state: a new sequence


def test_agent_runs_each_inference_from_the_initial_state(tmp_path):
    """The host agent (run --repeat) compares every sample with the interpreter's single
    inference, so every RUN starts from the initial state: three runs of the same input give the
    same, verified output (the SVDF keyword model's state would change the second one)."""
    from support import flows

    model = HERE.parent / "fixtures" / "corpus" / "svdf_kws_int8.tflite"
    g = load_model(model)
    x = random_inputs(g, 7)[g.inputs[0]]
    np.save(tmp_path / "x.npy", np.stack([x] * STEPS))
    result = flows.run(model, "host", tmp_path / "p", input_path=tmp_path / "x.npy", repeat=STEPS,
                              progress=lambda s: None)
    assert result.report["verified"], result.report
    out = result.outputs[g.outputs[0]]
    assert all(np.array_equal(out[k], out[0]) for k in range(STEPS))
