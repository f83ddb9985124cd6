"""Test-only helpers: a trivial memory planner, the compile-everything pipeline for one
single-op graph, and a host-gcc harness that runs many generated models in ONE program.

Each model is compiled as its own translation unit that includes its model.c and
model_weights.c with the global symbols (mc_model, mc_k<i>_...) renamed by #define (which
reaches the weights' assembler symbols too), so any number of artifacts link into one
executable. The program runs model k on case_k.in
through the real runtime (mc_init / mc_input / mc_run / mc_output) and writes case_k.out.
"""

from __future__ import annotations

import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np


from support.op_cases import build_graph, random_inputs  # noqa: E402

from microcompile.codegen import emit_artifact  # noqa: E402
from microcompile.ir import NP_DTYPES, Graph, ops  # noqa: E402
from microcompile.lower import lower_graph  # noqa: E402
from microcompile.resources import resource_dir  # noqa: E402
from microcompile.schedule import default_schedule  # noqa: E402

CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-O1"]
RUNTIME = resource_dir("runtime_c")


class StubPlan:
    """Every activation and scratch region gets its own 16-byte-aligned slot (no reuse);
    view ops alias their input. Implements codegen's MemoryPlan protocol."""

    def __init__(self, g: Graph, scratch: dict[str, int]):
        self.offsets: dict[str, int] = {}
        alias: dict[str, str] = {}
        for n in g.nodes:
            if ops.get(n.op).is_view:
                alias[n.outputs[0]] = alias.get(n.inputs[0], n.inputs[0])
        end = 0
        names = list(g.inputs) + [o for n in g.nodes for o in n.outputs]
        for name in names:
            if name in alias or name in self.offsets:
                continue
            self.offsets[name] = end
            end += -(-g.tensors[name].nbytes // 16) * 16
        for node_name, size in scratch.items():
            self.offsets["scratch:" + node_name] = end
            end += -(-size // 16) * 16
        self.alias = alias
        self.arena_bytes = max(end, 16)
        from microcompile.memory.plan import plan_state
        self.state_offsets, self.state_bytes = plan_state(g)

    def offset(self, tensor_name: str) -> int:
        return self.offsets[self.alias.get(tensor_name, tensor_name)]

    def state_offset(self, tensor_name: str) -> int:
        return self.state_offsets[tensor_name]

    def scratch_offset(self, node_name: str) -> int:
        return self.offsets["scratch:" + node_name]


def compile_graph(g: Graph, out_dir: Path, target=None) -> dict:
    """lower -> default schedule -> plan (stub) -> emit; returns the manifest."""
    lowered = lower_graph(g, target)
    scheduled = [(n, *default_schedule(f, target)) for n, f in lowered]
    scratch = {n.name: f.scratch_bytes for n, f, _ in scheduled if f.scratch_bytes}
    plan = StubPlan(g, scratch)
    return emit_artifact(g, [(n, f) for n, f, _ in scheduled], plan, out_dir,
                         traces=[t for _, _, t in scheduled])


@dataclass
class HostCase:
    graph: Graph
    inputs: dict[str, np.ndarray]
    manifest: dict
    dir: Path
    outputs: dict[str, np.ndarray] = field(default_factory=dict)   # every graph output, after the run


_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mc_runtime.h"
#include "mc_platform.h"

/* The runtime's profiling path needs a cycle counter; the harness never profiles. */
uint32_t mc_platform_cycles(void) { return 0; }

%(externs)s
static const mc_model_t *const models[] = { %(models)s };
static uint8_t arena[%(arena)d] __attribute__((aligned(16)));

static void load(const char *path, void *dst, uint32_t bytes)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL || fread(dst, 1, bytes, f) != bytes) { fprintf(stderr, "read %%s\n", path); exit(1); }
    fclose(f);
}

