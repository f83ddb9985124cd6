"""What an export is asked to write."""

from __future__ import annotations

from dataclasses import dataclass

# The library formats, in the order `export --help` lists them.
FORMATS = ("cmake", "make", "lib", "arduino", "zephyr", "cmsis-pack")


@dataclass(frozen=True)
class ExportOptions:
    """`format` (FORMATS); `bsp`: the board support (startup, linker script, console, cycle
    counter) as its own target, for users who start from nothing; `emulate`: that board
    support is the QEMU twin's."""

    format: str = "cmake"
    bsp: bool = False
    emulate: bool = False
