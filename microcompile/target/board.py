"""Boards as layered TOML data: boards/cores/*.toml, boards/mcus/*.toml, boards/<board>.toml.

Each fact is stated once, in the layer it belongs to:

    core   ISA flags and features (dsp, ssat, mve, fpu kind, cyccnt)
    MCU    its core, memory banks, startup/platform sources (under boards/src/), the counter
           it uses, peripheral facts for the platform source ([platform]), debug facts
           (chip id, pyocd/openocd target names), and the flash and cache facts the cycle
           estimate prices ([timing]); `extends` reuses another MCU's facts for a
           variant that differs only in part number and package
    board  its MCU, clock, console UART, debug probe (USB VID/PID), flash runners in order of
           preference, board facts for the platform source ([platform]: PLL set-up, console
           pins), and its emulated twin: an emulated board named by `twin`, or an [emulator]
           table when the board is itself a QEMU machine

Each layer accepts only its own keys, so a fact stated in the wrong layer is an error, and an
MCU's and its board's [platform] keys must not overlap. Both [platform] tables reach the C
compiler as -DMC_<KEY>=<value> (Board.c_defines), with MC_CLOCK_HZ from the board's clock.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from microcompile.errors import BoardError, shown
from microcompile.resources import resource_dir

CORE_KEYS = {"name", "arch", "toolchain", "cflags", "dsp", "ssat", "mve", "mve_float", "fpu", "cyccnt"}
MCU_KEYS = {"name", "extends", "vendor", "family", "core", "counter", "sources", "include_dirs", "code", "ram",
            "memory", "debug", "platform", "timing"}
BOARD_KEYS = {"name", "aliases", "description", "mcu", "clock_hz", "console", "flash_runners", "twin", "probe",
              "platform", "emulator"}
BANK_KEYS = {"name", "kind", "origin", "size", "note", "fast"}
DEBUG_KEYS = {"chip_id", "pyocd_target", "openocd_target", "nrfjprog_family", "uf2_family_id", "uf2_board_id"}
PROBE_KEYS = {"name", "usb_vid", "usb_pid", "openocd_config"}
EMULATOR_KEYS = {"machine", "cpu", "instructions_per_tick", "exact", "note", "sources", "include_dirs", "unmapped"}
BANK_KINDS = ("flash", "ram")
# [timing]: the memory system the cycle estimate prices (microcompile/target/cycles.py)
TIMING_KEYS = {"flash_wait_states", "flash_read_bytes", "cache_lines", "cache_line_bytes", "cache_ways",
               "bus_clock_divider"}
# Stack reserved below the top of the `ram` bank (the linker script's .stack_reserve); TFLM
# peaks at 1340 B on our benchmark models. Here because the compiler's multi-bank placement
# (compiler/compile.py) and the project's linker script (project/placement.py) both count it.
STACK_BYTES = 4096


@dataclass(frozen=True)
class Target:
    """What the compiler needs to know about a core: flags and ISA features."""

    core: str                 # "cortex-m4f", "cortex-m3", "host"
    arch: str                 # "armv7e-m", "armv7-m", "native"
    toolchain: str            # "arm-none-eabi" or "host"
    cflags: tuple[str, ...]
    dsp: bool                 # Armv7E-M DSP extension (SMLAD, SXTB16, ...)
    ssat: bool                # the SSAT/USAT saturating instructions (Armv7-M and later)
    fpu: bool                 # a hardware FPU (fpu_kind says which)
    mve: bool                 # Helium, the M-profile Vector Extension (Armv8.1-M)
    clock_hz: int             # the board's core clock
    fpu_kind: str = "none"    # "none", "fpv4-sp-d16", "fpv5-sp-d16", "fpv5-d16", "host"
    cyccnt: bool = False      # DWT->CYCCNT exists (not on Armv6-M)
    mve_float: bool = False   # Helium's floating-point vectors (MVE-F; false for a core built +nomve.fp)

    @property
    def is_host(self) -> bool:
        return self.toolchain == "host"


@dataclass(frozen=True)
class Bank:
    """One memory bank of an MCU: the linker script has one MEMORY region per bank."""

    name: str                 # also the linker region name: "FLASH", "DTCM", ...
    kind: str                 # "flash" (non-volatile, code and constants) or "ram"
    origin: int
    size: int
    note: str = ""
    fast: bool = False        # tightly coupled RAM (DTCM): the planner's first choice for hot buffers

    @property
    def end(self) -> int:
        return self.origin + self.size

    def contains(self, other: Bank) -> bool:
        return self.origin <= other.origin and other.end <= self.end


Region = Bank   # the name before memory banks


@dataclass(frozen=True)
class McuDebug:
    """How debug tools name and identify the chip."""

    chip_id: int | None = None          # STM32 DBGMCU_IDCODE.DEV_ID, as st-info / STM32CubeProgrammer report it
    pyocd_target: str | None = None
    openocd_target: str | None = None   # an OpenOCD target/*.cfg
    nrfjprog_family: str | None = None  # "NRF51", "NRF52"
    uf2_family_id: int | None = None
    uf2_board_id: str | None = None     # the Board-ID its UF2 drive's INFO_UF2.TXT names


@dataclass(frozen=True)
class Mcu:
    name: str
    vendor: str
    family: str
    core: str
    sources: tuple[str, ...]       # relative to boards/src/
    include_dirs: tuple[str, ...]  # relative to boards/src/
    banks: tuple[Bank, ...] = ()
    code_bank: str | None = None   # holds code, constants (and, by default, weights)
    ram_bank: str | None = None    # holds data, bss, the stack (and, by default, the arena)
    counter: str = ""              # the cycle counter the platform source uses
    debug: McuDebug = field(default_factory=McuDebug)
    defines: tuple[tuple[str, int], ...] = ()   # [platform]: -DMC_<KEY>=<value>
    timing: tuple[tuple[str, int], ...] = ()    # [timing]: flash and cache facts for the cycle estimate

    def bank(self, name: str) -> Bank:
        for b in self.banks:
            if b.name.lower() == name.lower():
                return b
        known = ", ".join(b.name for b in self.banks) or "none"
        raise BoardError(f"{self.name} has no memory bank {name!r}; its banks: {known}")

    @property
    def flash(self) -> Bank | None:
        return self.bank(self.code_bank) if self.code_bank else None

    @property
    def ram(self) -> Bank | None:
        return self.bank(self.ram_bank) if self.ram_bank else None

    @property
    def flash_bytes(self) -> int:
        return sum(b.size for b in self.banks if b.kind == "flash")

    @property
    def ram_bytes(self) -> int:
        return sum(b.size for b in self.banks if b.kind == "ram")


@dataclass(frozen=True)
class Probe:
    """The debug probe on (or made for) the board."""

    name: str
    usb_vid: int | None = None
    usb_pid: int | None = None
    openocd_config: tuple[str, ...] = ()   # the -f files that reach this board through this probe


@dataclass(frozen=True)
class Emulator:
    """A QEMU machine that runs the board's firmware under the real board's memory limits."""

    machine: str
    cpu: str
    mcu: Mcu                  # the MCU QEMU emulates (its memory map must hold the board's banks)
    instructions_per_tick: float
    exact: bool
    note: str
    board: str = ""           # the emulated board these facts come from
    sources: tuple[str, ...] = ()        # the twin's platform sources (default: its MCU's)
    include_dirs: tuple[str, ...] = ()
    unmapped: tuple[str, ...] = ()       # banks of `mcu` that QEMU does not map
    defines: tuple[tuple[str, int], ...] = ()

    def c_defines(self) -> list[str]:
        return c_defines(self.defines)


@dataclass(frozen=True)
class Board:
    name: str
    aliases: tuple[str, ...]
    description: str
    mcu: Mcu
    target: Target
    console: dict
    flash_runners: tuple[str, ...]   # names, in order of preference (project/flash_runners.py)
    emulator: Emulator | None
    probe: Probe | None = None
    twin: str | None = None          # the emulated board that is this board's twin, if another
    defines: tuple[tuple[str, int], ...] = ()   # MC_CLOCK_HZ, the MCU's and the board's [platform]

    @property
    def is_host(self) -> bool:
        return self.target.is_host

    @property
    def emulator_only(self) -> bool:
        """A QEMU machine with no real counterpart to flash (an FPGA image, netduinoplus2)."""
        return self.emulator is not None and not self.flash_runners and self.twin is None

    def c_defines(self) -> list[str]:
        return c_defines(self.defines)


def c_defines(defines) -> list[str]:
    """-DMC_<KEY>=<value>: addresses (keys ending in _base) in hex, the rest in decimal;
    unsigned, so that a value above INT32_MAX stays a 32-bit constant."""
    return [f"-DMC_{k.upper()}=" + (f"0x{v:08X}u" if k.endswith("_base") else f"{v}u") for k, v in defines]


def _boards_dir() -> Path:
    return resource_dir("boards")


def _read(path: Path) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise BoardError(f"{path} is not valid TOML: {e}") from None


def _check_keys(path: Path, d: dict, allowed: set[str], layer: str, required=()) -> None:
    unknown = sorted(set(d) - allowed)
    if unknown:
        raise BoardError(f"{path}: {', '.join(map(repr, unknown))} is not a fact of a {layer}",
                         hint=f"a {layer} states only: {', '.join(sorted(allowed))} (boards/README.md)")
    missing = [k for k in required if k not in d]
    if missing:
        raise BoardError(f"{path}: a {layer} must state {', '.join(missing)}")


def _defines(path: Path, table: dict) -> tuple[tuple[str, int], ...]:
    for k, v in table.items():
        if not isinstance(v, int) or isinstance(v, bool):
            raise BoardError(f"{path}: [platform] {k} = {v!r}: platform values are integers (C defines)")
    return tuple(sorted(table.items()))


def _timing(path: Path, table: dict) -> tuple[tuple[str, int], ...]:
    _check_keys(path, table, TIMING_KEYS | {"note"}, "MCU [timing] table")
    values = {k: v for k, v in table.items() if k != "note"}
    for k, v in values.items():
        if not isinstance(v, int) or isinstance(v, bool) or v < 0:
            raise BoardError(f"{path}: [timing] {k} = {v!r}: timing values are counts (integers >= 0)")
    return tuple(sorted(values.items()))


def _mcu_dict(name: str, seen: tuple[str, ...] = ()) -> tuple[Path, dict]:
    """An MCU's TOML, with `extends` resolved: the variant's keys replace the base's, and its
    [debug] and [platform] tables update the base's."""
    path = _boards_dir() / "mcus" / f"{name}.toml"
    if not path.is_file():
        raise BoardError(f"board data refers to unknown MCU {name!r} ({path} is missing)")
    d = _read(path)
    _check_keys(path, d, MCU_KEYS, "MCU", () if "extends" in d else ("name", "vendor", "family", "core", "sources"))
    if "extends" not in d:
        return path, d
    base_name = d["extends"]
    if base_name in seen + (name,):
        raise BoardError(f"{path}: `extends` makes a cycle ({' -> '.join(seen + (name, base_name))})")
    _, base = _mcu_dict(base_name, seen + (name,))
    merged = {**base, **{k: v for k, v in d.items() if k not in ("debug", "platform", "extends")}}
    for table in ("debug", "platform", "timing"):
        if table in base or table in d:
            merged[table] = {**base.get(table, {}), **d.get(table, {})}
    return path, merged


