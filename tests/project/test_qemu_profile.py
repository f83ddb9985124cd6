"""The QEMU profile plugin (microcompile/project/qemu_plugin/mc_profile.c): its output's parser,
the self-test's windows, and, under QEMU, its counts against a hand-counted loop and against
the exact instruction counter of the netduinoplus2 twin."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from microcompile.errors import DeviceError
from microcompile.project import children, qemu_profile
from microcompile.target.cycles import MemorySystem

PROFILE = """# mc_profile 1
B 0 8 2 0a20 0138
B 1 c 2 1368 fbd1
S 0
C 0 1 1 0
S 1
C 1 9 8 1
F 1 0 9 2
E
"""


def test_parse_profile_segments_and_counts():
    s0, s1 = qemu_profile.parse_profile(PROFILE)
    assert s0.instructions == 2 and s1.instructions == 18
    b = s1.blocks[0]
    assert (b.vaddr, b.code, b.count, b.taken, b.fall, b.flash_reads, b.flash_misses) == \
        (0xC, (bytes.fromhex("1368"), bytes.fromhex("fbd1")), 9, 8, 1, 9, 2)
    assert s1.code_lines((0, 0x1000), 32) == 1
    assert s1.code_lines(None, 32) == 0


@pytest.mark.parametrize("text,match", [
    (PROFILE.replace("E\n", ""), "no end record"),
    (PROFILE.replace("C 1 9 8 1", "C 7 9 8 1"), "malformed"),
    (PROFILE.replace("B 1 c 2 1368 fbd1", "B 1 c 3 1368 fbd1"), "malformed"),
    (PROFILE.replace("S 1", "X 1"), "malformed"),
])
def test_parse_profile_rejects_malformed_output(text, match):
    with pytest.raises(DeviceError, match=match):
        qemu_profile.parse_profile(text)


def test_selftest_windows_are_checked_against_the_counter():
    # start-up and warm-up | counted inference | between | kernel 0 | after the last kernel
    segs = qemu_profile.parse_profile(PROFILE.replace("E\n", "S 2\nC 0 1 0 1\nS 3\nC 1 1 0 0\nS 4\nE\n"))
    w = qemu_profile.selftest_windows(segs, 1, 18, [2], tolerance=0)
    assert w.inference is segs[1] and w.kernels == (segs[3],)
    with pytest.raises(DeviceError, match="should agree"):
        qemu_profile.selftest_windows(segs, 1, 100, [2], tolerance=10)
    with pytest.raises(DeviceError, match="kernel 0"):
        qemu_profile.selftest_windows(segs, 1, 18, [50], tolerance=10)
    with pytest.raises(DeviceError, match="too few"):
        qemu_profile.selftest_windows(segs, 5, None, None, tolerance=10)


def test_plugin_args_refuse_a_comma(tmp_path):
    with pytest.raises(DeviceError, match="comma"):
        qemu_profile.plugin_args(tmp_path / "a,b.so", tmp_path / "out", [], None, MemorySystem(1))
    args = qemu_profile.plugin_args(tmp_path / "p.so", tmp_path / "out", [0x100, 0x200], (0, 0x400),
                                    MemorySystem(1, cache_lines=8, cache_line_bytes=32))
    assert args[1].endswith("mark=0x100,mark=0x200,flash=0x0:0x400,lines=8,line=32,ways=8")


LOOP = """
    .syntax unified
    .thumb
    .text
    .word 0x20001000
    .word reset + 1
    .global reset
    .thumb_func
reset:
    ldr r2, =table
    movs r0, #10
