"""A project compiles only the kernel sources of the runtime headers its model includes
(project/kernel_sources.py). That is all a model links because no kernel source calls an mc_
function defined in another kernel source, and no header's inline function calls a kernel
source: both checked here on the object code, for the Cortex-M55 (which builds every kernel
folder: portable, DSP and Helium) and the Cortex-M0+ (the portable files alone, whose code
takes other branches without the DSP extension)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from microcompile.project.kernel_sources import kernel_sources
from microcompile.resources import resource_dir
from microcompile.target import load_board

M55 = ["-mcpu=cortex-m55", "-mthumb", "-mfloat-abi=hard", "-O2"]
M0 = ["-mcpu=cortex-m0plus", "-mthumb", "-O2"]
CORES = {"cortex-m55": (M55, "**/*.c"), "cortex-m0plus": (M0, "*.c")}   # flags, the kernel files it builds


def _nm(obj, *flags) -> set[str]:
    out = subprocess.run(["arm-none-eabi-nm", *flags, str(obj)], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.split()[-1].startswith("mc_")}


@pytest.fixture(scope="module")
def cc():
    path = shutil.which("arm-none-eabi-gcc")
    assert path, "arm-none-eabi-gcc is not on PATH"
    return path


@pytest.mark.parametrize("core", sorted(CORES))
def test_no_kernel_source_calls_another(core, cc, tmp_path):
    flags, pattern = CORES[core]
    runtime = resource_dir("runtime_c")
    sources = sorted((runtime / "kernels").glob(pattern))
    defined, needs = {}, {}
    for src in sources:
        obj = tmp_path / (src.stem + ".o")
        subprocess.run([cc, *flags, "-I", str(runtime / "include"), "-c", str(src), "-o", str(obj)], check=True)
        defined[src.name] = _nm(obj, "--defined-only", "--extern-only")
        needs[src.name] = _nm(obj, "-u")
    everywhere = set().union(*defined.values())
    assert len(sources) > 10 and everywhere
    for name, wanted in needs.items():
        assert not wanted & everywhere, f"{name} calls {sorted(wanted & everywhere)} of another kernel source"


@pytest.mark.parametrize("core", sorted(CORES))
def test_no_header_inline_function_calls_a_kernel_source(core, cc, tmp_path):
    include = resource_dir("runtime_c") / "include"
    for header in sorted(include.glob("*.h")):
        src = tmp_path / "t.c"
        src.write_text(f'#include "{header.name}"\n')
        r = subprocess.run([cc, *CORES[core][0], "-fkeep-inline-functions", "-I", str(include), "-c", str(src), "-o",
                            str(tmp_path / "t.o")], capture_output=True, text=True)
        if r.returncode:            # a header of the SSAT, DSP or Helium kernels, on a core without them
            assert any(k in header.name for k in ("ssat", "dsp", "mve")), r.stderr
            continue
        assert not _nm(tmp_path / "t.o", "-u"), f"{header.name}'s inline functions call {_nm(tmp_path / 't.o', '-u')}"


def test_a_project_gets_the_sources_of_its_headers_only():
    m4, m0 = load_board("mps2-an386"), load_board("microbit")
    got = {stem: [rel for _, rel in s] for stem, s in kernel_sources(m4, ["mc_depthwise.h", "mc_gemm.h"]).items()}
    assert got == {"mc_depthwise": ["runtime/kernels/mc_depthwise.c", "runtime/kernels/dsp/mc_depthwise_dsp.c",
                                    "runtime/kernels/dsp/mc_depthwise_rows_dsp.c"],
                   "mc_gemm": ["runtime/kernels/mc_gemm.c", "runtime/kernels/dsp/mc_gemm_dsp.c"]}
    assert [rel for _, rel in kernel_sources(m0, ["mc_gemm.h"])["mc_gemm"]] == ["runtime/kernels/mc_gemm.c"]
    assert kernel_sources(m4, ["mc_fixedpoint.h"]) == {}          # a header with no source of its own
