"""The fit report: flash and RAM per bank from the ELF, the largest symbols, the stack need from
the compiler's call graph, and what would help when a firmware does not fit."""

import pytest

from support.fake_artifact import benchmark_input, needs_arm, write_artifact
from microcompile.errors import BoardError
from microcompile.project import BuildOptions, build, fit_report, generate, placement
from microcompile.project.elf import read_elf
from microcompile.project.fit import FitError, Placement, _report, check_manifest_fits, smallest_board_that_fits
from microcompile.project.stack import EXCEPTION_FRAME, EXTERNAL_BYTES, stack_need
from microcompile.target import load_board


@needs_arm
def test_fit_report_adds_up_the_sections_of_every_bank(tmp_path):
    board = load_board("nucleo-f746zg")
    art = write_artifact(tmp_path / "a", weights_bytes=5000)
    out = generate(art, board, tmp_path / "p", [benchmark_input((1, 4, 4, 1))],
                   BuildOptions(arena_region="DTCM"))
    build(out, progress=lambda line: None)
    where = placement(board, arena_region="DTCM")
    report = fit_report(out / "firmware.elf", board, where, out / "build" / "board")
    assert report.fits and not report.problems
    sections = {s.name: s for s in read_elf(out / "firmware.elf").sections}
    banks = {b["name"]: b for b in report.banks}
    dtcm, sram, flash = board.mcu.bank("DTCM"), board.mcu.bank("SRAM"), board.mcu.bank("FLASH")
    # the arena is where it was asked to be, and the fit report says so
    assert dtcm.origin <= sections[".arena"].addr < dtcm.end
    assert banks["DTCM"]["items"] == {"arena": sections[".arena"].size}
    assert banks["ITCM"]["used"] == 0
    assert banks["FLASH"]["used"] == sum(sections[s].size for s in (".isr_vector", ".text", ".weights", ".rodata",
                                                                      ".data") if s in sections)
    assert banks["FLASH"]["items"]["weights"] == sections[".weights"].size >= 5000
    assert flash.origin <= sections[".weights"].addr < flash.end
    assert sram.origin <= sections[".stack_reserve"].addr < sram.end
    assert banks["SRAM"]["items"]["stack"] == report.stack_reserve == 4096
    assert all(b["used"] + b["free"] == b["size"] for b in report.banks)
    # the largest symbols, biggest first, read with pyelftools
    sizes = [s["size"] for s in report.symbols]
    assert len(sizes) == 10 and sizes == sorted(sizes, reverse=True)
    assert report.symbols[0]["name"] == "mc_weights" and report.symbols[0]["size"] == 5000
    # the static stack need comes from the call graph, from the reset handler down
    assert report.stack.bytes is not None and report.stack.path[:2] == ["Reset_Handler", "main"]
    assert 0 < report.stack.bytes < 4096
    text = report.format()
    assert "fit on nucleo-f746zg: fits" in text and "DTCM" in text and "largest symbols: mc_weights 5,000" in text


def _ci(path, nodes, edges):
    lines = ['graph: { title: "x.c"']
    for title, size in nodes:
        label = f"{title}\\nx.c:1:1" + (f"\\n{size} bytes (static)" if size is not None else "")
        lines.append(f'node: {{ title: "{title}" label: "{label}" }}')
    for a, b in edges:
        lines.append(f'edge: {{ sourcename: "{a}" targetname: "{b}" }}')
    path.write_text("\n".join(lines + ["}"]))


def test_stack_need_from_the_call_graph(tmp_path):
    # Reset_Handler 8 -> main 40 -> run 16 -> (pointer) k0 100 | k1 24 -> memcpy (library)
    _ci(tmp_path / "a.ci", [("Reset_Handler", 8), ("main", 40), ("run", 16), ("x.c:k0", 100), ("x.c:k1", 24),
                            ("memcpy", None), ("__indirect_call", None)],
        [("Reset_Handler", "main"), ("main", "run"), ("run", "__indirect_call"), ("x.c:k1", "memcpy")])
    need = stack_need(tmp_path)
    assert need.bytes == 8 + 40 + 16 + 100 and need.path == ["Reset_Handler", "main", "run", "k0"]
    # a function the linker dropped is no pointer target
    need = stack_need(tmp_path, linked={"Reset_Handler", "main", "run", "k1"})
    assert need.bytes == 8 + 40 + 16 + 24 + EXTERNAL_BYTES and need.external == ["memcpy"]
    # an enabled interrupt comes on top, with its exception frame
    _ci(tmp_path / "b.ci", [("SysTick_Handler", 8)], [])
    assert stack_need(tmp_path).bytes == 8 + 40 + 16 + 100 + 8 + EXCEPTION_FRAME
    # recursion: no bound
    _ci(tmp_path / "c.ci", [("x.c:k0", 100)], [("x.c:k0", "run")])
    assert stack_need(tmp_path).bytes is None
    assert stack_need(tmp_path / "nothing-here").bytes is None


