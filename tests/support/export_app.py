"""A user application that runs several exported models in one program (tests/export).

`app_sources` writes main.c (or main.cpp) and app_io.c: main initializes each model with its
own arena, quantizes float inputs with mc_quantize_f32, runs it, and prints every output's
bytes and their mc_dequantize_f32 floats as hex lines; `parse` reads them back. app_io.c
prints with stdio on the host and through the exported board support (mc_platform_*)
under APP_BSP."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import microcompile as mc
from microcompile.api.tensors import dequantized
from microcompile.project.generate import QEMU_FLAGS

WARN = "-Wall -Wextra -Werror"

APP_IO = r"""
#include <stddef.h>
#include <string.h>
#ifdef APP_BSP
#include "mc_platform.h"
void app_init(void) { mc_platform_init(); }
void app_out(const char *s) { mc_platform_uart_write(s, strlen(s)); }
void app_exit(int code) { mc_platform_exit(code); }
#else
#include <stdio.h>
#include <stdlib.h>
void app_init(void) {}
void app_out(const char *s) { fputs(s, stdout); }
void app_exit(int code) { fflush(stdout); exit(code); }
#endif
"""


def _floats(x: np.ndarray) -> str:
    return ", ".join(float(v).hex() + "f" for v in np.asarray(x, np.float32).reshape(-1))


def main_source(models: list[tuple[str, list[np.ndarray], list[int]]]) -> str:
    """models: (name, float inputs, output element counts)."""
    lines = ["/* Runs several exported models in one program. */", "#include <stdint.h>", "#include <string.h>"]
    lines += [f'#include "{name}.h"' for name, _, _ in models]
    lines += ['#ifdef __cplusplus', 'extern "C" {', '#endif',
              "void app_init(void);", "void app_out(const char *s);", "void app_exit(int code);",
              '#ifdef __cplusplus', '}', '#endif',
              "static void print_hex(const char *tag, const void *p, uint32_t n)", "{",
              '    static const char digits[] = "0123456789abcdef";',
              "    const unsigned char *b = (const unsigned char *)p;", "    char pair[3] = {0, 0, 0};",
              "    app_out(tag);", '    app_out(" ");', "    while (n--) {", "        pair[0] = digits[*b >> 4];",
              "        pair[1] = digits[*b++ & 15];", "        app_out(pair);", "    }", '    app_out("\\n");', "}"]
    biggest = max(n for _, _, outs in models for n in outs)
    lines.append(f"static float deq[{biggest}];")
    for name, xs, _ in models:
        up = name.upper()
        lines.append(f"static uint8_t {name}_arena[{up}_ARENA_BYTES] __attribute__((aligned(MC_ARENA_ALIGN)));")
        for i, x in enumerate(xs):
            lines.append(f"static const float {name}_x{i}[{x.size}] = {{{_floats(x)}}};")
    lines += ["int main(void)", "{", "    mc_ctx_t ctx;", "    app_init();"]
    for name, xs, outs in models:
        lines += [f"    if (mc_init(&ctx, &{name}_model, {name}_arena, sizeof {name}_arena) != MC_OK)",
                  "        app_exit(1);"]
        for i in range(len(xs)):
            lines += [f"    if (mc_quantize_f32(&{name}_model.inputs[{i}], {name}_x{i}, mc_input(&ctx, {i})) != MC_OK)",
                      "        app_exit(1);"]
        lines.append("    mc_run(&ctx);")
        for o in range(len(outs)):
            up = name.upper()
            lines += [f'    print_hex("{name}.out{o}", mc_output(&ctx, {o}), {up}_OUTPUT{o}_BYTES);',
                      f"    if (mc_dequantize_f32(&{name}_model.outputs[{o}], mc_output(&ctx, {o}), deq) == MC_OK)",
                      f'        print_hex("{name}.deq{o}", deq, {outs[o]} * sizeof(float));']
    lines += ["    app_exit(0);", "    return 0;", "}", ""]
    return "\n".join(lines)


def app_sources(directory: Path, models, cxx: bool = False) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    main = directory / ("main.cpp" if cxx else "main.c")
    main.write_text(main_source(models))
    io = directory / "app_io.c"
    io.write_text(APP_IO)
    return [main, io]


def parse(text: str) -> dict[str, bytes]:
    out = {}
    for line in text.splitlines():
        parts = line.strip().split(" ")
        if len(parts) == 2 and "." in parts[0]:
            out[parts[0]] = bytes.fromhex(parts[1])
    return out


M4 = "mps2-an386"


def _tools_env() -> dict:
    """cmake and ninja from the test extras (the venv's bin), then the PATH."""
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    return env


def _inputs(cm, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    xs = []
    for spec in cm.inputs:
        if spec.dtype in ("int8", "int16") and spec.scale:
            lo, hi = (-128, 127) if spec.dtype == "int8" else (-32768, 32767)
            xs.append(rng.uniform((lo - spec.zero_point) * spec.scale, (hi - spec.zero_point) * spec.scale,
                                  spec.shape).astype(np.float32))
        else:
            xs.append(rng.uniform(0, 1, spec.shape).astype(np.float32))
    return xs


class Compiled:
    def __init__(self, sources, board: str):
        self.models = [(name, mc.compile(src, board)) for name, src in sources]
        self.inputs = {name: _inputs(cm, k) for k, (name, cm) in enumerate(self.models)}

    def app_models(self):
        return [(name, self.inputs[name], [int(np.prod(s.shape)) for s in cm.outputs]) for name, cm in self.models]

    def check(self, stdout: str) -> None:
        got = parse(stdout)
        for name, cm in self.models:
            ref = cm.reference(self.inputs[name])
            for o, (spec, want) in enumerate(zip(cm.outputs, ref)):
                raw = np.frombuffer(got[f"{name}.out{o}"], want.dtype).reshape(want.shape)
                deq = np.frombuffer(got[f"{name}.deq{o}"], np.float32).reshape(want.shape)
                if want.dtype == np.float32:
                    np.testing.assert_allclose(raw, want, rtol=0, atol=1e-5 * max(np.abs(want).max(), 1e-30))
                else:
                    assert np.array_equal(raw, want), f"{name} output {o}: {raw} != {want}"
                    assert np.array_equal(deq.view(np.int32),
                                          dequantized(cm.graph, spec.name, want).view(np.int32)), name


def run(cmd, cwd=None, timeout=600) -> subprocess.CompletedProcess:
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                       env=_tools_env())
    assert p.returncode == 0, f"{cmd}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}"
    return p


def qemu(elf: Path) -> str:
    cmd = ["qemu-system-arm", "-machine", M4, "-cpu", "cortex-m4", *QEMU_FLAGS.split(), "-kernel", str(elf)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p
    return p.stdout
