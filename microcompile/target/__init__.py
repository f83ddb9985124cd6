"""Targets and boards, loaded from the layered TOML data in boards/."""

from microcompile.target.board import (Bank, Board, Emulator, Mcu, McuDebug, Probe, Region, Target, list_boards,
                                       load_board)

__all__ = ["Bank", "Board", "Emulator", "Mcu", "McuDebug", "Probe", "Region", "Target", "list_boards", "load_board"]
