"""The prebuilt library, Arduino, Zephyr and CMSIS-Pack exports.

- lib: the two-model application linked against the prebuilt .a for the Cortex-M4 runs on its
  twin and matches the reference; compiler flags of another float ABI stop at an #error.
- cmsis-pack: the .pdsc validates against Arm's PACK.xsd (tests/fixtures/cmsis/PACK.xsd, as Arm
  publishes it); every file it lists is in the .pack. Arm's packchk is not available here.
- arduino: the library's sources (as C, as an Arduino build compiles them, and as C++) and the
  example sketch (C++) compile for a Cortex-M4 with arm-none-eabi-gcc/g++ against a minimal
  Arduino.h written here, with the include path an Arduino build uses (src/ only). There is no
  Arduino CLI here.
- zephyr: module.yml checked against the schema Zephyr documents (scripts/zephyr_module.py),
  the module's CMakeLists.txt run by CMake over stub zephyr_* functions, the sample's main.c
  compiled against stub Zephyr headers. There is no Zephyr SDK here.
"""

from __future__ import annotations

import json
import subprocess
import zipfile
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

import microcompile as mc
from support import export_app

from support.export_app import M4, WARN, Compiled, qemu as _qemu, run as _run

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture(scope="module")
def m4_models(sources):
    return Compiled(sources, M4)


def _export(compiled: Compiled, out: Path, fmt: str, **kw):
    return mc.export([cm for _, cm in compiled.models], out, format=fmt, names=[n for n, _ in compiled.models], **kw)


@pytest.mark.qemu
@pytest.mark.heavy
def test_the_prebuilt_library_links_into_the_application_on_the_cortex_m4_twin(m4_models, tmp_path):
    result = _export(m4_models, tmp_path / "export", "lib", bsp=True, emulate=True)
    d = result.description
    out = result.directory
    lib = out / d["library"]
    assert lib.is_file() and d["library_cflags"][:len(mc.board(M4).target.cflags)] == list(mc.board(M4).target.cflags)
    app = tmp_path / "app"
    srcs = export_app.app_sources(app, m4_models.app_models())
    cflags = list(mc.board(M4).target.cflags)
    bsp = d["bsp"]
    cmd = ["arm-none-eabi-gcc", *cflags, *WARN.split(), "-O2", "-DAPP_BSP", f"-I{out / 'include'}",
           *[f"-I{out / i}" for i in bsp["include_dirs"]], *bsp["defines"], *srcs, *[out / s for s in bsp["sources"]],
           lib, "-lm", f"-T{out / bsp['linker_script']}", "-nostartfiles", "--specs=nano.specs",
           "--specs=nosys.specs", "-Wl,--gc-sections", "-o", app / "app.elf"]
    _run(cmd)
    m4_models.check(_qemu(app / "app.elf"))
    # the same application compiled for the soft-float ABI cannot link with the library: stopped early
    name = m4_models.models[0][0]
    p = subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=soft", f"-I{out / 'include'}",
                        "-x", "c", "-c", "-", "-o", str(tmp_path / "x.o")], input=f'#include "{name}.h"\n',
                       capture_output=True, text=True)
    assert p.returncode != 0 and "this library uses the hard-float ABI" in p.stderr, p.stderr
    # and the library is deterministic
    again = _export(m4_models, tmp_path / "again", "lib", bsp=True, emulate=True)
    assert (again.directory / d["library"]).read_bytes() == lib.read_bytes()


@pytest.mark.heavy
def test_the_cmsis_pack_validates_against_arms_schema_and_holds_what_it_lists(m4_models, tmp_path):
    import xmlschema

    result = _export(m4_models, tmp_path / "export", "cmsis-pack")
    d = result.description
    pdsc = result.directory / d["pdsc"]
    schema = xmlschema.XMLSchema(str(FIXTURES / "cmsis" / "PACK.xsd"))
    schema.validate(str(pdsc))                      # raises with the reason when it does not
    with zipfile.ZipFile(result.directory / d["pack"]) as z:
        names = set(z.namelist())
        assert z.read(d["pdsc"]) == pdsc.read_bytes()
        listed = [f.get("name") for f in ET.parse(pdsc).getroot().iter("file")]
        assert listed
        for name in listed:
            assert name in names or (name.endswith("/") and any(n.startswith(name) for n in names)), name
        for n in names - {d["pdsc"]}:
            assert z.read(n) == (result.directory / n).read_bytes(), n
    core = ET.parse(pdsc).getroot().find("conditions/condition/require")
    assert core.get("Dcore") == "Cortex-M4" and core.get("Ddsp") == "DSP" and core.get("Dfpu") == "SP_FPU"
    again = _export(m4_models, tmp_path / "again", "cmsis-pack")
    assert (again.directory / d["pack"]).read_bytes() == (result.directory / d["pack"]).read_bytes()
    # the schema check can fail: a description without its vendor does not validate
    root = ET.parse(pdsc).getroot()
    root.remove(root.find("vendor"))
    assert not schema.is_valid(ET.tostring(root, encoding="unicode"))


