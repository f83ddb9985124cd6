"""Which memory bank each part of the firmware goes to (the linker script's regions).

Code, constants and the data image go to the MCU's `code` bank; data, bss, the heap reserve and
the stack to its `ram` bank. The model's weights and its activation arena default to those too,
and may be moved to another bank of the right kind (`--weights-region`, `--arena-region`).
"""

from __future__ import annotations

from dataclasses import dataclass

from microcompile.errors import BoardError
from microcompile.target import Board
from microcompile.target.board import STACK_BYTES
HEAP_BYTES = 0      # nothing in the firmware calls malloc


@dataclass(frozen=True)
class Placement:
    code: str
    ram: str
    weights: str
    arena: str
    stack_bytes: int = STACK_BYTES
    heap_bytes: int = HEAP_BYTES
    arena_banks: tuple[str, ...] = ()   # the other banks of a multi-bank arena (memory/banks.py)

    def to_json(self) -> dict:
        banks = {"arena_banks": list(self.arena_banks)} if self.arena_banks else {}
        return {"code": self.code, "ram": self.ram, "weights": self.weights, "arena": self.arena,
                "stack_reserve_bytes": self.stack_bytes, "heap_reserve_bytes": self.heap_bytes, **banks}


def model_banks(manifest: dict) -> tuple[str, ...]:
    """The banks other than the arena's where model.c puts static arrays (section
    .bss.mc_bank.<BANK>, which the linker script maps): a multi-bank arena's other banks, and
    those of weights copied to RAM (--weights-in-ram)."""
    ram = [b for b in manifest.get("ram_weights", {}).get("banks", {}) if b]
    return tuple(dict.fromkeys([*manifest.get("arena_banks", {}), *sorted(ram)]))


def placement(board: Board, arena_region: str | None = None, weights_region: str | None = None,
              emulated: bool = False, arena_banks=()) -> Placement:
    """The placement for `board`, with the arena and weights moved where asked. A bank that does
    not exist, is of the wrong kind, or (when `emulated`) is not mapped by the board's QEMU twin
    is a BoardError naming the banks that would do. `arena_banks`: the other banks of a
    multi-bank arena (the manifest's "arena_banks"), checked the same way."""
    mcu = board.mcu
    if mcu.flash is None:
        if arena_region or weights_region or arena_banks:
            raise BoardError(f"board {board.name} has no memory banks to choose from")
        return Placement("", "", "", "")

    def pick(name: str | None, kind: str, flag: str, default: str) -> str:
        if name is None:
            return default
        choices = [b.name for b in mcu.banks if b.kind == kind]
        try:
            bank = mcu.bank(name)
        except BoardError:
            raise BoardError(f"{flag} {name}: {mcu.name} has no bank {name!r}",
                             hint=f"{kind} banks of {board.name}: {', '.join(choices)}") from None
        if bank.kind != kind:
            raise BoardError(f"{flag} {name}: bank {bank.name} of {mcu.name} is {bank.kind}, not {kind}",
                             hint=f"{kind} banks of {board.name}: {', '.join(choices)}")
        if emulated and board.emulator is not None:
            mapped = [b for b in board.emulator.mcu.banks if b.name not in board.emulator.unmapped]
            if not any(t.contains(bank) for t in mapped):
                raise BoardError(f"{flag} {name}: QEMU's {board.emulator.machine} does not emulate "
                                 f"{bank.name} (0x{bank.origin:08X})",
                                 hint="drop --emulate to build for the real board, or pick another bank")
        return bank.name

    return Placement(code=mcu.flash.name, ram=mcu.ram.name,
                     weights=pick(weights_region, "flash", "--weights-region", mcu.flash.name),
                     arena=pick(arena_region, "ram", "--arena-region", mcu.ram.name),
                     arena_banks=tuple(pick(b, "ram", "the model's bank", b) for b in arena_banks))
