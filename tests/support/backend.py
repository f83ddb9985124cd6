"""A microcompile backend for `onnx.backend.test`: each model is imported, run through the
graph pipeline, lowered, scheduled and emitted as C, compiled with the host gcc and run.

`prepare` imports and compiles the graph in Python; a model microcompile refuses (any
microcompile UserError: an op, attribute, dtype or shape it does not handle) raises
`Refused`, a test failure naming the reason: every test this backend runs is one that
tests/onnx_backend/expected_pass.txt promises to pass.

Compiling one C program per test costs ~1 s of gcc; the suite has hundreds. So `HostRunner`
can `prefetch` many (model, inputs) pairs: it compiles all of them into ONE program (as
tests/codegen/c_harness.py does), runs it once, and caches the outputs by a hash of the model
and its inputs. `run` returns the cached outputs, or builds a one-model program on a miss.
A model whose C does not compile, or that crashes the program, is recorded as that model's
failure; the others still run.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import onnx
import onnx.version_converter
from onnx.backend.base import Backend, BackendRep

from support.c_harness import CFLAGS, RUNTIME, compile_graph, weight_symbols  # noqa: E402

from microcompile.errors import UserError  # noqa: E402
from microcompile.frontend.onnx import load_onnx  # noqa: E402
from microcompile.ir import NP_DTYPES, Graph  # noqa: E402
from microcompile.transform import pipeline  # noqa: E402

# ONNX element type -> numpy dtype we can hand back exactly (our int32 widens to int64).
_ONNX_OUT = {1: np.float32, 3: np.int8, 6: np.int32, 7: np.int64}

_MAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "mc_runtime.h"
#include "mc_platform.h"

uint32_t mc_platform_cycles(void) { return 0; }

%(externs)s
static const mc_model_t *const models[] = { %(models)s };
static const unsigned case_ids[] = { %(ids)s };   /* model k reads and writes case<case_ids[k]>/ */
static uint8_t arena[%(arena)d] __attribute__((aligned(16)));

static int io(const char *dir, unsigned k, const char *kind, unsigned i, void *buf, uint32_t bytes, int write)
{
    char path[4096];
    FILE *f;
    size_t done;
    snprintf(path, sizeof path, "%%s/case%%u/%%s%%u.bin", dir, k, kind, i);
    f = fopen(path, write ? "wb" : "rb");
    if (f == NULL) return 1;
    done = write ? fwrite(buf, 1, bytes, f) : fread(buf, 1, bytes, f);
    fclose(f);
    return done != bytes;
}

/* argv: work dir, then the indices of the models to run. Prints "done k" after each, so a
   crash is pinned on one model and the runner can resume after it. */
int main(int argc, char **argv)
{
    int a;
    uint32_t i;
    for (a = 2; a < argc; a++) {
        unsigned k = (unsigned)atoi(argv[a]);
        mc_ctx_t ctx;
        if (mc_init(&ctx, models[k], arena, sizeof arena) != MC_OK) return 2;
        memset(arena, 0x5a, sizeof arena);
        for (i = 0; i < models[k]->num_inputs; i++)
            if (io(argv[1], case_ids[k], "in", i, mc_input(&ctx, i), models[k]->inputs[i].bytes, 0)) return 3;
        mc_run(&ctx);
        for (i = 0; i < models[k]->num_outputs; i++)
            if (io(argv[1], case_ids[k], "out", i, mc_output(&ctx, i), models[k]->outputs[i].bytes, 1)) return 4;
        printf("done %%u\n", k);
        fflush(stdout);
    }
    return 0;
}
"""


def _gcc(args: list[str], cwd: Path) -> str | None:
    r = subprocess.run(["gcc", *args], cwd=cwd, capture_output=True, text=True)
    return r.stderr if r.returncode else None


class Refused(AssertionError):
    """microcompile refuses the model (a UserError): a failure for a test expected to pass."""


_GRAPHS: dict[bytes, Graph | Refused] = {}
UPGRADE_TO, OPSET_MAX = 13, 21