def _load_mcu(name: str) -> Mcu:
    path, d = _mcu_dict(name)
    banks = []
    for m in d.get("memory", []):
        _check_keys(path, m, BANK_KEYS, "memory bank", ("name", "kind", "origin", "size"))
        if m["kind"] not in BANK_KINDS:
            raise BoardError(f"{path}: bank {m['name']} has kind {m['kind']!r}; kinds: {', '.join(BANK_KINDS)}")
        if not m["name"].isidentifier() or not m["name"].isascii():
            raise BoardError(f"{path}: bank name {m['name']!r} must be an identifier (it names a linker region)")
        if not isinstance(m.get("fast", False), bool) or (m.get("fast") and m["kind"] != "ram"):
            raise BoardError(f"{path}: bank {m['name']}: `fast` is true or false, and only a ram bank is fast")
        banks.append(Bank(m["name"], m["kind"], int(m["origin"]), int(m["size"]), m.get("note", ""),
                          m.get("fast", False)))
    debug = d.get("debug", {})
    _check_keys(path, debug, DEBUG_KEYS, "MCU [debug] table")
    mcu = Mcu(name=d["name"], vendor=d["vendor"], family=d["family"], core=d["core"],
              sources=tuple(d["sources"]), include_dirs=tuple(d.get("include_dirs", ())),
              banks=tuple(banks), code_bank=d.get("code"), ram_bank=d.get("ram"), counter=d.get("counter", ""),
              debug=McuDebug(**debug), defines=_defines(path, d.get("platform", {})),
              timing=_timing(path, d.get("timing", {})))
    if banks:
        if mcu.code_bank is None or mcu.ram_bank is None:
            raise BoardError(f"{path}: an MCU with memory banks names its `code` and `ram` banks")
        if mcu.flash.kind != "flash" or mcu.ram.kind != "ram":
            raise BoardError(f"{path}: `code` must name a flash bank and `ram` a ram bank")
    return mcu