int main(int argc, char **argv)
{
    char path[4096];
    uint32_t k, i;
    (void)argc;
    for (k = 0; k < sizeof models / sizeof models[0]; k++) {
        mc_ctx_t ctx;
        if (mc_init(&ctx, models[k], arena, sizeof arena) != MC_OK) return 2;
        memset(arena, 0x5a, sizeof arena);  /* stale bytes must not matter */
        for (i = 0; i < models[k]->num_inputs; i++) {
            snprintf(path, sizeof path, "%%s/case%%u/in%%u.bin", argv[1], (unsigned)k, (unsigned)i);
            load(path, mc_input(&ctx, i), models[k]->inputs[i].bytes);
        }
        mc_run(&ctx);
        for (i = 0; i < models[k]->num_outputs; i++) {
            snprintf(path, sizeof path, "%%s/case%%u/out%%u.bin", argv[1], (unsigned)k, (unsigned)i);
            FILE *f = fopen(path, "wb");
            fwrite(mc_output(&ctx, i), 1, models[k]->outputs[i].bytes, f);
            fclose(f);
        }
    }
    return 0;
}
"""


def weight_symbols(case_dir: Path) -> list[str]:
    """The global constant symbols a generated model defines (model_weights.h's externs)."""
    return re.findall(r"^extern const \w+ (\w+)\[", (Path(case_dir) / "model_weights.h").read_text(), re.M)


def _wrapper(k: int, case_dir: Path) -> str:
    """Compile case k with its globals renamed, so that many models link into one program."""
    renames = [f"#define mc_model mc_model_{k}"] + [f"#define {s} mc_case{k}_{s}" for s in weight_symbols(case_dir)]
    return "\n".join(renames + [f'#include "{case_dir}/model_weights.c"', f'#include "{case_dir}/model.c"', ""])


def _gcc(args: list[str], cwd: Path) -> None:
    r = subprocess.run(["gcc", *args], cwd=cwd, capture_output=True, text=True)
    if r.returncode:
        raise AssertionError(f"gcc {' '.join(args)} failed:\n{r.stderr}")


def run_on_host(graphs: list[Graph], work: Path, seed: int = 0) -> list[tuple[np.ndarray, HostCase]]:
    """Compile every graph, link them all into one program, run it; returns (output, case)."""
    cases = []
    for k, g in enumerate(graphs):
        d = work / f"case{k}"
        manifest = compile_graph(g, d)
        ins = random_inputs(g, seed + k)
        for i, name in enumerate(g.inputs):
            (d / f"in{i}.bin").write_bytes(np.ascontiguousarray(ins[name]).tobytes())
        cases.append(HostCase(g, ins, manifest, d))
    inc = ["-I", str(RUNTIME / "include")]
    for k, c in enumerate(cases):
        (work / f"wrap{k}.c").write_text(_wrapper(k, c.dir))
    main = _MAIN % {
        "externs": "\n".join(f"extern const mc_model_t mc_model_{k};" for k in range(len(cases))),
        "models": ", ".join(f"&mc_model_{k}" for k in range(len(cases))),
        "arena": max(c.manifest["arena_bytes"] for c in cases),
    }
    (work / "main.c").write_text(main)
    units = [f"wrap{k}.c" for k in range(len(cases))] + ["main.c", str(RUNTIME / "src" / "mc_runtime.c"),
                                                          *map(str, sorted((RUNTIME / "kernels").glob("*.c")))]
    # The assembler finds each model's model_weights.bin (.incbin) in its case directory.
    asm_inc = {f"wrap{k}.c": [f"-Wa,-I{c.dir}"] for k, c in enumerate(cases)}
    with ThreadPoolExecutor(8) as pool:
        list(pool.map(lambda u: _gcc([*CFLAGS, *inc, *asm_inc.get(u, []), "-I", str(work), "-c", u,
                                      "-o", f"{Path(u).stem}.o"], work), units))
    _gcc([*(f"{Path(u).stem}.o" for u in units), "-lm", "-o", "prog"], work)
    subprocess.run([str(work / "prog"), str(work)], check=True, cwd=work)
    results = []
    for c in cases:
        for i, name in enumerate(c.graph.outputs):
            t = c.graph.tensors[name]
            c.outputs[name] = np.frombuffer((c.dir / f"out{i}.bin").read_bytes(), NP_DTYPES[t.dtype]).reshape(t.shape)
        results.append((c.outputs[c.graph.outputs[0]], c))
    return results


def build(case: dict) -> Graph:
    return build_graph(case)
