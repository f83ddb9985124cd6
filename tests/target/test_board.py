"""The board database: every board loads, the layering holds (each fact in its own layer, stated
once), the derived clock values agree with their arithmetic, twins can run their boards' firmware."""

import shutil
import tomllib

import pytest

from microcompile.errors import BoardError, UserError
from microcompile.resources import resource_dir
from microcompile.schedule import kernel_set
from microcompile.target import Board, list_boards, load_board
from microcompile.target import board as board_mod

BOARDS = ["host", "microbit", "mps2-an385", "mps2-an386", "mps2-an500", "mps2-an505", "mps3-an547",
          "netduinoplus2", "nrf52840dk", "nucleo-f446re", "nucleo-f746zg", "nucleo-h743zi", "nucleo-l4r5zi",
          "rpi-pico", "stm32f746g-disco"]
EMULATED = ["mps2-an385", "mps2-an386", "mps2-an500", "mps2-an505", "mps3-an547", "netduinoplus2", "microbit"]
CORES = {"cortex-m0", "cortex-m0plus", "cortex-m3", "cortex-m4f", "cortex-m7f", "cortex-m33f", "cortex-m55", "host"}
DATA = resource_dir("boards")


def _toml(path):
    with open(path, "rb") as f:
        return tomllib.load(f)


def test_list_boards():
    assert list_boards() == BOARDS


@pytest.mark.parametrize("name", BOARDS)
def test_every_board_loads_and_its_sources_exist(name):
    board = load_board(name)
    assert isinstance(board, Board) and board.name == name
    sources = list(board.mcu.sources) + (list(board.emulator.sources) if board.emulator else [])
    for src in sources:
        assert (DATA / "src" / src).is_file(), src
    for inc in board.mcu.include_dirs:
        assert (DATA / "src" / inc).is_dir(), inc
    if not board.is_host:
        # banks of one MCU never overlap, and the default banks are of the right kind
        banks = sorted(board.mcu.banks, key=lambda b: b.origin)
        assert all(a.end <= b.origin for a, b in zip(banks, banks[1:])), banks
        assert board.mcu.flash.kind == "flash" and board.mcu.ram.kind == "ram"
        assert board.target.clock_hz > 0 and board.console.get("baud") == 115200


def test_the_issue_lists_every_core_and_mcu():
    assert {p.stem for p in (DATA / "cores").glob("*.toml")} == CORES
    mcus = {p.stem for p in (DATA / "mcus").glob("*.toml")}
    assert {"stm32f405rg", "stm32f446re", "stm32l4r5zi", "stm32f746zg", "stm32h743zi", "nrf52840", "rp2040",
            "mps2-an385", "mps2-an386", "mps2-an500", "mps2-an505", "mps3-an547", "nrf51822"} <= mcus


def test_layering_each_fact_in_its_own_layer():
    """Every file states only its layer's keys; no key of a lower layer appears in a higher one."""
    layers = [("cores", board_mod.CORE_KEYS), ("mcus", board_mod.MCU_KEYS), ("", board_mod.BOARD_KEYS)]
    for sub, keys in layers:
        for path in sorted((DATA / sub).glob("*.toml")):
            assert set(_toml(path)) <= keys, path
    assert not (board_mod.CORE_KEYS - {"name"}) & board_mod.MCU_KEYS
    assert not (board_mod.CORE_KEYS - {"name"}) & board_mod.BOARD_KEYS
    assert not (board_mod.MCU_KEYS - {"name", "platform"}) & board_mod.BOARD_KEYS
    # [platform] facts: an MCU's and its board's never overlap (the loader refuses it too)
    for name in BOARDS:
        b = load_board(name)
        board_keys = set(_toml(DATA / f"{name}.toml").get("platform", {}))
        assert not board_keys & {k for k, _ in b.mcu.defines}, name


