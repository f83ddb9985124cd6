"""Which kernels' weights mc_init copies from flash to RAM: `--weights-in-ram`.

  off (default)  every constant stays in flash
  auto           on a board whose flash has wait states at its clock (target/cycles.py
                 memory_system: the wait states its platform code programs), as many kernels as
                 the RAM left over takes, hottest first
  BYTES          at most BYTES of them, whatever the wait states (a board that has none gains
                 nothing; the QEMU twins have none)

A kernel is hot when it reads each byte of its constants often: its MACs per constant byte (a
convolution over many pixels reads its filter once per block of pixels; a fully connected layer
reads each weight once and gains least per byte of RAM). Its constants go, whole, to the first
RAM bank with room: the tightly coupled (`fast`) banks first, then the other banks, then the
`ram` bank, which keeps the stack's reserve, the state buffer and RAM_RESERVE free.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..target.board import STACK_BYTES
from ..target.cycles import memory_system
from ..tir.nodes import PACKED_INT4

# Kept free in the `ram` bank beyond the stack and the state: .data and .bss of the runtime, the
# platform and main.c, and the agent's frame buffers (about 3 KiB) in run/profile/tune builds.
RAM_RESERVE = 8192
ALIGN = 8


@dataclass(frozen=True)
class RamWeights:
    """What --weights-in-ram chose: {node name: bank ("" for the `ram` bank)}, the bytes, and
    why nothing was chosen when something was asked for ("" when it was off)."""

    banks: dict
    bytes: int = 0
    reason: str = ""


def _room(board, plan, pin: str | None) -> list[tuple[str, int]]:
    """(bank, free bytes) of each RAM bank that can take copies, in the order they are filled
    ("" names the `ram` bank, whose copies are plain .bss): tightly coupled ones first, the
    `ram` bank last, the others largest first. What the arena leaves (in the bank `pin`
    (--arena-region) or, split, in each bank), and in the `ram` bank the stack's reserve, the
    state buffer and RAM_RESERVE. Not a bank at address 0 (no C object may sit there: the
    Cortex-M7's ITCM), nor one the board's QEMU twin does not emulate (its builds could not
    link)."""
    mcu = board.mcu
    if mcu.ram is None or board.is_host:
        return []
    split = getattr(plan, "bank_bytes", {}) or {}
    arena_bank = pin or mcu.ram.name
    unmapped = set(board.emulator.unmapped) if board.emulator is not None else set()
    out = []
    for b in sorted((b for b in mcu.banks if b.kind == "ram"),
                    key=lambda b: (not b.fast, b.name == mcu.ram.name, -b.size, b.name)):
        if b.origin == 0 or b.name in unmapped:
            continue
        free = b.size - split.get(b.name, 0) - (plan.arena_bytes if b.name == arena_bank else 0)
        if b.name == mcu.ram.name:
            free -= plan.state_bytes + STACK_BYTES + RAM_RESERVE
        if free > 0:
            out.append(("" if b.name == mcu.ram.name else b.name, free))
    return out


def _const_bytes(f) -> int:
    return sum(-(-b.nbytes // ALIGN) * ALIGN for b in f.buffers if b.scope == "const" and b.dtype != PACKED_INT4)


def choose(kernels, plan, board, mode, pin: str | None = None) -> RamWeights:
    """The kernels (node, func, trace) whose constants go to RAM under `mode`; `pin`: the bank
    --arena-region put the arena in."""
    if mode == "off":
        return RamWeights({})
    room = _room(board, plan, pin)
    if not room:
        return RamWeights({}, 0, f"{board.name} has no RAM bank to copy weights to")
    wait = memory_system(board).flash_wait_states
    if mode == "auto" and wait == 0:
        return RamWeights({}, 0, f"{board.name}'s flash has no wait states at its clock: nothing to gain")
    budget = sum(free for _, free in room) if mode == "auto" else min(int(mode), sum(free for _, free in room))
    hot = sorted(((int(f.attrs.get("macs", 0)) / max(_const_bytes(f), 1), n.name, _const_bytes(f))
                  for n, f, _ in kernels if _const_bytes(f)), key=lambda h: (-h[0], h[1]))
    left = dict(room)
    chosen, total = {}, 0
    for _, name, size in hot:
        if total + size > budget:
            continue
        bank = next((b for b, free in room if left[b] >= size), None)
        if bank is None:
            continue
        left[bank] -= size
        chosen[name] = bank
        total += size
    return RamWeights(chosen, total, "" if chosen else "no kernel's constants fit the RAM left")
