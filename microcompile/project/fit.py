"""Does the firmware fit the board? Flash and RAM use against every memory bank, the largest
symbols, the stack it needs, and, when it does not fit, by how much and what would help.

The figures come from the linked ELF (project/elf.py: section sizes, symbols) and the compiler's
stack figures (project/stack.py). A firmware too big to link is linked a second time against
`linker.measure.ld`, the same script with every bank made large, only to be measured here.
Before any of that, `check_manifest_fits` checks the weights and the arena from the manifest
alone, so a model far too big fails before the C compiler runs.

Where a part of the firmware goes (project/placement.py):

    flash bank (code)     code (.isr_vector .text .ARM.*), rodata, the .data image (data_init)
    flash bank (weights)  weights (.weights: model_weights.c)
    RAM bank (ram)        data, bss, heap reserve, stack (its need, at least the linker's reserve)
    RAM bank (arena)      arena (.arena: the activation arena)
    other RAM banks       arena@BANK (.arena_BANK: a multi-bank arena's part in BANK),
                          weights_ram@BANK (.weights_ram_BANK: weights mc_init copies there)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from microcompile.errors import DoesNotFit
from microcompile.project.elf import ElfImage, read_elf
from microcompile.project.placement import Placement, placement
from microcompile.project.stack import StackNeed, stack_need
from microcompile.target import Bank, Board, list_boards, load_board

CODE_SECTIONS = {".isr_vector": "code", ".text": "code", ".ARM.exidx": "code", ".ARM.extab": "code",
                 ".rodata": "rodata", ".weights": "weights"}
RAM_SECTIONS = {".arena": "arena", ".data": "data", ".bss": "bss", ".heap": "heap", ".stack_reserve": "stack"}
# Which placement field holds each category.
WHERE = {"code": "code", "rodata": "code", "data_init": "code", "weights": "weights", "other_flash": "code",
         "arena": "arena", "data": "ram", "bss": "ram", "heap": "ram", "stack": "ram", "other_ram": "ram"}
FLASH_KEYS = ("code", "weights", "rodata", "data_init", "other_flash")
RAM_KEYS = ("arena", "data", "bss", "stack", "heap", "other_ram")
TOP_SYMBOLS = 10
# Before building, the code size is unknown; a board is suggested only if it also has room for
# this much code (the runtime and kernels of a small model; KWS needs about 12 KiB).
CODE_ESTIMATE = 16 * 1024


def kib(n: int) -> str:
    return f"{n / 1024:.1f} KiB" if n % 1024 else f"{n // 1024} KiB"


@dataclass
class FitReport:
    board: str
    needs: dict[str, int]                      # bytes per category (FLASH_KEYS, RAM_KEYS)
    where: Placement
    banks: list[dict]                          # per bank: name, kind, size, used, free, items
    stack: StackNeed | None = None
    stack_reserve: int = 0
    stack_measured: int | None = None          # painted-stack figure from a run, when there was one
    symbols: list[dict] | None = None          # the largest symbols (None without pyelftools)
    problems: list[str] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)
    estimated: bool = False                    # from the manifest only (no code, no stack figure)

    @property
    def fits(self) -> bool:
        return not self.problems

    def to_json(self) -> dict:
        return {"board": self.board, "fits": self.fits, "estimated": self.estimated,
                "flash": {k: self.needs.get(k, 0) for k in FLASH_KEYS},
                "ram": {k: self.needs.get(k, 0) for k in RAM_KEYS + _bank_keys(self.needs)},
                "placement": self.where.to_json(), "banks": self.banks,
                "stack": {**(self.stack.to_json() if self.stack else {"bytes": None}),
                          "reserve": self.stack_reserve, "measured": self.stack_measured},
                "largest_symbols": self.symbols, "problems": self.problems, "hints": self.hints}

    def format(self) -> str:
        flash = "  ".join(f"{k} {self.needs.get(k, 0):,}" for k in FLASH_KEYS if self.needs.get(k))
        ram = "  ".join(f"{k} {self.needs.get(k, 0):,}" for k in RAM_KEYS + _bank_keys(self.needs) if self.needs.get(k))
        lines = [f"fit on {self.board}: " + ("fits" if self.fits else "DOES NOT FIT"),
                 f"  flash use   {flash}", f"  RAM use     {ram}"]
        for b in self.banks:
            items = ", ".join(f"{k} {v:,}" for k, v in b["items"].items() if v)
            pct = 100.0 * b["used"] / b["size"] if b["size"] else 0.0
            lines.append(f"  {b['name']:<8} {b['kind']:<5} {b['used']:>10,} / {b['size']:>10,} B ({pct:5.1f} %)"
                         + (f"  {items}" if items else ""))
        if self.stack is not None:
            s = self.stack
            need = f"{s.bytes:,} B" if s.bytes is not None else "unknown"
            measured = f", {self.stack_measured:,} B measured" if self.stack_measured else ""
            lines.append(f"  stack       {need} needed (static call graph{measured}; reserve {self.stack_reserve:,} B)"
                         + (f" via {' > '.join(s.path[:6])}" if s.path else ""))
            if s.external:
                lines.append(f"              assumed {len(s.external)} library functions at most 64 B each: "
                             + ", ".join(s.external[:8]) + (" ..." if len(s.external) > 8 else ""))
        if self.symbols:
            lines.append("  largest symbols: " + ", ".join(f"{s['name']} {s['size']:,}" for s in self.symbols))
        elif self.symbols is None and not self.estimated:
            lines.append("  largest symbols: install pyelftools (pip install 'microcompile[elf]') to list them")
        for p in self.problems:
            lines.append(f"  does not fit: {p}")
        for h in self.hints:
            lines.append(f"  would help: {h}")
        return "\n".join(lines)


def _bank_keys(needs: dict[str, int]) -> tuple[str, ...]:
    """The needs in other RAM banks: a multi-bank arena's "arena@BANK", the copied weights'
    "weights_ram@BANK"."""
    return tuple(sorted(k for k in needs if "@" in k))


def _bank_usage(board: Board, needs: dict[str, int], where: Placement) -> dict[str, dict[str, int]]:
    usage: dict[str, dict[str, int]] = {b.name: {} for b in board.mcu.banks}
    for key, n in needs.items():
        if n:
            item, bank = key.split("@", 1) if "@" in key else (key, getattr(where, WHERE[key]))
            usage.setdefault(bank, {})[item] = usage.get(bank, {}).get(item, 0) + n
    return usage


def _overflows(board: Board, needs: dict[str, int], where: Placement) -> list[tuple[Bank, int, dict[str, int]]]:
    out = []
    for name, items in _bank_usage(board, needs, where).items():
        bank = board.mcu.bank(name)
        used = sum(items.values())
        if used > bank.size:
            out.append((bank, used, items))
    return out


def _hints(board: Board, needs: dict[str, int], where: Placement, widened_bytes: int) -> list[str]:
    """What would make it fit: another bank for the arena or the weights, int8 weights, or the
    smallest known board on which the same needs fit."""
    hints = []
    over = {b.name for b, _, _ in _overflows(board, needs, where)}
    if where.arena in over and needs.get("arena"):
        for b in board.mcu.banks:
            if b.kind == "ram" and b.name != where.arena:
                trial = Placement(where.code, where.ram, where.weights, b.name, where.stack_bytes, where.heap_bytes)
                if not _overflows(board, needs, trial):
                    hints.append(f"--arena-region {b.name} ({kib(b.size)} {b.note or 'RAM'})")
    arena_banks = {where.arena, *where.arena_banks}
    if arena_banks & over and needs.get("arena"):
        hints.append(_split_hint(board, needs, where))
    if where.weights in over and needs.get("weights"):
        for b in board.mcu.banks:
            if b.kind == "flash" and b.name != where.weights:
                trial = Placement(where.code, where.ram, b.name, where.arena, where.stack_bytes, where.heap_bytes)
                if not _overflows(board, needs, trial):
                    hints.append(f"--weights-region {b.name} ({kib(b.size)} {b.note or 'flash'})")
    if widened_bytes and where.weights in over:
        hints.append(f"int8 instead of widened weights: {kib(widened_bytes)} of the weights are int16 copies made "
                     "for the DSP kernels; keeping them int8 would save that much flash (no option selects it yet)")
    smallest = smallest_board_that_fits(_one_arena(needs), exclude=board.name)
    if smallest is not None:
        name, flag = smallest
        hints.append(f"a board that fits: {name}" + (f" with {flag}" if flag else "")
                     + " (the smallest known one, estimated from these sizes)")
    elif over:
        hints.append("no known board fits it: a smaller model (fewer channels or layers), or quantize it to int8")
    return hints


def _one_arena(needs: dict[str, int]) -> dict[str, int]:
    """`needs` with a multi-bank arena counted as one (for another board's banks)."""
    out = {k: v for k, v in needs.items() if "@" not in k}
    out["arena"] = needs.get("arena", 0) + sum(v for k, v in needs.items() if "@" in k)
    return out


def _split_hint(board: Board, needs: dict[str, int], where: Placement) -> str:
    """The banks the compiler may split the arena over, their room, and the arena's need."""
    rooms = []
    for b in board.mcu.banks:
        if b.kind == "ram":
            shared = sum(v for k, v in needs.items() if k in ("data", "bss", "heap", "stack") and where.ram == b.name)
            rooms.append(f"{b.name} {kib(b.size)}" + (f" ({kib(max(b.size - shared, 0))} after the stack and .bss)"
                                                       if shared else ""))
    arena = _one_arena(needs)["arena"]
    have = f"its RAM banks are {', '.join(rooms)}" if len(rooms) > 1 else f"its one RAM bank is {rooms[0]}"
    return (f"the arena ({kib(arena)}) is split over a board's RAM banks when one does not hold it "
            f"(without --arena-region), and {board.name} cannot hold it so: {have}; a board with more RAM, "
            f"a RAM bank the chip has that "
            f"boards/mcus/{board.mcu.name}.toml does not declare yet, or a smaller model")


def smallest_board_that_fits(needs: dict[str, int], exclude: str = "") -> tuple[str, str] | None:
    """(board, flag) of the board with the least memory on which `needs` fit with its default
    placement, or with the arena moved to another RAM bank (flag `--arena-region X`)."""
    best = None
    for name in list_boards():
        if name == exclude:
            continue
        b = load_board(name)
        if b.is_host or not b.mcu.banks:
            continue
        default = placement(b)
        trials = [(default, "")] + [
            (Placement(default.code, default.ram, default.weights, r.name), f"--arena-region {r.name}")
            for r in b.mcu.banks if r.kind == "ram" and r.name != default.arena]
        for where, flag in trials:
            if not _overflows(b, needs, where):
                size = b.mcu.flash_bytes + b.mcu.ram_bytes
                if best is None or size < best[0]:
                    best = (size, name, flag)
                break
    return (best[1], best[2]) if best else None


def _report(board: Board, needs: dict[str, int], where: Placement, widened_bytes: int,
            hint_needs: dict[str, int] | None = None, **kw) -> FitReport:
    usage = _bank_usage(board, needs, where)
    banks = []
    for b in board.mcu.banks:
        items = usage.get(b.name, {})
        used = sum(items.values())
        banks.append({"name": b.name, "kind": b.kind, "origin": b.origin, "size": b.size, "used": used,
                      "free": b.size - used, "items": items})
    problems = []
    for bank, used, items in _overflows(board, needs, where):
        parts = ", ".join(f"{k} {kib(v)}" for k, v in sorted(items.items(), key=lambda kv: -kv[1]))
        problems.append(f"{bank.kind} bank {bank.name} needs {kib(used)}, {board.name} has {kib(bank.size)} "
                        f"(over by {kib(used - bank.size)}): {parts}")
    report = FitReport(board.name, needs, where, banks, problems=problems, **kw)
    if problems:
        report.hints = _hints(board, hint_needs or needs, where, widened_bytes)
    return report


def check_manifest_fits(manifest: dict, board: Board, where: Placement, widened_bytes: int = 0) -> None:
    """Before building: BoardError when the weights, the arena or the state buffer (with the
    stack reserve, when they share a bank) cannot fit their banks, whatever the code turns out
    to be."""
    # A recurrent model's state buffer is a static array of model.c: it lands in .bss.
    needs = {"weights": int(manifest["weights_bytes"]), "arena": int(manifest["arena_bytes"]),
             "bss": int(manifest.get("state_bytes", 0)), "stack": where.stack_bytes,
             **{f"arena@{b}": int(n) for b, n in manifest.get("arena_banks", {}).items()}}
    for b, n in manifest.get("ram_weights", {}).get("banks", {}).items():   # --weights-in-ram
        key = f"weights_ram@{b}" if b else "bss"
        needs[key] = needs.get(key, 0) + int(n)
    report = _report(board, needs, where, widened_bytes, hint_needs={**needs, "code": CODE_ESTIMATE}, estimated=True)
    if not report.fits:
        raise FitError(report, manifest.get("model", "model"))


class FitError(DoesNotFit):
    """The firmware does not fit the board; `report` says where, by how much and what would help."""

    def __init__(self, report: FitReport, model: str):
        lines = [f"{model!r} does not fit {report.board}" + (" (from the manifest, before building)"
                                                            if report.estimated else "")]
        lines += [f"  {p}" for p in report.problems]
        super().__init__("\n".join(lines), hint="; ".join(report.hints) or None)
        self.report = report


def _section_needs(image: ElfImage, board: Board, where: Placement | None) -> dict[str, int]:
    """Bytes per category from the ELF's sections; sections the linker script does not name are
    `other_flash` or `other_ram` by the kind of bank their address is in."""
    needs = {k: 0 for k in FLASH_KEYS + RAM_KEYS}
    where_banks = set(where.arena_banks) if where is not None else set()
    for s in image.sections:
        if s.name.startswith(".arena_") and s.name[len(".arena_"):] in where_banks:
            needs[f"arena@{s.name[len('.arena_'):]}"] = s.size
        elif s.name.startswith(".weights_ram_") and s.name[len(".weights_ram_"):] in where_banks:
            needs[f"weights_ram@{s.name[len('.weights_ram_'):]}"] = s.size
        elif s.name in CODE_SECTIONS:
            needs[CODE_SECTIONS[s.name]] += s.size
        elif s.name in RAM_SECTIONS:
            needs[RAM_SECTIONS[s.name]] += s.size
            if s.name == ".data":
                needs["data_init"] += s.size
        else:
            bank = next((b for b in board.mcu.banks if b.origin <= s.addr < b.end), None)
            kind = bank.kind if bank is not None else ("flash" if s.loaded else "ram")
            needs["other_flash" if kind == "flash" else "other_ram"] += s.size
    return needs


def fit_report(elf: str | Path, board: Board, where: Placement | None = None, build_dir: str | Path | None = None,
               widened_bytes: int = 0, stack_measured: int | None = None) -> FitReport:
    """The fit report of a linked firmware. `where` is the placement it was linked with (from the
    project marker; None for a bare ELF: the default placement); `build_dir` the object directory
    whose .ci files give the stack need."""
    image = read_elf(elf)
    stray = []
    if where is None:
        where, stray = _placement_from_addresses(image, board)
    needs = _section_needs(image, board, where)
    reserve = needs["stack"]
    linked = {s.name for s in image.symbols if s.kind == "function"} if image.symbols is not None else None
    stack = stack_need(build_dir, fpu=board.target.fpu, linked=linked) if build_dir is not None else None
    if stack is not None and stack.bytes is not None:
        needs["stack"] = max(reserve, stack.bytes)
    symbols = None
    if image.symbols is not None:
        ranked = sorted(image.symbols, key=lambda s: (-s.size, s.name))[:TOP_SYMBOLS]
        symbols = [{"name": s.name, "size": s.size, "kind": s.kind, "section": s.section} for s in ranked]
    report = _report(board, needs, where, widened_bytes, stack=stack, stack_reserve=reserve,
                     stack_measured=stack_measured, symbols=symbols)
    report.problems += stray
    return report


def _placement_from_addresses(image: ElfImage, board: Board) -> tuple[Placement, list[str]]:
    """The placement a bare ELF was linked with, read from where its sections are; and a problem
    for every section outside all of the board's banks (an ELF for another board)."""
    default = placement(board)
    found, stray = {}, []
    for s in image.sections:
        bank = next((b for b in board.mcu.banks if b.origin <= s.addr and s.addr + s.size <= b.end), None)
        if bank is None:
            stray.append(f"section {s.name} at 0x{s.addr:08X} ({s.size:,} B) lies outside every bank of "
                         f"{board.name}: the ELF was linked for another board")
            continue
        found.setdefault(s.name, bank.name)

    def at(names: tuple[str, ...], default_bank: str) -> str:
        return next((found[n] for n in names if n in found), default_bank)
    return Placement(code=at((".text", ".isr_vector"), default.code), ram=at((".bss", ".data", ".stack_reserve"), default.ram),
                     weights=at((".weights",), default.weights), arena=at((".arena",), default.arena)), stray