def test_a_fact_in_the_wrong_layer_is_refused(tmp_path, monkeypatch):
    root = tmp_path / "boards"
    shutil.copytree(DATA, root)
    monkeypatch.setattr(board_mod, "_boards_dir", lambda: root)
    path = root / "nucleo-f446re.toml"
    path.write_text(path.read_text().replace('mcu = "stm32f446re"', 'mcu = "stm32f446re"\ncflags = ["-O3"]'))
    with pytest.raises(BoardError, match=r"'cflags' is not a fact of a board"):
        load_board("stm32")
    path.write_text(path.read_text().replace('cflags = ["-O3"]', "").replace("[platform]", "[platform]\nhsi_hz = 8"))
    with pytest.raises(BoardError, match="hsi_hz is already stated by MCU stm32f446re"):
        load_board("stm32")


def test_an_mcu_variant_extends_its_base_and_overrides_only_its_part_number():
    zg, ng = load_board("nucleo-f746zg").mcu, load_board("stm32f746g-disco").mcu
    assert ng.banks == zg.banks and ng.sources == zg.sources and ng.debug.chip_id == zg.debug.chip_id == 0x449
    assert (zg.debug.pyocd_target, ng.debug.pyocd_target) == ("stm32f746zgtx", "stm32f746nghx")


# Each family's PLL arithmetic (the comments in the board files show it too).
CLOCK = {
    "stm32f4": lambda d: d["hsi_hz"] // d["pll_m"] * d["pll_n"] // d["pll_p"],
    "stm32f7": lambda d: d["hsi_hz"] // d["pll_m"] * d["pll_n"] // d["pll_p"],
    "stm32l4": lambda d: d["hsi_hz"] // d["pll_m"] * d["pll_n"] // d["pll_r"],
    "stm32h7": lambda d: d["hsi_hz"] // d["pll_m"] * d["pll_n"] // d["pll_p"],
    "rp2040": lambda d: d["xosc_hz"] * d["pll_fbdiv"] // (d["pll_postdiv1"] * d["pll_postdiv2"]),
}


@pytest.mark.parametrize("name", [b for b in BOARDS if b not in EMULATED and b not in ("host", "nrf52840dk")])
def test_derived_clock_values_match_their_arithmetic(name):
    b = load_board(name)
    d = dict(b.defines)
    assert CLOCK[b.mcu.family](d) == b.target.clock_hz == d["clock_hz"]
    if "apb1_div" in d:   # the bus limits the data sheets give
        assert b.target.clock_hz // d["apb1_div"] <= 54_000_000 and b.target.clock_hz // d["apb2_div"] <= 108_000_000


def test_core_features():
    cores = {n: load_board(n).target for n in ("microbit", "rpi-pico", "mps2-an385", "mps2-an386", "mps2-an500",
                                              "mps2-an505", "mps3-an547")}
    for n in ("microbit", "rpi-pico"):   # Armv6-M: no DSP, no SSAT, no DWT cycle counter
        t = cores[n]
        assert t.arch == "armv6-m" and not (t.dsp or t.ssat or t.mve or t.fpu or t.cyccnt)
    assert cores["mps2-an385"].ssat and not cores["mps2-an385"].dsp
    assert cores["mps2-an500"].fpu_kind == "fpv5-d16" and cores["mps2-an505"].fpu_kind == "fpv5-sp-d16"
    assert cores["mps3-an547"].mve and cores["mps3-an547"].dsp and "-mcpu=cortex-m55" in cores["mps3-an547"].cflags
    assert {n: kernel_set(t) for n, t in cores.items()} == {
        "microbit": "c", "rpi-pico": "c", "mps2-an385": "c", "mps2-an386": "dsp", "mps2-an500": "dsp",
        "mps2-an505": "dsp", "mps3-an547": "mve"}
    # the counter each MCU uses is what its core offers
    for name in BOARDS:
        b = load_board(name)
        if not b.is_host and b.emulator is None:
            assert ("DWT" in b.mcu.counter) == b.target.cyccnt, name