loop:
    ldr r3, [r2]
    ldr r1, [r2, #4]
    subs r0, r0, #1
    bne loop
    movs r0, #0x18          @ SYS_EXIT
    ldr r1, =0x20026        @ ADP_Stopped_ApplicationExit
    bkpt 0xab
    .align 4
table: .word 1, 2, 3, 4
"""


@pytest.mark.qemu
def test_plugin_counts_a_hand_counted_loop(tmp_path):
    if shutil.which("arm-none-eabi-gcc") is None or shutil.which("qemu-system-arm") is None:
        pytest.skip("not-installed: arm-none-eabi-gcc or qemu-system-arm")
    (tmp_path / "loop.S").write_text(LOOP)
    elf = tmp_path / "loop.elf"
    subprocess.run(["arm-none-eabi-gcc", "-mcpu=cortex-m4", "-mthumb", "-nostdlib", "-Wl,-Ttext=0x0",
                    "-Wl,-e,reset", "-o", str(elf), str(tmp_path / "loop.S")], check=True)
    out = tmp_path / "profile.txt"
    mem = MemorySystem(1, cache_lines=2, cache_line_bytes=16)
    cmd = ["qemu-system-arm", "-machine", "mps2-an386", "-cpu", "cortex-m4", "-nographic", "-monitor", "none",
           "-semihosting", "-icount", "shift=0,sleep=off", "-kernel", str(elf),
           *qemu_profile.plugin_args(qemu_profile.plugin_library(tmp_path / "cache"), out, [], (0, 0x400000), mem)]
    assert children.run(cmd, timeout=30).returncode == 0
    (seg,) = qemu_profile.parse_profile(out.read_text(), qemu_profile.ElfCode(elf))
    # reset: 2 + the first pass 4, then 9 more passes of 4, then the exit's 3
    assert seg.instructions == 2 + 4 + 9 * 4 + 3
    by_addr = {b.vaddr: b for b in seg.blocks}
    first, loop = by_addr[0x8], by_addr[0xC]
    assert (first.count, first.taken, first.fall) == (1, 1, 0)      # its bne jumps back to loop
    assert (loop.count, loop.taken, loop.fall) == (9, 8, 1)
    # flash data reads: the literal, 2 per pass, the exit's literal
    assert sum(b.flash_reads for b in seg.blocks) == 1 + 2 * 10 + 1
    # the literal pool (0x30) and the table (0x20) are two 16-byte lines: the first read of
    # each misses, and the two lines stay in the two-line cache
    assert sum(b.flash_misses for b in seg.blocks) == 2


@pytest.mark.qemu
def test_plugin_sees_the_instructions_the_exact_counter_measures(tmp_path):
    """netduinoplus2's TIM2 counts one per instruction (boards/README.md): the plugin's
    inference window must hold exactly that many, and each kernel's window its MC-KERNEL count."""
    from support.multi_op_models import MODELS
    from microcompile.frontend.tflite.writer import write_tflite
    import microcompile as mc

    model = tmp_path / "dscnn_int8.tflite"
    model.write_bytes(write_tflite(MODELS["dscnn_int8"]()))
    result = mc.compile(model, "netduinoplus2").deploy(tmp_path / "p", emulate=True)
    r = result.report
    assert r["verified"]
    assert abs(r["estimate"]["instructions_traced"] - r["instructions"]) <= 2
    assert r["estimated_cycles"] > r["instructions"]            # loads and branches cost more than 1
    assert r["clock_hz"] == 1_000_000_000
    assert all(layer["estimated_cycles"] >= 0 for layer in r["layers"])
    # each kernel's window also holds a counter read (a few instructions), the inference none
    assert sum(layer["estimated_cycles"] for layer in r["layers"]) == pytest.approx(r["estimated_cycles"], rel=0.01)


@pytest.fixture
def refused_plugin(tmp_path, monkeypatch):
    """A QEMU that refuses the plugin (an empty .so stands for one of another API version), and
    a small int8 model (dscnn) to run with it: the compiled model."""
    from support.multi_op_models import MODELS
    from microcompile.frontend.tflite.writer import write_tflite
    import microcompile as mc

    bogus = tmp_path / "bogus.so"
    bogus.write_bytes(b"")
    monkeypatch.setattr(qemu_profile, "plugin_library", lambda cache_root=None: bogus)
    model = tmp_path / "dscnn_int8.tflite"
    model.write_bytes(write_tflite(MODELS["dscnn_int8"]()))
    return mc.compile(model, "mps2-an386")


@pytest.mark.qemu
def test_a_qemu_that_refuses_the_plugin_still_runs_without_an_estimate(tmp_path, refused_plugin):
    """A QEMU other than 7.2 may refuse the plugin (another API version): the run stands, with
    a note and no estimate; a firmware failure would still raise."""
    notes = []
    result = refused_plugin.deploy(tmp_path / "p", emulate=True, progress=notes.append)
    assert result.verified and result.report["instructions"] > 0
    assert "estimated_cycles" not in result.report
    assert any("refuses the profile plugin: qemu-system-arm: Could not load plugin" in n for n in notes)


@pytest.mark.qemu
def test_profile_without_the_plugin_has_no_estimate_column(tmp_path, refused_plugin):
    notes = []
    with refused_plugin.emulate(tmp_path / "p", progress=notes.append) as dev:
        prof = dev.profile()
    assert prof.total > 0 and all(r.estimated_cycles is None for r in prof.rows)
    assert "est. cycles" not in prof.table() and "estimated_cycles" not in str(prof.report)
    assert any("refuses the profile plugin: qemu-system-arm: Could not load plugin" in n for n in notes)


@pytest.mark.qemu
def test_the_m55_estimate_prices_helium_and_its_loops(tmp_path):
    """On the Cortex-M55 twin the trace holds Helium instructions and low-overhead loops: the
    estimate has a `loops` part, and its windows agree with the SysTick counter."""
    from support.multi_op_models import MODELS
    from microcompile.frontend.tflite.writer import write_tflite
    import microcompile as mc

    model = tmp_path / "dscnn_int8.tflite"
    model.write_bytes(write_tflite(MODELS["dscnn_int8"]()))
    r = mc.compile(model, "mps3-an547").deploy(tmp_path / "p", emulate=True).report
    assert r["verified"] and r["estimate"]["core"] == "cortex-m55"
    assert abs(r["estimate"]["instructions_traced"] - r["instructions"]) <= 2 * 32 + 64
    assert r["estimate"]["parts"].get("loops", 0) > 0
    assert r["estimated_ms"] == pytest.approx(1000 * r["estimated_cycles"] / 32_000_000, rel=1e-3)