def upgrade(model: onnx.ModelProto) -> onnx.ModelProto:
    """A model outside microcompile's opsets 11..21, converted with ONNX's own version
    converter: most pytorch-* tests are opset 6 or 9 (upgraded to 13, as microcompile's
    error message tells users to do); many node tests are written at opsets 22..25, whose
    bumps mostly only add types (bfloat16, float8), and go down to 21 when ONNX allows it."""
    opset = {i.domain or "": i.version for i in model.opset_import}.get("", 0)
    if 11 <= opset <= OPSET_MAX:
        return model
    try:
        return onnx.version_converter.convert_version(model, UPGRADE_TO if opset < 11 else OPSET_MAX)
    except Exception as e:   # the converter's own limits: report, never guess
        raise UserError(f"opset {opset}, and onnx.version_converter cannot convert it to 11..{OPSET_MAX}: "
                        f"{str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__}") from None


def compile_model(model: onnx.ModelProto) -> Graph:
    """ONNX -> the graph microcompile compiles; Refused when microcompile refuses it."""
    key = hashlib.sha1(model.SerializeToString(deterministic=True)).digest()
    if key not in _GRAPHS:
        try:
            _GRAPHS[key] = pipeline.run(load_onnx(upgrade(model)))
        except UserError as e:
            _GRAPHS[key] = Refused(f"microcompile refuses this model: {e.message}")
    g = _GRAPHS[key]
    if isinstance(g, Refused):
        raise g
    return g


def _key(model: onnx.ModelProto, inputs) -> str:
    h = hashlib.sha1(model.SerializeToString(deterministic=True))
    for x in inputs:
        x = np.ascontiguousarray(x)
        h.update(str((x.dtype, x.shape)).encode())
        h.update(x.tobytes())
    return h.hexdigest()