def test_alias_stm32_is_nucleo_with_netduino_twin():
    board = load_board("stm32")
    assert board.name == "nucleo-f446re"
    assert board.mcu.flash.origin == 0x08000000 and board.mcu.flash.size == 512 * 1024
    assert board.mcu.ram.origin == 0x20000000 and board.mcu.ram.size == 128 * 1024
    assert board.target.cflags == ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16")
    assert board.target.dsp and board.target.fpu and not board.target.mve
    assert board.target.clock_hz == 168_000_000
    assert board.flash_runners == ("st-flash", "stm32cubeprogrammer", "openocd", "pyocd")
    assert (board.probe.usb_vid, board.probe.usb_pid) == (0x0483, 0x374B)
    emu = board.emulator
    assert (emu.machine, emu.cpu, emu.mcu.name, emu.instructions_per_tick, emu.board) == \
        ("netduinoplus2", "cortex-m4", "stm32f405rg", 1, "netduinoplus2")


@pytest.mark.parametrize("name", [b for b in BOARDS if load_board(b).twin])
def test_a_twin_maps_the_boards_banks(name):
    """The twin build uses the real board's linker script, so the twin must map its banks."""
    board = load_board(name)
    twin = load_board(board.twin)
    assert twin.target.core == board.target.core
    mapped = [b for b in twin.mcu.banks if b.name not in twin.emulator.unmapped]
    for bank in (board.mcu.flash, board.mcu.ram):
        assert any(t.contains(bank) for t in mapped)


def test_emulated_boards():
    for name in EMULATED:
        b = load_board(name)
        assert b.emulator is not None and b.emulator.machine == name
        assert b.emulator_only == (name != "microbit")
    assert load_board("mps2-an386").emulator.instructions_per_tick == 40
    assert load_board("mps2-an505").emulator.instructions_per_tick == 50
    assert load_board("mps3-an547").emulator.instructions_per_tick == 31.25
    assert load_board("microbit").emulator.instructions_per_tick == 62.5
    assert "platform_nrf51_qemu.c" in " ".join(load_board("microbit").emulator.sources)


def test_host_board():
    host = load_board("host")
    assert host.is_host and host.mcu.flash is None and host.emulator is None


def test_unknown_board_lists_known_boards():
    with pytest.raises(BoardError) as info:
        load_board("arduino-uno")
    msg = str(info.value)
    assert "arduino-uno" in msg
    for name in list_boards():
        assert name in msg
    assert "stm32" in msg  # aliases are mentioned too
    assert isinstance(info.value, UserError) and info.value.exit_code == 2


def test_bank_facts_are_checked(tmp_path, monkeypatch):
    """`fast` marks tightly coupled RAM (the multi-bank arena's first choice); a bank's name is
    an identifier, since it names a linker region and an output section."""
    assert [b.name for b in load_board("nucleo-f746zg").mcu.banks if b.fast] == ["DTCM"]
    assert [b.name for b in load_board("nucleo-h743zi").mcu.banks if b.fast] == ["DTCM"]
    assert not any(b.fast for b in load_board("mps2-an386").mcu.banks)
    root = tmp_path / "boards"
    shutil.copytree(DATA, root)
    monkeypatch.setattr(board_mod, "_boards_dir", lambda: root)
    path = root / "mcus" / "stm32f746zg.toml"
    text = path.read_text()
    path.write_text(text.replace("fast = true", 'fast = "yes"'))
    with pytest.raises(BoardError, match="`fast` is true or false"):
        load_board("nucleo-f746zg")
    path.write_text(text.replace('name = "DTCM"', 'name = "D TCM"'))
    with pytest.raises(BoardError, match="bank name 'D TCM' must be an identifier"):
        load_board("nucleo-f746zg")
    path.write_text(text.replace('{ name = "FLASH", kind = "flash",', '{ name = "FLASH", kind = "flash", fast = true,'))
    with pytest.raises(BoardError, match="only a ram bank is fast"):
        load_board("nucleo-f746zg")

