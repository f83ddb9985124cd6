"""Targets and boards, loaded from the layered TOML data in boards/."""

from microcompile.target.board import Board, Emulator, FlashRunner, Mcu, Region, Target, list_boards, load_board

__all__ = ["Board", "Emulator", "FlashRunner", "Mcu", "Region", "Target", "list_boards", "load_board"]