def test_what_would_help():
    an547 = load_board("mps3-an547")
    where = placement(an547)
    # an arena too big for DTCM fits the 4 MiB internal SRAM
    report = _report(an547, {"code": 20_000, "arena": 1 << 20, "stack": 4096}, where, 0)
    assert not report.fits and "ram bank DTCM needs 1028 KiB, mps3-an547 has 512 KiB (over by 516 KiB)" in report.problems[0]
    assert any(h.startswith("--arena-region ISRAM") for h in report.hints)
    # weights too big for ITCM fit the QSPI flash
    report = _report(an547, {"code": 20_000, "weights": 1 << 20}, where, 300_000)
    assert any(h.startswith("--weights-region QSPI") for h in report.hints)
    assert any("int8 instead of widened weights: 293.0 KiB" in h for h in report.hints)
    # the smallest board that holds KWS-sized needs is the NUCLEO-F446RE
    kws = {"code": 12_000, "weights": 60_000, "rodata": 1000, "arena": 32_400, "bss": 200, "stack": 4096}
    assert smallest_board_that_fits(kws) == ("nucleo-f446re", "")
    assert smallest_board_that_fits({"code": 4000, "weights": 9000, "arena": 400, "stack": 4096}) == ("microbit", "")
    assert smallest_board_that_fits({"weights": 1 << 30}) is None


def test_does_not_fit_before_building_with_what_would_help():
    manifest = {"model": "big", "weights_bytes": 100_000, "arena_bytes": 40_000}
    microbit = load_board("microbit")
    with pytest.raises(FitError) as info:
        check_manifest_fits(manifest, microbit, placement(microbit), widened_bytes=50_000)
    e = info.value
    assert e.exit_code == 2 and not e.report.fits and e.report.estimated
    assert "ram bank RAM needs 43.1 KiB, microbit has 16 KiB (over by 27.1 KiB): arena 39.1 KiB, stack 4 KiB" in e.message
    assert "a board that fits: nucleo-f446re" in e.hint
    check_manifest_fits(manifest, load_board("stm32"), placement(load_board("stm32")))   # fits: no error


def test_placement_is_checked():
    f746 = load_board("nucleo-f746zg")
    assert placement(f746, arena_region="dtcm") == Placement("FLASH", "SRAM", "FLASH", "DTCM")
    with pytest.raises(BoardError, match="bank FLASH of stm32f746zg is flash, not ram") as info:
        placement(f746, arena_region="FLASH")
    assert "ITCM, DTCM, SRAM" in info.value.hint
    with pytest.raises(BoardError, match="has no bank 'CCM'"):
        placement(f746, arena_region="CCM")
    placement(load_board("netduinoplus2"), arena_region="CCM")          # the real F405 has it ...
    with pytest.raises(BoardError, match="does not emulate CCM"):       # ... QEMU does not
        placement(load_board("netduinoplus2"), arena_region="CCM", emulated=True)


@needs_arm
def test_without_pyelftools_the_sections_come_from_objdump(tmp_path, monkeypatch):
    from microcompile.project import elf
    board = load_board("stm32")
    out = generate(write_artifact(tmp_path / "a"), board, tmp_path / "p", [benchmark_input((1, 4, 4, 1))])
    build(out, progress=lambda line: None)
    with_elftools = read_elf(out / "firmware.elf")
    monkeypatch.setattr(elf, "have_pyelftools", lambda: False)
    fallback = read_elf(out / "firmware.elf")
    assert fallback.symbols is None
    assert {(s.name, s.addr, s.lma, s.size) for s in fallback.sections} == \
        {(s.name, s.addr, s.lma, s.size) for s in with_elftools.sections}
    report = fit_report(out / "firmware.elf", board, placement(board), out / "build" / "board")
    assert report.fits and report.symbols is None
    assert "install pyelftools (pip install 'microcompile[elf]')" in report.format()
