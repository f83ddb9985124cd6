"""The board database as objects."""

from __future__ import annotations

from ..target import Board, list_boards, load_board


def boards() -> list[Board]:
    """Every board microcompile knows, in name order: core, memory banks, clock, flash runners,
    QEMU twin (`board.emulator`). `microcompile boards` prints the same."""
    return [load_board(name) for name in list_boards()]


def board(name: str) -> Board:
    """The board named `name` (or an alias, e.g. "stm32"); BoardError when unknown."""
    return load_board(name)


def board_info(b: Board) -> dict:
    """What `microcompile boards --json` says of a board (README/docs, "Boards")."""
    from ..schedule import kernel_set

    twin = (b.emulator.board or b.emulator.machine) if b.emulator else None
    return {
        "name": b.name, "aliases": list(b.aliases), "description": b.description, "core": b.target.core,
        "mcu": b.mcu.name, "clock_hz": b.target.clock_hz,
        "flash_bytes": b.mcu.flash_bytes, "ram_bytes": b.mcu.ram_bytes,
        "memory": [{"name": m.name, "kind": m.kind, "origin": m.origin, "size": m.size} for m in b.mcu.banks],
        "kernels": kernel_set(b.target),
        "runners": list(b.flash_runners),
        "probe": ({"name": b.probe.name, "usb_vid": b.probe.usb_vid, "usb_pid": b.probe.usb_pid}
                  if b.probe else None),
        "emulated": b.emulator is not None,
        "emulator_only": b.emulator_only,
        "twin": twin,
        "qemu_machine": b.emulator.machine if b.emulator else None,
        "tested_on_hardware": False,
    }


def flash(firmware, board: str | None = None, probe: str | None = None):
    """Check that a project's firmware (or a firmware.elf) fits its board, and flash it with the
    board's probe (`microcompile flash`); returns what was flashed with which runner."""
    from ..project import flash as flash_project
    return flash_project(firmware, board=board, probe=probe)


def check_link(board: Board, link, agent: bool = True) -> None:
    """Before any work: refuse a link the board cannot have (--emulate without a twin, a port on
    the host, --emulate with --port), and on a real board find its serial port now."""
    from ..deploy import check_target
    check_target(board, link, agent)


def check_build_options(board: Board, options) -> None:
    """Before any work: the memory regions of `options` (BuildOptions) exist on the board and can
    hold what they are asked to (project.placement)."""
    from ..project import placement
    placement(board, options.arena_region, options.weights_region, emulated=options.emulate)