def _load_target(core: str, clock_hz: int) -> Target:
    path = _boards_dir() / "cores" / f"{core}.toml"
    if not path.is_file():
        raise BoardError(f"board data refers to unknown core {core!r} ({path} is missing)")
    d = _read(path)
    _check_keys(path, d, CORE_KEYS, "core", sorted(CORE_KEYS))
    if d["mve_float"] and not (d["mve"] and d["fpu"] != "none"):
        raise BoardError(f"{path}: mve_float (Helium's float vectors) needs mve = true and an fpu")
    return Target(
        core=d["name"], arch=d["arch"], toolchain=d["toolchain"], cflags=tuple(d["cflags"]),
        dsp=bool(d["dsp"]), ssat=bool(d["ssat"]), fpu=d["fpu"] != "none", mve=bool(d["mve"]),
        clock_hz=clock_hz, fpu_kind=d["fpu"], cyccnt=bool(d["cyccnt"]),
        mve_float=bool(d["mve_float"]),
    )


def _board_files() -> dict[str, Path]:
    return {p.stem: p for p in sorted(_boards_dir().glob("*.toml"))}


def _aliases() -> dict[str, str]:
    table = {}
    for name, path in _board_files().items():
        for alias in _read(path).get("aliases", []):
            table[alias] = name
    return table


