"""`microcompile export`: real builds of a user application that runs two models in one
program, through the CMake export and the Make fragment, on the host natively and on the
Cortex-M4 twin (mps2-an386 in QEMU) with the exported board support; both models' outputs
equal the reference interpreter's (int8 bit for bit, float within 1e-5 of the largest
magnitude), and so do the mc_dequantize_f32 floats. `nm` shows no duplicate symbol and no
model symbol without its model's prefix.

The models are MLPerf Tiny's kws and ad01 when ../shared/models has them, else the project's
own example model, float and quantized."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import microcompile as mc
from support import export_app
from support.export_app import M4, WARN, Compiled, qemu as _qemu, run as _run

@pytest.fixture(scope="module")
def host(sources):
    return Compiled(sources, "host")


@pytest.fixture(scope="module")
def m4(sources):
    return Compiled(sources, M4)


def _export(compiled: Compiled, out: Path, fmt: str, bsp: bool = False, models=None) -> Path:
    models = models or compiled.models
    mc.export([cm for _, cm in models], out, format=fmt, bsp=bsp, emulate=bsp, names=[n for n, _ in models])
    return out


def _cmake_app(app: Path, exports: list[Path], targets: list[str], cxx: bool, bsp: bool) -> str:
    lang = "C CXX" if cxx else "C"
    subdirs = "\n".join(f"add_subdirectory({e} mc{k})" for k, e in enumerate(exports))
    return (f"cmake_minimum_required(VERSION 3.16)\nproject(app {lang})\n{subdirs}\n"
            f"add_executable(app {'main.cpp' if cxx else 'main.c'} app_io.c)\n"
            + ("target_compile_definitions(app PRIVATE APP_BSP)\n" if bsp else "")
            # Debian's arm-none-eabi toolchain has no libstdc++ (a separate package): the C++
            # application uses none of it and links with the C driver, as bare-metal C++ often does.
            + ("set_target_properties(app PROPERTIES LINKER_LANGUAGE C)\n" if cxx and bsp else "")
            + f"target_link_libraries(app PRIVATE {' '.join(targets)}{' microcompile::bsp' if bsp else ''})\n")


def _cmake_build(app: Path, cflags: str, toolchain: Path | None = None) -> Path:
    cmd = ["cmake", "-G", "Ninja", "-S", app, "-B", app / "build", f"-DCMAKE_C_FLAGS={cflags}",
           f"-DCMAKE_CXX_FLAGS={cflags}"]
    if toolchain is not None:
        cmd.append(f"-DCMAKE_TOOLCHAIN_FILE={toolchain}")
    _run(cmd)
    _run(["cmake", "--build", app / "build"])
    return app / "build" / "app"


def _toolchain(path: Path, cflags: list[str]) -> Path:
    flags = " ".join(cflags)
    path.write_text("set(CMAKE_SYSTEM_NAME Generic)\nset(CMAKE_SYSTEM_PROCESSOR arm)\n"
                    "set(CMAKE_C_COMPILER arm-none-eabi-gcc)\nset(CMAKE_CXX_COMPILER arm-none-eabi-g++)\n"
                    "set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)\n"
                    f'set(CMAKE_EXE_LINKER_FLAGS_INIT "{flags}")\n')
    return path




def _symbol_checks(names: list[str], libraries: list[Path], program: Path) -> None:
    """Every symbol a model's objects define starts with its prefix; no global symbol is defined
    twice; the program keeps no unprefixed model symbol (mc_model, mc_k0_..., mc_inputs)."""
    globals_seen: dict[str, Path] = {}
    for lib in libraries:
        out = subprocess.run(["nm", "--defined-only", str(lib)], capture_output=True, text=True, check=True).stdout
        model = next((n for n in names if lib.name == f"libmicrocompile_{n}.a"), None)
        for line in out.splitlines():
            parts = line.split()
            if len(parts) != 3:
                continue
            _, kind, sym = parts
            if sym.startswith((".", "$")):
                continue          # the compiler's local labels (.LC0), Arm mapping symbols ($t, $d)
            if model is not None:
                assert sym.startswith(f"{model}_"), f"{lib.name} defines {sym} without the prefix {model}_"
            if kind.isupper():
                assert sym not in globals_seen, f"{sym} defined in {lib.name} and {globals_seen[sym].name}"
                globals_seen[sym] = lib
    out = subprocess.run(["nm", str(program)], capture_output=True, text=True, check=True).stdout
    symbols = {line.split()[-1] for line in out.splitlines() if line.split()}
    leaked = sorted(s for s in symbols if s in ("mc_model", "mc_inputs", "mc_outputs", "mc_kernels", "mc_state")
                    or (s.startswith("mc_k") and s[4:5].isdigit()))
    assert not leaked, leaked
    for n in names:
        assert f"{n}_model" in symbols


@pytest.mark.heavy
@pytest.mark.parametrize("cxx", [False, True], ids=["main.c", "main.cpp"])
def test_two_models_through_cmake_on_the_host(host, tmp_path, cxx):
    export = _export(host, tmp_path / "export", "cmake")
    app = tmp_path / "app"
    export_app.app_sources(app, host.app_models(), cxx=cxx)
    names = [n for n, _ in host.models]
    (app / "CMakeLists.txt").write_text(_cmake_app(app, [export], [f"microcompile::{n}" for n in names], cxx, False))
    program = _cmake_build(app, WARN)
    host.check(_run([program]).stdout)
    _symbol_checks(names, sorted((app / "build" / "mc0").glob("*.a")), program)


@pytest.mark.heavy
def test_two_exports_link_into_one_program(host, tmp_path):
    """Each model exported on its own: the runtime and shared kernels are defined once."""
    (a_name, a), (b_name, b) = host.models
    export_a = _export(host, tmp_path / "a", "cmake", models=[(a_name, a)])
    export_b = _export(host, tmp_path / "b", "cmake", models=[(b_name, b)])
    for rel in ("include/mc_runtime.h", "runtime/src/mc_runtime.c"):
        assert (export_a / rel).read_bytes() == (export_b / rel).read_bytes()
    app = tmp_path / "app"
    export_app.app_sources(app, host.app_models())
    (app / "CMakeLists.txt").write_text(
        _cmake_app(app, [export_a, export_b], [f"microcompile::{a_name}", f"microcompile::{b_name}"], False, False))
    host.check(_run([_cmake_build(app, WARN)]).stdout)


def _makefile(export: Path, cc: str, cflags: str, bsp: bool) -> str:
    lines = [f"include {export}/microcompile.mk", f"CC := {cc}",
             f"CFLAGS := {cflags} $(MC_CFLAGS) $(MC_INCLUDES)" + (" $(MC_BSP_CFLAGS) -DAPP_BSP" if bsp else ""),
             "app: main.c app_io.c $(MC_SRCS)" + (" $(MC_BSP_SRCS)" if bsp else ""),
             "\t$(CC) $(CFLAGS) -o $@ $^ " + ("$(MC_BSP_LDFLAGS) " if bsp else "") + "$(MC_LDLIBS)", ""]
    return "\n".join(lines)


@pytest.mark.heavy
def test_two_models_through_the_make_fragment_on_the_host(host, tmp_path):
    export = _export(host, tmp_path / "export", "make")
    app = tmp_path / "app"
    export_app.app_sources(app, host.app_models())
    (app / "Makefile").write_text(_makefile(export, "cc", WARN, False))
    _run(["make", "-C", app])
    host.check(_run([app / "app"]).stdout)


@pytest.mark.qemu
@pytest.mark.heavy
@pytest.mark.parametrize("cxx", [False, True], ids=["main.c", "main.cpp"])
def test_two_models_through_cmake_on_the_cortex_m4_twin_with_the_bsp(m4, tmp_path, cxx):
    export = _export(m4, tmp_path / "export", "cmake", bsp=True)
    app = tmp_path / "app"
    export_app.app_sources(app, m4.app_models(), cxx=cxx)
    names = [n for n, _ in m4.models]
    (app / "CMakeLists.txt").write_text(_cmake_app(app, [export], [f"microcompile::{n}" for n in names], cxx, True))
    board = mc.board(M4)
    cflags = " ".join(board.target.cflags)
    program = _cmake_build(app, f"{cflags} {WARN}", _toolchain(tmp_path / "arm.cmake", list(board.target.cflags)))
    m4.check(_qemu(program))
    _symbol_checks(names, sorted((app / "build" / "mc0").glob("*.a")), program)


@pytest.mark.qemu
@pytest.mark.heavy
def test_two_models_through_the_make_fragment_on_the_cortex_m4_twin(m4, tmp_path):
    export = _export(m4, tmp_path / "export", "make", bsp=True)
    app = tmp_path / "app"
    export_app.app_sources(app, m4.app_models())
    cflags = " ".join(mc.board(M4).target.cflags)
    (app / "Makefile").write_text(_makefile(export, "arm-none-eabi-gcc", f"{cflags} {WARN}", True))
    _run(["make", "-C", app])
    m4.check(_qemu(app / "app"))


def test_exporting_twice_gives_identical_trees(host, tmp_path):
    trees = []
    for k in range(2):
        out = _export(host, tmp_path / f"e{k}", "cmake")
        trees.append({p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()})
    assert trees[0] == trees[1]
    _export(host, tmp_path / "e0", "cmake")       # into an earlier export: updated, the same again
    again = {p.relative_to(tmp_path / "e0").as_posix(): p.read_bytes()
             for p in sorted((tmp_path / "e0").rglob("*")) if p.is_file()}
    assert again == trees[0]


@pytest.mark.heavy
def test_the_two_model_example_of_the_docs_builds_and_runs(host, tmp_path):
    """docs/export.md's classify() as written, linked through the Make fragment."""
    import re
    page = (Path(__file__).resolve().parents[2] / "docs" / "export.md").read_text()
    example = re.search(r"```c\n(.*?)```", page, re.S).group(1)
    assert len(example.splitlines()) <= 25
    (kws_name, kws), (ad01_name, ad01) = host.models
    export = tmp_path / "export"
    mc.export([kws, ad01], export, format="make", names=["kws", "ad01"])    # the names the example uses
    app = tmp_path / "app"
    app.mkdir()
    (app / "main.c").write_text(example + r"""
#include <stdio.h>
int main(void)
{
    static float features[4096], spectrum[4096], scores[12], decoded[4096];
    int i, rc = classify(features, spectrum, scores, decoded);
    printf("rc %d\n", rc);
    for (i = 0; i < 12 && i < (int)(KWS_OUTPUT0_BYTES); i++)
        printf("%a\n", (double)scores[i]);
    return rc;
}
""")
    (app / "Makefile").write_text(f"include {export}/microcompile.mk\nCFLAGS := -O2 {WARN} $(MC_CFLAGS) $(MC_INCLUDES)\n"
                                  "app: main.c $(MC_SRCS)\n\t$(CC) $(CFLAGS) -o $@ $^ $(MC_LDLIBS)\n")
    _run(["make", "-C", app])
    out = _run([app / "app"]).stdout.split()
    assert out[:2] == ["rc", "0"]
    zeros = [np.zeros(s.shape, np.float32) for s in kws.inputs]
    want = kws.reference(zeros, dequantize=True)[0].reshape(-1)
    got = np.array([float.fromhex(v) for v in out[2:2 + min(12, want.size)]], np.float32)
    np.testing.assert_allclose(got, want[:got.size], rtol=0, atol=1e-5 * max(np.abs(want).max(), 1e-30))
