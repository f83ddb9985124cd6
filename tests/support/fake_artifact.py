"""A tiny hand-written artifact that follows the C contract (manifest + model.c), for project tests."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from microcompile.codegen.manifest import SCHEMA_VERSION

MODEL_H = """\
#ifndef MODEL_H
#define MODEL_H
#include "mc_runtime.h"
#define MC_MODEL_ARENA_BYTES 48
extern const mc_model_t mc_model;
#endif
"""

# k0: out0[i] = in[i] + 1 (int8, wrapping); k1: out1 = {sum(in) as float, weights[0] / 4}
MODEL_C = """\
#include "model.h"
#include "model_weights.h"

static void k0_add_one(uint8_t *arena)
{
    const int8_t *x = (const int8_t *)(arena + 0);
    int8_t *y = (int8_t *)(arena + 16);
    uint32_t i;
    for (i = 0; i < 16; i++)
        y[i] = (int8_t)(x[i] + 1);
}

static void k1_sum(uint8_t *arena)
{
    const int8_t *x = (const int8_t *)(arena + 0);
    float *y = (float *)(arena + 32);
    int32_t acc = 0;
    uint32_t i;
    for (i = 0; i < 16; i++)
        acc += x[i];
    y[0] = (float)acc;
    y[1] = (float)mc_weights[0] / 4.0f;
}

static const int32_t in_shape[4] = {1, 4, 4, 1};
static const int32_t out0_shape[2] = {1, 16};
static const int32_t out1_shape[2] = {1, 2};
static const mc_tensor_t inputs[1] = {{"input_1", MC_INT8, 0, 16, 4, in_shape, 0.5f, -3}};
static const mc_tensor_t outputs[2] = {
    {"Identity", MC_INT8, 16, 16, 2, out0_shape, 0.5f, -2},
    {"Sum", MC_FLOAT32, 32, 8, 2, out1_shape, 0.0f, 0},
};
static const mc_kernel_t kernels[2] = {
    {"k0_add_one", "add", 16, k0_add_one},
    {"k1_sum", "sum", 16, k1_sum},
};
const mc_model_t mc_model = {48, 1, inputs, 2, outputs, 2, kernels, 0, 0, 0};
"""


def weights_c(n: int) -> str:
    return (f'#include "model_weights.h"\n'
            f"const int8_t mc_weights[{n}] = {{10, 2, 3}};\n")


def write_artifact(root: Path, weights_bytes: int = 3) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "model.h").write_text(MODEL_H)
    (root / "model.c").write_text(MODEL_C)
    (root / "model_weights.h").write_text(
        f"#ifndef MODEL_WEIGHTS_H\n#define MODEL_WEIGHTS_H\n#include <stdint.h>\n"
        f"extern const int8_t mc_weights[{weights_bytes}];\n#endif\n")
    (root / "model_weights.c").write_text(weights_c(weights_bytes))
    manifest = {
        "schema_version": SCHEMA_VERSION, "model": "fake_add_one", "arena_bytes": 48, "weights_bytes": weights_bytes,
        "sources": ["model.c", "model_weights.c"], "headers": ["model.h", "model_weights.h"],
        "inputs": [{"name": "input_1", "shape": [1, 4, 4, 1], "dtype": "int8", "scale": 0.5,
                    "zero_point": -3, "offset": 0, "bytes": 16}],
        "outputs": [{"name": "Identity", "shape": [1, 16], "dtype": "int8", "scale": 0.5,
                     "zero_point": -2, "offset": 16, "bytes": 16},
                    {"name": "Sum", "shape": [1, 2], "dtype": "float32", "scale": 0.0,
                     "zero_point": 0, "offset": 32, "bytes": 8}],
        "kernels": [{"name": "k0_add_one", "layer": "l0", "op": "add", "macs": 16, "trace": []},
                    {"name": "k1_sum", "layer": "l1", "op": "sum", "macs": 16, "trace": []}],
    }
    (root / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return root


def benchmark_input(shape) -> np.ndarray:
    """BENCHMARK.md's deterministic int8 input: x[i] = (i*7 + 3) % 256 - 128."""
    n = int(np.prod(shape))
    return ((np.arange(n) * 7 + 3) % 256 - 128).astype(np.int8).reshape(shape)


def expected_outputs(x: np.ndarray) -> list[np.ndarray]:
    out0 = (x.astype(np.int16) + 1).astype(np.int8).reshape(1, 16)
    out1 = np.array([[float(x.astype(np.int32).sum()), 10 / 4]], dtype=np.float32)
    return [out0, out1]


needs_arm = pytest.mark.skipif(shutil.which("arm-none-eabi-gcc") is None, reason="arm-none-eabi-gcc not installed")
needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-arm") is None, reason="qemu-system-arm not installed")
