import pytest

from microcompile.errors import BoardError, UserError
from microcompile.target import Board, list_boards, load_board


def test_list_boards():
    assert list_boards() == ["host", "mps2-an385", "mps2-an386", "nucleo-f446re"]


@pytest.mark.parametrize("name", ["host", "mps2-an385", "mps2-an386", "nucleo-f446re"])
def test_every_board_loads_and_its_sources_exist(name):
    from microcompile.resources import resource_dir

    board = load_board(name)
    assert isinstance(board, Board) and board.name == name
    mcus = [board.mcu] + ([board.emulator.mcu] if board.emulator else [])
    for mcu in mcus:
        for src in mcu.sources:
            assert (resource_dir("boards") / "src" / src).is_file(), src


def test_alias_stm32_is_nucleo_with_netduino_twin():
    board = load_board("stm32")
    assert board.name == "nucleo-f446re"
    assert board.mcu.flash.origin == 0x08000000 and board.mcu.flash.size == 512 * 1024
    assert board.mcu.ram.origin == 0x20000000 and board.mcu.ram.size == 128 * 1024
    assert board.target.cflags == ("-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16")
    assert board.target.dsp and board.target.fpu and not board.target.mve
    assert board.target.clock_hz == 16_000_000
    assert [r.name for r in board.flash_runners] == ["st-flash", "openocd", "pyocd"]
    emu = board.emulator
    assert (emu.machine, emu.cpu, emu.mcu.name, emu.instructions_per_tick) == ("netduinoplus2", "cortex-m4", "stm32f405rg", 1)
    # the twin must at least hold what the real board's linker script allows
    assert emu.mcu.flash.origin == board.mcu.flash.origin and emu.mcu.flash.size >= board.mcu.flash.size
    assert emu.mcu.ram.origin == board.mcu.ram.origin and emu.mcu.ram.size >= board.mcu.ram.size


def test_mps2_boards():
    m4, m3 = load_board("mps2-an386"), load_board("mps2-an385")
    assert m4.emulator.instructions_per_tick == 40 and m4.emulator.machine == "mps2-an386"
    assert m4.target.dsp and m4.target.fpu
    assert not m3.target.dsp and not m3.target.fpu and "-mfloat-abi=soft" in m3.target.cflags
    assert m3.emulator.cpu == "cortex-m3"


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