ARDUINO_H = r"""
#ifndef ARDUINO_H
#define ARDUINO_H
#include <stdint.h>
#include <string.h>
/* The part of the Arduino core API a sketch of this export uses, for a compile check. */
unsigned long micros(void);
class HardwareSerial {
public:
    void begin(unsigned long baud);
    void print(const char *s);
    void print(char c);
    void print(int v);
    void print(unsigned long v);
    void print(double v, int digits);
    void println(const char *s);
    void println(void);
};
extern HardwareSerial Serial;
#endif
"""


@pytest.mark.heavy
def test_the_arduino_library_and_its_sketch_compile_for_a_cortex_m4(m4_models, tmp_path):
    result = _export(m4_models, tmp_path / "lib", "arduino")
    out = result.directory
    props = dict(line.split("=", 1) for line in (out / "library.properties").read_text().splitlines() if "=" in line)
    for field in ("name", "version", "author", "maintainer", "sentence", "paragraph", "category", "url",
                  "architectures", "includes"):
        assert props.get(field), field
    assert (out / "src" / props["includes"]).is_file()
    assert not (out / "include").exists() and not (out / "models").exists()     # everything is in src/
    cflags = list(mc.board(M4).target.cflags)
    objs = tmp_path / "obj"
    objs.mkdir()
    sources = sorted((out / "src").glob("*.c"))
    assert any(s.name == "mc_runtime.c" for s in sources)
    for src in sources:      # as an Arduino build compiles a library's .c files: C, -Os, src/ on the path
        _run(["arm-none-eabi-gcc", *cflags, "-Os", *WARN.split(), f"-I{out / 'src'}", "-c", src,
              "-o", objs / (src.stem + ".o")])
        # and as C++ too: a user may rename them .cpp or compile everything with g++
        _run(["arm-none-eabi-g++", "-x", "c++", *cflags, "-Os", "-std=gnu++17", *WARN.split(), f"-I{out / 'src'}",
              "-c", src, "-o", objs / (src.stem + ".cpp.o")])
    stub = tmp_path / "stub"
    stub.mkdir()
    (stub / "Arduino.h").write_text(ARDUINO_H)
    for name, _ in m4_models.models:
        ino = out / "examples" / name / f"{name}.ino"
        cpp = tmp_path / f"{name}.cpp"
        cpp.write_text("#include <Arduino.h>\n" + ino.read_text())     # what the Arduino builder prepends
        _run(["arm-none-eabi-g++", *cflags, "-Os", "-std=gnu++17", "-fno-exceptions", "-fno-rtti", *WARN.split(),
              f"-I{stub}", f"-I{out / 'src'}", "-c", cpp, "-o", objs / f"{name}.o"])
        text = ino.read_text()
        assert f"{name}_model" in text and "test_input0" in text


ZEPHYR_MODULE_KEYS = {"name": str, "build": dict, "tests": list, "samples": list, "boards": list, "blobs": list}
ZEPHYR_BUILD_KEYS = {"cmake": str, "kconfig": str, "cmake-ext": bool, "kconfig-ext": bool, "sysbuild-cmake": str,
                     "sysbuild-kconfig": str, "sysbuild-cmake-ext": bool, "sysbuild-kconfig-ext": bool,
                     "depends": list, "settings": dict}


def check_zephyr_module(root: Path) -> None:
    """zephyr/module.yml as Zephyr's module schema describes it (the keys and their types of
    scripts/zephyr_module.py's METADATA_SCHEMA), and what Zephyr then checks: the cmake folder
    holds a CMakeLists.txt, the kconfig file exists."""
    import yaml

    meta = yaml.safe_load((root / "zephyr" / "module.yml").read_text())
    assert isinstance(meta, dict)
    for key, value in meta.items():
        assert key in ZEPHYR_MODULE_KEYS and isinstance(value, ZEPHYR_MODULE_KEYS[key]), key
    for key, value in meta.get("build", {}).items():
        assert key in ZEPHYR_BUILD_KEYS and isinstance(value, ZEPHYR_BUILD_KEYS[key]), key
    build = meta["build"]
    assert (root / build["cmake"] / "CMakeLists.txt").is_file()
    assert (root / build["kconfig"]).is_file()


CMAKE_STUBS = r"""
set(SOURCES "")
function(zephyr_library_named name)
  set(LIBRARY ${name} PARENT_SCOPE)
endfunction()
function(zephyr_library_sources)
  set(SOURCES ${SOURCES} ${ARGN} PARENT_SCOPE)
endfunction()
function(zephyr_include_directories)
  set(INCLUDES ${ARGN} PARENT_SCOPE)
endfunction()
function(zephyr_library_compile_options)
endfunction()
function(zephyr_link_libraries)
  set(LINKED ${ARGN} PARENT_SCOPE)
endfunction()
set(CMAKE_CURRENT_LIST_DIR_SAVED ${CMAKE_CURRENT_LIST_DIR})
"""

ZEPHYR_STUBS = {
    "zephyr/kernel.h": "#include <stdint.h>\nuint32_t k_cycle_get_32(void);\n",
    "zephyr/sys/printk.h": "void printk(const char *fmt, ...) __attribute__((format(printf, 1, 2)));\n",
}