def list_boards() -> list[str]:
    """Names of all known boards, sorted (aliases not included)."""
    return sorted(_board_files())


def _own_emulator(path: Path, d: dict, mcu: Mcu) -> Emulator:
    e = d["emulator"]
    _check_keys(path, e, EMULATOR_KEYS, "board [emulator] table", ("machine", "cpu", "instructions_per_tick"))
    for bank in e.get("unmapped", []):
        mcu.bank(bank)
    defines = (("clock_hz", int(d["clock_hz"])),) + mcu.defines + _defines(path, d.get("platform", {}))
    return Emulator(machine=e["machine"], cpu=e["cpu"], mcu=mcu, instructions_per_tick=e["instructions_per_tick"],
                    exact=bool(e.get("exact", False)), note=e.get("note", ""), board=d["name"],
                    sources=tuple(e.get("sources", mcu.sources)),
                    include_dirs=tuple(e.get("include_dirs", mcu.include_dirs)),
                    unmapped=tuple(e.get("unmapped", ())), defines=tuple(sorted(defines)))


def _twin_emulator(path: Path, d: dict, mcu: Mcu) -> Emulator:
    """The emulator of the emulated board `d["twin"]`, checked to run this board's firmware:
    the same core, and the board's code and RAM banks inside mapped banks of the twin."""
    twin = load_board(d["twin"])
    if twin.emulator is None or twin.twin is not None:
        raise BoardError(f"{path}: twin {d['twin']!r} is not an emulated board (it has no [emulator] table)")
    if twin.mcu.core != mcu.core:
        raise BoardError(f"{path}: twin {twin.name} has core {twin.mcu.core}, this board {mcu.core}")
    mapped = [b for b in twin.mcu.banks if b.name not in twin.emulator.unmapped]
    for bank in (mcu.flash, mcu.ram):
        if not any(t.contains(bank) for t in mapped):
            raise BoardError(f"{path}: twin {twin.name} maps no memory at {bank.name} "
                             f"0x{bank.origin:08X}..0x{bank.end:08X}")
    return twin.emulator


def load_board(name: str) -> Board:
    """Load a board by name or alias (e.g. "stm32" -> nucleo-f446re). Unknown -> BoardError."""
    files = _board_files()
    key = _aliases().get(name, name)
    if key not in files:
        known = ", ".join(list_boards())
        aliases = ", ".join(f"{a} -> {b}" for a, b in sorted(_aliases().items()))
        raise BoardError(f"unknown board {shown(name)!r}; known boards: {known}",
                         hint=f"aliases: {aliases}" if aliases else None)
    path = files[key]
    d = _read(path)
    _check_keys(path, d, BOARD_KEYS, "board", ("name", "mcu", "clock_hz"))
    if "emulator" in d and "twin" in d:
        raise BoardError(f"{path}: a board is either emulated ([emulator]) or has a `twin`, not both")
    mcu = _load_mcu(d["mcu"])
    target = _load_target(mcu.core, int(d["clock_hz"]))
    board_defines = _defines(path, d.get("platform", {}))
    clash = sorted({k for k, _ in board_defines} & {k for k, _ in mcu.defines})
    if clash:
        raise BoardError(f"{path}: [platform] {', '.join(clash)} is already stated by MCU {mcu.name}")
    emulator = None
    if "emulator" in d:
        emulator = _own_emulator(path, d, mcu)
    elif "twin" in d:
        emulator = _twin_emulator(path, d, mcu)
    probe = None
    if "probe" in d:
        _check_keys(path, d["probe"], PROBE_KEYS, "board [probe] table", ("name",))
        p = d["probe"]
        probe = Probe(p["name"], p.get("usb_vid"), p.get("usb_pid"), tuple(p.get("openocd_config", ())))
    runners = d.get("flash_runners", [])
    if any(not isinstance(r, str) for r in runners):
        raise BoardError(f"{path}: flash_runners lists runner names, e.g. [\"st-flash\", \"openocd\"]")
    return Board(name=d["name"], aliases=tuple(d.get("aliases", ())), description=d.get("description", ""),
                 mcu=mcu, target=target, console=dict(d.get("console", {})), flash_runners=tuple(runners),
                 emulator=emulator, probe=probe, twin=d.get("twin"),
                 defines=tuple(sorted((("clock_hz", int(d["clock_hz"])),) + mcu.defines + board_defines)))
