"""What `microcompile export` writes, and what a two-model program costs.

    PYTHONPATH=. python benchmarks/export_sizes.py [--models DIR]

1. kws_ref_model exported for mps2-an386 in every format: files and bytes of the tree (and of
   the prebuilt .a, the .pack).
2. kws and ad01 in one program (the application of tests/export, through the CMake export):
   on the host natively, and on mps2-an386 with the exported board support, run in QEMU;
   outputs checked against the reference interpreter; `size` of the program (text, data, bss)
   and the models' arenas. Instructions of the QEMU run are not measured here: `deploy`
   measures one model's inference (BENCHMARK.md), and the export compiles the same kernels.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))   # the application of tests/export

import microcompile as mc  # noqa: E402
from support import export_app  # noqa: E402
from support.export_app import WARN, Compiled, qemu, run  # noqa: E402

FORMATS = ("cmake", "make", "lib", "arduino", "zephyr", "cmsis-pack")


def tree_size(root: Path) -> tuple[int, int]:
    files = [p for p in root.rglob("*") if p.is_file()]
    return len(files), sum(p.stat().st_size for p in files)


def size(tool: str, program: Path) -> tuple[int, int, int]:
    line = subprocess.run([tool, str(program)], capture_output=True, text=True, check=True).stdout.splitlines()[1]
    text, data, bss = (int(v) for v in line.split()[:3])
    return text, data, bss


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=str(REPO.parent / "shared" / "models"))
    args = ap.parse_args()
    models = Path(args.models)
    kws, ad01 = models / "kws_ref_model.tflite", models / "ad01_int8.tflite"
    if not kws.is_file() or not ad01.is_file():
        print(f"needs kws_ref_model.tflite and ad01_int8.tflite in {models} (scripts/get-models)")
        return 2
    with tempfile.TemporaryDirectory(prefix="mc-export-bench-") as tmp:
        tmp = Path(tmp)
        cm = mc.compile(kws, "mps2-an386")
        print("kws_ref_model for mps2-an386, one model per export")
        print(f"{'format':<11} {'files':>6} {'bytes':>10}  notes")
        for fmt in FORMATS:
            r = cm.export(tmp / fmt, format=fmt, name="kws")
            files, total = tree_size(r.directory)
            d = r.description
            note = ""
            if "library" in d:
                note = f"{d['library']} {(r.directory / d['library']).stat().st_size:,} bytes"
            if "pack" in d:
                note = f"{d['pack']} {(r.directory / d['pack']).stat().st_size:,} bytes"
            print(f"{fmt:<11} {files:>6} {total:>10,}  {note}")
        print("\nkws + ad01 in one program (CMake export; arenas "
              f"{mc.compile(kws, 'host').memory.arena_bytes:,} + {mc.compile(ad01, 'host').memory.arena_bytes:,} "
              "bytes on the host)")
        print(f"{'build':<32} {'text':>9} {'data':>7} {'bss':>8}  outputs")
        for board, bsp in (("host", False), ("mps2-an386", True)):
            c = Compiled([("kws", kws), ("ad01", ad01)], board)
            export = tmp / f"two-{board}"
            mc.export([m for _, m in c.models], export, format="cmake", bsp=bsp, emulate=bsp, names=["kws", "ad01"])
            app = tmp / f"app-{board}"
            export_app.app_sources(app, c.app_models())
            (app / "CMakeLists.txt").write_text(
                "cmake_minimum_required(VERSION 3.16)\nproject(app C)\n"
                f"add_subdirectory({export} mc)\nadd_executable(app main.c app_io.c)\n"
                + ("target_compile_definitions(app PRIVATE APP_BSP)\n" if bsp else "")
                + "target_link_libraries(app PRIVATE microcompile::kws microcompile::ad01"
                + (" microcompile::bsp)\n" if bsp else ")\n"))
            flags = " ".join(c.models[0][1].board.target.cflags) if bsp else ""
            cmd = ["cmake", "-G", "Ninja", "-S", app, "-B", app / "build", f"-DCMAKE_C_FLAGS={flags} {WARN}"]
            if bsp:
                tc = tmp / "arm.cmake"
                tc.write_text("set(CMAKE_SYSTEM_NAME Generic)\nset(CMAKE_SYSTEM_PROCESSOR arm)\n"
                              "set(CMAKE_C_COMPILER arm-none-eabi-gcc)\n"
                              "set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)\n"
                              f'set(CMAKE_EXE_LINKER_FLAGS_INIT "{flags}")\n')
                cmd.append(f"-DCMAKE_TOOLCHAIN_FILE={tc}")
            run(cmd)
            run(["cmake", "--build", app / "build"])
            program = app / "build" / "app"
            out = qemu(program) if bsp else run([program]).stdout
            c.check(out)
            text, data, bss = size("arm-none-eabi-size" if bsp else "size", program)
            label = "mps2-an386 (QEMU, exported BSP)" if bsp else "host (x86-64, gcc)"
            print(f"{label:<32} {text:>9,} {data:>7,} {bss:>8,}  equal to the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