@pytest.mark.heavy
def test_the_zephyr_module_is_what_zephyr_reads(m4_models, tmp_path):
    result = _export(m4_models, tmp_path / "module", "zephyr")
    root = result.directory
    d = result.description
    check_zephyr_module(root)
    option = d["zephyr_option"]
    kconfig = (root / "zephyr" / "Kconfig").read_text()
    assert f"config {option[len('CONFIG_'):]}\n" in kconfig
    # CMake reads the module's file: with the option set, it lists exactly the export's sources
    script = tmp_path / "read.cmake"
    listed = tmp_path / "sources.txt"
    script.write_text(CMAKE_STUBS + f"set({option} y)\ninclude({root / 'zephyr' / 'CMakeLists.txt'})\n"
                      f'file(WRITE {listed} "${{LIBRARY}}\\n${{INCLUDES}}\\n${{LINKED}}\\n${{SOURCES}}")\n')
    _run(["cmake", "-P", script])
    library, includes, linked, sources = listed.read_text().split("\n")
    assert library and linked == "m" and Path(includes).resolve() == (root / "include").resolve()
    want = set(d["runtime_sources"]) | set(d["kernel_sources"]) | {s for m in d["models"] for s in m["sources"]}
    got = {Path(s).resolve().relative_to(root.resolve()).as_posix() for s in sources.split(";")}
    assert got == want
    # without the option, nothing
    script.write_text(CMAKE_STUBS + f"include({root / 'zephyr' / 'CMakeLists.txt'})\n"
                      f'file(WRITE {listed} "${{SOURCES}}")\n')
    _run(["cmake", "-P", script])
    assert listed.read_text() == ""
    # each sample: its prj.conf turns the option on, its main.c compiles against the Zephyr API it uses
    stub = tmp_path / "stub"
    for rel, text in ZEPHYR_STUBS.items():
        (stub / rel).parent.mkdir(parents=True, exist_ok=True)
        (stub / rel).write_text(text)
    cflags = list(mc.board(M4).target.cflags)
    for name, _ in m4_models.models:
        sample = root / "samples" / name
        assert f"{option}=y" in (sample / "prj.conf").read_text()
        _run(["arm-none-eabi-gcc", *cflags, "-O2", *WARN.split(), "-D__aligned(x)=__attribute__((aligned(x)))",
              f"-I{stub}", f"-I{root / 'include'}", "-c", sample / "src" / "main.c", "-o", tmp_path / f"{name}.o"])
    # the schema check can fail
    (root / "zephyr" / "module.yml").write_text("name: x\nbuild:\n  cmake: zephyr\n  cmake-file: nope\n")
    with pytest.raises(AssertionError):
        check_zephyr_module(root)


def test_the_description_names_every_file_and_the_models(m4_models, tmp_path):
    result = _export(m4_models, tmp_path / "export", "make")
    d = json.loads((result.directory / "microcompile.json").read_text())
    on_disk = sorted(p.relative_to(result.directory).as_posix() for p in result.directory.rglob("*") if p.is_file())
    assert d["files"] == on_disk
    assert d["microcompile"] == mc.__version__ and d["board"] == M4 and d["core"] == "cortex-m4f"
    assert [m["name"] for m in d["models"]] == [n for n, _ in m4_models.models]
    for m, (name, cm) in zip(d["models"], m4_models.models):
        assert m["arena_bytes"] == cm.memory.arena_bytes and m["symbol"] == f"{name}_model"
        assert [i["shape"] for i in m["inputs"]] == [list(s.shape) for s in cm.inputs]
        assert all(isinstance(i["scale"], float) for i in m["inputs"])
        assert m["code_bytes"] > 0 and m["flash_bytes"] == m["weights_bytes"] + m["code_bytes"]
    assert d["shared_code_bytes"] > 0 and "arm-none-eabi" in d["code_measured_with"]
    readme = (result.directory / "README.md").read_text()
    for name, cm in m4_models.models:
        assert f"{name.upper()}_ARENA_BYTES" in readme and str(cm.memory.arena_bytes) in readme
    assert len(np.unique([d["build_id"]])) == 1 and len(d["build_id"]) == 16


def test_a_header_takes_its_own_kernel_files_in_the_feature_folders():
    """mc_depthwise.h's whole-layer kernel lives in dsp/mc_depthwise_rows_dsp.c: it goes with
    the header; mc_gemm_mixed_dsp.c and mc_gemm_s4_dsp.c are other headers' and stay out of
    mc_gemm's group (a library missing one fails to link: test_export_builds.py)."""
    from microcompile.project.kernel_sources import feature_sources as _feature_sources
    from microcompile.resources import resource_dir

    runtime = resource_dir("runtime_c")
    names = lambda stem: [p.name for p in _feature_sources(runtime, "dsp", "_dsp", stem)]   # noqa: E731
    assert names("mc_depthwise") == ["mc_depthwise_dsp.c", "mc_depthwise_rows_dsp.c"]
    assert names("mc_gemm") == ["mc_gemm_dsp.c"]
    assert names("mc_gemm_mixed") == ["mc_gemm_mixed_dsp.c"]
