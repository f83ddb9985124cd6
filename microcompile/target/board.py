"""Boards as layered TOML data: boards/cores/*.toml, boards/mcus/*.toml, boards/<board>.toml.

Each fact is stated once: the core holds ISA flags and features, the MCU its memory
map and startup/platform sources (under boards/src/), the board its MCU, clock,
console, flash runners and emulated twin.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from microcompile.errors import BoardError
from microcompile.resources import resource_dir


@dataclass(frozen=True)
class Target:
    """What the compiler needs to know about a core: flags and ISA features."""

    core: str                 # "cortex-m4f", "cortex-m3", "host"
    arch: str                 # "armv7e-m", "armv7-m", "native"
    toolchain: str            # "arm-none-eabi" or "host"
    cflags: tuple[str, ...]
    dsp: bool                 # Armv7E-M DSP extension (SMLAD, SXTB16, ...)
    ssat: bool                # the SSAT/USAT saturating instructions (Armv7-M and later)
    fpu: bool
    mve: bool
    clock_hz: int             # the board's core clock

    @property
    def is_host(self) -> bool:
        return self.toolchain == "host"


@dataclass(frozen=True)
class Region:
    origin: int
    size: int


@dataclass(frozen=True)
class Mcu:
    name: str
    vendor: str
    family: str
    core: str
    sources: tuple[str, ...]       # relative to boards/src/
    include_dirs: tuple[str, ...]  # relative to boards/src/
    flash: Region | None           # None for the host
    ram: Region | None


@dataclass(frozen=True)
class FlashRunner:
    name: str
    command: tuple[str, ...]  # may contain {elf}, {bin}, {hex}

    @property
    def tool(self) -> str:
        return self.command[0]


@dataclass(frozen=True)
class Emulator:
    """A QEMU machine that runs the board's firmware under the real board's memory limits."""

    machine: str
    cpu: str
    mcu: Mcu                  # the twin's MCU: its platform sources are used for emulated builds
    instructions_per_tick: int
    exact: bool
    note: str


@dataclass(frozen=True)
class Board:
    name: str
    aliases: tuple[str, ...]
    description: str
    mcu: Mcu
    target: Target
    console: dict
    flash_runners: tuple[FlashRunner, ...]
    emulator: Emulator | None
    usb: tuple[dict, ...] = ()   # {"vid", "pid"} of the USB serial port its console shows up on

    @property
    def is_host(self) -> bool:
        return self.target.is_host


def _boards_dir() -> Path:
    return resource_dir("boards")


def _read(path: Path) -> dict:
    with open(path, "rb") as f:
        return tomllib.load(f)


def _load_mcu(name: str) -> Mcu:
    path = _boards_dir() / "mcus" / f"{name}.toml"
    if not path.is_file():
        raise BoardError(f"board data refers to unknown MCU {name!r} ({path} is missing)")
    d = _read(path)
    mem = d.get("memory", {})
    region = lambda k: Region(int(mem[k]["origin"]), int(mem[k]["size"])) if k in mem else None  # noqa: E731
    return Mcu(
        name=d["name"], vendor=d["vendor"], family=d["family"], core=d["core"],
        sources=tuple(d["sources"]), include_dirs=tuple(d.get("include_dirs", ())),
        flash=region("flash"), ram=region("ram"),
    )


def _load_target(core: str, clock_hz: int) -> Target:
    path = _boards_dir() / "cores" / f"{core}.toml"
    if not path.is_file():
        raise BoardError(f"board data refers to unknown core {core!r} ({path} is missing)")
    d = _read(path)
    return Target(
        core=d["name"], arch=d["arch"], toolchain=d["toolchain"], cflags=tuple(d["cflags"]),
        dsp=bool(d["dsp"]), ssat=bool(d["ssat"]), fpu=bool(d["fpu"]), mve=bool(d.get("mve", False)),
        clock_hz=clock_hz,
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


def load_board(name: str) -> Board:
    """Load a board by name or alias (e.g. "stm32" -> nucleo-f446re). Unknown -> BoardError."""
    files = _board_files()
    key = _aliases().get(name, name)
    if key not in files:
        known = ", ".join(list_boards())
        aliases = ", ".join(f"{a} -> {b}" for a, b in sorted(_aliases().items()))
        raise BoardError(f"unknown board {name!r}; known boards: {known}",
                         hint=f"aliases: {aliases}" if aliases else None)
    d = _read(files[key])
    mcu = _load_mcu(d["mcu"])
    target = _load_target(mcu.core, int(d["clock_hz"]))
    emulator = None
    if "emulator" in d:
        e = d["emulator"]
        twin = _load_mcu(e["mcu"])
        if twin.core != mcu.core:
            raise BoardError(f"board {key}: twin MCU {twin.name} has core {twin.core}, not {mcu.core}")
        emulator = Emulator(machine=e["machine"], cpu=e["cpu"], mcu=twin,
                            instructions_per_tick=int(e["instructions_per_tick"]),
                            exact=bool(e.get("exact", False)), note=e.get("note", ""))
    runners = tuple(FlashRunner(r["name"], tuple(r["command"])) for r in d.get("flash_runners", []))
    return Board(name=d["name"], aliases=tuple(d.get("aliases", ())), description=d.get("description", ""),
                 mcu=mcu, target=target, console=dict(d.get("console", {})),
                 flash_runners=runners, emulator=emulator,
                 usb=tuple({"vid": int(u["vid"]), "pid": int(u["pid"])} for u in d.get("usb", [])))
