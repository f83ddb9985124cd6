"""mc_quantize_f32 / mc_dequantize_f32 (runtime_c/src/mc_runtime.c), compiled on the host,
against microcompile's Python quantize_array / dequantize_array (what the reference
interpreter and the agent use): equal on every value, ties, saturation, NaN and infinities
included, for int8 and int16 and random scales and zero points. The weak default
mc_platform_cycles links when the application defines none, and yields to one that does."""

from __future__ import annotations

import subprocess

import numpy as np
import pytest

from microcompile.quantization.ptq import dequantize_array, quantize_array
from microcompile.ir.graph import QuantParams
from microcompile.resources import resource_dir

PROGRAM = r"""
#include <stdio.h>
#include <stdlib.h>
#include "mc_runtime.h"
#include "mc_platform.h"

/* argv: dtype(0 int8, 3 int16) scale zero_point n; stdin: n floats then n ints; prints
 * the quantized ints then the dequantized floats (as bits). */
int main(int argc, char **argv)
{
    mc_tensor_t t = {"x", (mc_dtype_t)atoi(argv[1]), 0, 0, 0, 0, strtof(argv[2], 0), atoi(argv[3])};
    unsigned n = (unsigned)atoi(argv[4]), i;
    unsigned size = t.dtype == MC_INT8 ? 1u : 2u;
    (void)argc;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    void *q = malloc(n * size), *r = malloc(n * size);
    t.bytes = n * size;
    for (i = 0; i < n; i++)
        if (scanf("%a", &x[i]) != 1)
            return 3;
    for (i = 0; i < n; i++) {
        int v;
        if (scanf("%d", &v) != 1)
            return 3;
        if (size == 1)
            ((int8_t *)r)[i] = (int8_t)v;
        else
            ((int16_t *)r)[i] = (int16_t)v;
    }
    if (mc_quantize_f32(&t, x, q) != MC_OK || mc_dequantize_f32(&t, r, y) != MC_OK)
        return 4;
    for (i = 0; i < n; i++)
        printf("%d\n", size == 1 ? ((int8_t *)q)[i] : ((int16_t *)q)[i]);
    for (i = 0; i < n; i++)
        printf("%a\n", y[i]);
    t.dtype = MC_INT32;
    return mc_quantize_f32(&t, x, q) == MC_ERR_ARGS && mc_dequantize_f32(&t, r, y) == MC_ERR_ARGS
           && mc_platform_cycles() == CYCLES ? 0 : 5;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("quant")
    (tmp / "t.c").write_text(PROGRAM)
    runtime = resource_dir("runtime_c")
    exe = tmp / "t"
    subprocess.run(["gcc", "-O2", "-std=c99", "-Wall", "-Wextra", "-Werror", "-DCYCLES=0u",
                    f"-I{runtime / 'include'}", str(tmp / "t.c"), str(runtime / "src" / "mc_runtime.c"),
                    "-o", str(exe)], check=True)
    return exe


@pytest.mark.parametrize("dtype", ["int8", "int16"])
@pytest.mark.parametrize("seed", range(6))
def test_quantize_and_dequantize_equal_python(program, dtype, seed):
    rng = np.random.default_rng(seed)
    scale = np.float32(10.0 ** rng.uniform(-4, 1))
    zp = int(rng.integers(-128, 128)) if dtype == "int8" else 0
    q = QuantParams((float(scale),), (zp,))
    lo, hi = (-128, 127) if dtype == "int8" else (-32768, 32767)
    k = np.arange(-300, 300, dtype=np.float32)
    x = np.concatenate([
        rng.normal(0, float(scale) * (hi - lo) / 4, 2000).astype(np.float32),
        (k + np.float32(0.5)) * scale,                     # ties (as float32 can hold them)
        np.nextafter((k + np.float32(0.5)) * scale, np.float32(0)),
        np.array([0, -0.0, 1e30, -1e30, np.inf, -np.inf, 3e9, -3e9], np.float32)]).astype(np.float32)
    r = rng.integers(lo, hi + 1, x.size).astype(np.int8 if dtype == "int8" else np.int16)
    stdin = "\n".join(float(v).hex() for v in x) + "\n" + "\n".join(str(int(v)) for v in r) + "\n"
    out = subprocess.run([str(program), "0" if dtype == "int8" else "3", float(scale).hex(), str(zp), str(x.size)],
                         input=stdin, capture_output=True, text=True)
    assert out.returncode == 0, out
    lines = out.stdout.split()
    got_q = np.array([int(v) for v in lines[:x.size]])
    got_f = np.array([float.fromhex(v) for v in lines[x.size:]], np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        want_q = quantize_array(x, q, dtype).astype(np.int64)
    assert np.array_equal(got_q, want_q), np.flatnonzero(got_q != want_q)[:10]
    assert np.array_equal(got_f.view(np.int32), dequantize_array(r, q).view(np.int32))


def test_nan_quantizes_to_the_lowest_value(program):
    out = subprocess.run([str(program), "0", "0x1p-3", "5", "1"], input="nan\n7\n", capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.split()[0] == "-128"


def test_the_applications_cycle_counter_replaces_the_weak_default(tmp_path):
    (tmp_path / "t.c").write_text(PROGRAM)
    (tmp_path / "clock.c").write_text("#include <stdint.h>\nuint32_t mc_platform_cycles(void) { return 42u; }\n")
    runtime = resource_dir("runtime_c")
    subprocess.run(["gcc", "-O2", "-Wall", "-Werror", "-DCYCLES=42u", f"-I{runtime / 'include'}",
                    str(tmp_path / "t.c"), str(tmp_path / "clock.c"), str(runtime / "src" / "mc_runtime.c"),
                    "-o", str(tmp_path / "t")], check=True)
    out = subprocess.run([str(tmp_path / "t"), "0", "0x1p-3", "0", "1"], input="1\n1\n", capture_output=True, text=True)
    assert out.returncode == 0
