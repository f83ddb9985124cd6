"""The exact execution profile of a firmware under QEMU, for the cycle estimate: the TCG plugin
in qemu_plugin/mc_profile.c, built here with the host C compiler (cached per source and
compiler), its command-line arguments, and the parser of what it writes.

The plugin starts a new segment each time mc_platform_cycles() is entered, so its segments
are exactly the windows the firmware's own counter measures. The self-test (main.c.j2) reads
the counter around the counted inference, then around each kernel of a third, profiled one;
`selftest_windows` finds those segments and checks each against the counter's figure.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import subprocess
import threading
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from microcompile.errors import DeviceError, ToolchainError
from microcompile.files import tool_arg
from microcompile.project import children
from microcompile.target.cycles import BlockRun, MemorySystem
from microcompile.target.thumb import insn_size

SOURCE = Path(__file__).with_name("qemu_plugin") / "mc_profile.c"
MARK_SYMBOL = "mc_platform_cycles"


def _cache_root() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("microcompile", appauthor=False)) / "qemu-plugin"


_VERSIONS: dict[str, bytes] = {}     # compiler -> its --version, once per process


def plugin_library(cache_root: Path | None = None) -> Path:
    """mc_profile.so, compiled once per plugin source and host compiler (`cc`, or $CC)."""
    cc = os.environ.get("CC", "cc")
    if shutil.which(cc) is None:
        raise ToolchainError(f"the cycle estimate needs a host C compiler ({cc!r} not found) to build its QEMU plugin",
                             hint="install one (sudo apt-get install gcc) or set CC")
    if cc not in _VERSIONS:
        _VERSIONS[cc] = children.run([cc, "--version"], timeout=30).stdout
    key = hashlib.sha256(SOURCE.read_bytes() + _VERSIONS[cc]).hexdigest()[:16]
    lib = (cache_root or _cache_root()) / key / "mc_profile.so"
    if lib.is_file():
        return lib
    lib.parent.mkdir(parents=True, exist_ok=True)
    tmp = lib.with_name(f".mc_profile.{os.getpid()}.{threading.get_ident()}.so")   # tuning jobs are threads
    proc = children.run([cc, "-shared", "-fPIC", "-O2", "-o", str(tmp), str(SOURCE)], timeout=120)
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        err = proc.stderr.decode(errors="replace")[-2000:]
        raise ToolchainError(f"could not build the QEMU profile plugin:\n{err}")
    os.replace(tmp, lib)      # atomic: a parallel build writes the same bytes
    return lib


_LOADS: dict[tuple[str, str], str | None] = {}


def plugin_refused(library: Path, machine: str, cpu: str) -> str | None:
    """Why this QEMU does not load the plugin (another plugin API version than 7.2's, say), or
    None when it does; probed once per process by starting the machine on an empty image,
    which faults at once after the plugins are loaded."""
    key = (str(library), machine)
    if key not in _LOADS:
        if shutil.which("qemu-system-arm") is None:
            raise ToolchainError("qemu-system-arm not found on PATH",
                                 hint="install it: sudo apt-get install qemu-system-arm")
        cmd = ["qemu-system-arm", "-machine", machine, "-cpu", cpu, "-nographic", "-monitor", "none",
               "-plugin", f"{library},out={os.devnull}", "-kernel", os.devnull]
        try:
            err = children.run(cmd, timeout=30).stderr.decode(errors="replace")
        except subprocess.TimeoutExpired:
            err = ""
        lines = [ln for ln in err.splitlines() if "plugin" in ln.lower()]
        _LOADS[key] = lines[0].strip() if lines else None
    return _LOADS[key]


def symbol_address(elf: str | Path, name: str) -> int | None:
    """The address of function `name` in `elf` (without the Thumb bit), from arm-none-eabi-nm."""
    nm = shutil.which("arm-none-eabi-nm")
    if nm is None:
        raise ToolchainError("arm-none-eabi-nm not found", hint="install the Arm toolchain (gcc-arm-none-eabi)")
    out = children.run([nm, tool_arg(elf)], timeout=60).stdout.decode(errors="replace")
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] == name and parts[1] in "Tt":
            return int(parts[0], 16) & ~1
    return None


def plugin_args(library: Path, out: Path, marks: Sequence[int], flash: tuple[int, int] | None,
                mem: MemorySystem) -> list[str]:
    """`-plugin mc_profile.so,out=...`: QEMU splits the option at commas, so no path may hold one."""
    for p in (library, out):
        if "," in str(p):
            raise DeviceError(f"the QEMU plugin path {p} holds a comma, which QEMU's -plugin option cannot take")
    args = [str(library), f"out={out}"]
    args += [f"mark=0x{m:x}" for m in marks]
    if flash is not None:
        args += [f"flash=0x{flash[0]:x}:0x{flash[1]:x}", *mem.plugin_args()]
    return ["-plugin", ",".join(args)]


@dataclass(frozen=True)
class Segment:
    blocks: tuple[BlockRun, ...]

    @property
    def instructions(self) -> int:
        return sum(b.count * len(b.code) for b in self.blocks)

    def code_lines(self, flash: tuple[int, int] | None, line_bytes: int) -> int:
        """Distinct `line_bytes` lines of code in flash that the segment executed."""
        if flash is None:
            return 0
        lines = set()
        for b in self.blocks:
            if b.count and flash[0] <= b.vaddr < flash[1]:
                end = b.vaddr + sum(len(c) for c in b.code)
                lines.update(range(b.vaddr // line_bytes, (end - 1) // line_bytes + 1))
        return len(lines)


class ElfCode:
    """The initial bytes of an ELF32 little-endian image's allocated sections, by address: the
    instructions QEMU translated, read from the firmware itself (QEMU 7.2's plugin reports
    wrong bytes and sizes for an instruction at the end of a page, measured)."""

    def __init__(self, path: str | Path):
        data = Path(path).read_bytes()
        if data[:4] != b"\x7fELF" or data[4] != 1 or data[5] != 1:
            raise DeviceError(f"{path} is not a 32-bit little-endian ELF file")
        shoff, = struct.unpack_from("<I", data, 0x20)
        shentsize, shnum = struct.unpack_from("<HH", data, 0x2E)
        self.sections = []
        for i in range(shnum):
            _, sh_type, flags, addr, offset, size = struct.unpack_from("<IIIIII", data, shoff + i * shentsize)
            if sh_type == 1 and flags & 2 and size:            # SHT_PROGBITS, SHF_ALLOC
                self.sections.append((addr, data[offset:offset + size]))

    def read(self, addr: int, n: int) -> bytes:
        for base, blob in self.sections:
            if base <= addr and addr + n <= base + len(blob):
                return blob[addr - base:addr - base + n]
        raise DeviceError(f"QEMU executed code at 0x{addr:08x}, which no section of the firmware holds")

    def block(self, vaddr: int, n: int) -> tuple[bytes, ...]:
        """The `n` Thumb instructions from `vaddr`."""
        out, addr = [], vaddr
        for _ in range(n):
            size = insn_size(int.from_bytes(self.read(addr, 2), "little"))
            out.append(self.read(addr, size))
            addr += size
        return tuple(out)


def parse_profile(text: str, code_of: ElfCode | None = None, complete: bool = True) -> list[Segment]:
    """The plugin's output as segments of BlockRuns (DeviceError on anything malformed); with
    `code_of`, each block's instructions are read from the firmware instead of the plugin.
    `complete=False` reads the file of a QEMU still running: the segments written so far."""
    if not complete and not text.endswith("\n"):
        text = text[:text.rfind("\n") + 1]          # a line still being written
    code: dict[int, tuple[int, tuple[bytes, ...]]] = {}
    segments: list[Segment] = []
    counts: dict[int, list[int]] | None = None
    ended = False

    def close():
        if counts is not None:
            segments.append(Segment(tuple(BlockRun(code[t][0], code[t][1], *c) for t, c in sorted(counts.items()))))

    try:
        for line in text.splitlines():
            parts = line.split()
            if not parts or parts[0] == "#":
                continue
            tag = parts[0]
            if tag == "B":
                tb, vaddr, n = int(parts[1]), int(parts[2], 16), int(parts[3])
                insns = code_of.block(vaddr, n) if code_of else tuple(bytes.fromhex(h) for h in parts[4:])
                if len(insns) != n:
                    raise ValueError(line)
                code[tb] = (vaddr, insns)
            elif tag == "S":
                close()
                counts = {}
            elif tag == "C":
                tb = int(parts[1])
                if tb not in code:
                    raise ValueError(line)
                counts[tb] = [int(parts[2]), int(parts[3]), int(parts[4]), 0, 0]
            elif tag == "F":
                c = counts[int(parts[1])]
                c[3] += int(parts[3])
                c[4] += int(parts[4])
            elif tag == "E":
                ended = True
            else:
                raise ValueError(line)
    except (ValueError, IndexError, KeyError, TypeError) as e:
        raise DeviceError(f"malformed QEMU profile line: {e}") from None
    if not ended and complete:
        raise DeviceError("the QEMU profile has no end record: QEMU stopped before the plugin wrote it")
    close()
    return segments


@dataclass(frozen=True)
class SelftestWindows:
    """The self-test's measured windows in the plugin's segments."""

    inference: Segment
    kernels: tuple[Segment, ...]


def selftest_windows(segments: list[Segment], n_kernels: int, instructions: int | None,
                     kernel_instructions: list[int] | None, tolerance: int) -> SelftestWindows:
    """The counted inference and each kernel of the profiled inference (main.c.j2: counter
    reads around the second inference, then around each kernel of the third, then none).
    Each is checked against the counter's own figure within `tolerance` instructions."""
    first_kernel = len(segments) - 2 * n_kernels
    counted = first_kernel - 2
    if counted < 1:
        raise DeviceError(f"the QEMU profile has {len(segments)} segments, too few for {n_kernels} kernels")
    inference = segments[counted]
    kernels = tuple(segments[first_kernel + 2 * k] for k in range(n_kernels))
    if instructions is not None and abs(inference.instructions - instructions) > tolerance:
        raise DeviceError(f"the QEMU profile's inference window has {inference.instructions:,} instructions, the "
                          f"firmware's counter {instructions:,}: they should agree within {tolerance}")
    for k, (seg, want) in enumerate(zip(kernels, kernel_instructions or [])):
        if abs(seg.instructions - want) > tolerance:
            raise DeviceError(f"the QEMU profile's window of kernel {k} has {seg.instructions:,} instructions, "
                              f"the firmware's counter {want:,}")
    return SelftestWindows(inference, kernels)


def match_kernels(segments: list[Segment], counts: list[int], tolerance: int) -> tuple[Segment, ...] | None:
    """The last run of len(counts) consecutive segments whose instructions are `counts` (each
    within `tolerance`): the kernels of the latest profiled inference, or None."""
    n = len(counts)
    for start in range(len(segments) - n, -1, -1):
        window = segments[start:start + n]
        if all(abs(seg.instructions - c) <= tolerance for seg, c in zip(window, counts)):
            return tuple(window)
    return None


def profile_dir() -> Path:
    """A fresh private directory for one profile file (no comma in its path)."""
    return Path(tempfile.mkdtemp(prefix="mc-qemu-profile-"))