class HostRunner:
    def __init__(self):
        self.work = Path(tempfile.mkdtemp(prefix="mc_onnx_backend_"))
        self.cache: dict[str, list[np.ndarray] | Exception] = {}
        self._runtime: list[str] | None = None
        self._batches = 0

    def runtime_objects(self) -> list[str]:
        """The C runtime and kernels, compiled once."""
        if self._runtime is None:
            d = self.work / "runtime"
            d.mkdir()
            units = [RUNTIME / "src" / "mc_runtime.c", *sorted((RUNTIME / "kernels").glob("*.c"))]
            with ThreadPoolExecutor(4) as pool:
                errs = list(pool.map(lambda u: _gcc([*CFLAGS, "-I", str(RUNTIME / "include"), "-c", str(u),
                                                     "-o", f"{u.stem}.o"], d), units))
            assert not any(errs), f"runtime does not compile:\n{[e for e in errs if e]}"
            self._runtime = [str(d / f"{u.stem}.o") for u in units]
        return self._runtime

    def prefetch(self, jobs: list[tuple[onnx.ModelProto, Graph, list[np.ndarray]]]) -> None:
        """Compile and run many models in one program; fills the cache."""
        todo = {}
        for model, g, inputs in jobs:
            key = _key(model, inputs)
            if key not in self.cache:
                todo[key] = (g, inputs)
        if todo:
            self._run_batch(todo)

    def run(self, model: onnx.ModelProto, g: Graph, inputs) -> list[np.ndarray]:
        key = _key(model, inputs)
        if key not in self.cache:
            self._run_batch({key: (g, inputs)})
        result = self.cache[key]
        if isinstance(result, Exception):
            raise result
        return result

    def _run_batch(self, todo: dict) -> None:
        self._batches += 1
        work = self.work / f"batch{self._batches}"
        work.mkdir()
        entries = []   # (key, graph, case dir, manifest)
        for key, (g, inputs) in todo.items():
            k = len(entries)
            d = work / f"case{k}"
            try:
                manifest = compile_graph(g, d)
                self._write_inputs(g, inputs, d)
            except Exception as e:   # a compiler bug on this model: its failure alone
                self.cache[key] = AssertionError(f"compiling to C failed: {type(e).__name__}: {e}")
                shutil.rmtree(d, ignore_errors=True)
                continue
            entries.append((key, g, d, manifest))
        objs = self._compile_units(work, entries)
        linked = [e for e, o in zip(entries, objs) if o is not None]
        if not linked:
            return
        self._link(work, linked, [o for o in objs if o is not None])
        self._execute(work, linked)

    def _write_inputs(self, g: Graph, inputs, d: Path) -> None:
        if len(inputs) != len(g.inputs):
            raise UserError(f"{len(inputs)} inputs given, the model takes {len(g.inputs)}")
        for i, (name, x) in enumerate(zip(g.inputs, inputs)):
            t = g.tensors[name]
            x = np.asarray(x)
            if tuple(x.shape) != tuple(t.shape):
                raise AssertionError(f"input {i} has shape {x.shape}, the graph {t.shape}")
            (d / f"in{i}.bin").write_bytes(np.ascontiguousarray(x.astype(NP_DTYPES[t.dtype])).tobytes())

    def _compile_units(self, work: Path, entries) -> list[str | None]:
        def one(k_entry):
            k, (key, _, d, _) = k_entry
            renames = [f"#define mc_model mc_model_{k}"]
            renames += [f"#define {s} mc_case{k}_{s}" for s in weight_symbols(d)]
            (work / f"wrap{k}.c").write_text("\n".join(
                renames + [f'#include "{d}/model_weights.c"', f'#include "{d}/model.c"', ""]))
            err = _gcc([*CFLAGS, "-I", str(RUNTIME / "include"), f"-Wa,-I{d}", "-c", f"wrap{k}.c", "-o", f"wrap{k}.o"],
                       work)
            if err:
                self.cache[key] = AssertionError(f"generated C does not compile:\n{err[:2000]}")
                return None
            return str(work / f"wrap{k}.o")
        with ThreadPoolExecutor(4) as pool:
            return list(pool.map(one, enumerate(entries)))

    def _link(self, work: Path, linked, objs) -> None:
        # The program indexes models 0..n-1 in `linked` order; case_ids maps them to their dirs.
        main = _MAIN % {
            "ids": ", ".join(str(self._orig(work, e)) for e in linked),
            "externs": "\n".join(f"extern const mc_model_t mc_model_{self._orig(work, e)};" for e in linked),
            "models": ", ".join(f"&mc_model_{self._orig(work, e)}" for e in linked),
            "arena": max(max(e[3]["arena_bytes"] for e in linked), 16),
        }
        (work / "main.c").write_text(main)
        err = _gcc([*CFLAGS, "-I", str(RUNTIME / "include"), "-c", "main.c", "-o", "main.o"], work)
        assert err is None, err
        err = _gcc(["main.o", *objs, *self.runtime_objects(), "-lm", "-o", "prog"], work)
        assert err is None, f"link failed:\n{err}"

    @staticmethod
    def _orig(work: Path, entry) -> int:
        return int(entry[2].name[len("case"):])

    def _execute(self, work: Path, linked) -> None:
        pending = list(range(len(linked)))
        while pending:
            r = subprocess.run([str(work / "prog"), str(work), *map(str, pending)], cwd=work,
                               capture_output=True, text=True, timeout=600)
            done = {int(line.split()[1]) for line in r.stdout.splitlines() if line.startswith("done ")}
            for k in pending:
                if k in done:
                    self._collect(linked[k])
            if r.returncode == 0:
                return
            rest = [k for k in pending if k not in done]
            crashed, pending = rest[0], rest[1:]
            self.cache[linked[crashed][0]] = AssertionError(f"the compiled model crashed (exit {r.returncode})")

    def _collect(self, entry) -> None:
        key, g, d, _ = entry
        outs = []
        for i, name in enumerate(g.outputs):
            t = g.tensors[name]
            outs.append(np.frombuffer((d / f"out{i}.bin").read_bytes(), NP_DTYPES[t.dtype]).reshape(t.shape).copy())
        self.cache[key] = outs


HOST = HostRunner()


class MicrocompileRep(BackendRep):
    def __init__(self, model: onnx.ModelProto, graph: Graph):
        self.model, self.graph = model, graph

    def run(self, inputs, **kwargs):
        if isinstance(inputs, dict):
            inputs = [inputs[vi.name] for vi in self.model.graph.input if vi.name in inputs]
        outs = HOST.run(self.model, self.graph, [np.asarray(x) for x in inputs])
        return [o.astype(_ONNX_OUT[vi.type.tensor_type.elem_type]) for o, vi in zip(outs, self.model.graph.output)]


class MicrocompileBackend(Backend):
    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs) -> bool:
        return True

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        bad = [vi.name for vi in model.graph.output if vi.type.tensor_type.elem_type not in _ONNX_OUT]
        if bad:
            raise Refused(f"output(s) {', '.join(bad)} of a type microcompile does not produce "
                          "(float32, int8, int32/int64)")
        return MicrocompileRep(model, compile_model(model))

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
        raise Refused("single-node execution without a model (the suite uses models)")
