"""Build a generated project with make, and report its memory use."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from microcompile.errors import BoardError, ToolchainError
from microcompile.escape import say
from microcompile.files import OutputTree, tool_arg
from microcompile.project import children
from microcompile.project.fit import FitError, fit_report
from microcompile.project.generate import read_marker
from microcompile.project.placement import Placement
from microcompile.target import load_board

ARM_INSTALL = "sudo apt-get install gcc-arm-none-eabi libnewlib-arm-none-eabi make"
HOST_INSTALL = "sudo apt-get install build-essential"
_OVERFLOW = re.compile(r"region `(\w+)' overflowed by (\d+) bytes")
_TOOLCHAIN_BROKEN = ("nano.specs", "cannot find -lc", "stdint.h: No such file", "string.h: No such file")
# What make writes in a project: the Makefiles' `clean` targets remove exactly these.
MAKE_OUTPUTS = ("build", "firmware", "firmware.elf", "firmware.bin", "firmware.hex", "firmware.map", "firmware.uf2")


@dataclass(frozen=True)
class SizeReport:
    """Bytes used: flash = text + data (initializers), ram = data + bss (incl. the stack reserve)."""

    text: int
    data: int
    bss: int
    sections: dict[str, int] = field(default_factory=dict)

    @property
    def flash(self) -> int:
        return self.text + self.data

    @property
    def ram(self) -> int:
        return self.data + self.bss


def parse_size_berkeley(output: str) -> tuple[int, int, int]:
    """(text, data, bss) from `size -B -d` output."""
    for line in output.splitlines():
        parts = line.split()
        if len(parts) >= 3 and all(p.isdigit() for p in parts[:3]):
            return int(parts[0]), int(parts[1]), int(parts[2])
    raise ValueError(f"cannot parse size output: {output!r}")


def parse_size_sysv(output: str) -> dict[str, int]:
    """{section: bytes} from `size -A -d` output, non-empty allocated-looking sections only."""
    sections = {}
    for line in output.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[0].startswith(".") and parts[1].isdigit() and int(parts[1]) > 0:
            if not parts[0].startswith((".debug", ".comment", ".ARM.attributes")):
                sections[parts[0]] = int(parts[1])
    return sections


def size_report(binary: str | Path, size_tool: str = "arm-none-eabi-size") -> SizeReport:
    """Run `size` on an ELF and return its SizeReport."""
    berkeley, sysv = (children.run([size_tool, fmt, "-d", tool_arg(binary)], timeout=60, text=True)
                      for fmt in ("-B", "-A"))
    for p in (berkeley, sysv):
        if p.returncode != 0:
            raise ToolchainError(f"{size_tool} failed on {binary} (exit {p.returncode}): {p.stderr.strip()}")
    text, data, bss = parse_size_berkeley(berkeley.stdout)
    return SizeReport(text, data, bss, parse_size_sysv(sysv.stdout))


def _require(tools: list[str], install: str) -> None:
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        raise ToolchainError(f"{', '.join(missing)} not found on PATH", hint=f"install it: {install}")


def _overflow_error(project_dir: Path, lines: list[str], marker: dict, jobs: int) -> BoardError | None:
    """When the link failed because a bank overflowed: link again against every bank made large
    (make build/measure.elf) and return the fit report's FitError: what does not fit, by how much,
    and what would help. None when the failure was something else."""
    if not _OVERFLOW.search("\n".join(lines)):
        return None
    board = load_board(marker["board"])
    proc = children.run(["make", "-C", tool_arg(project_dir), "--no-print-directory", f"-j{jobs}", "build/measure.elf"],
                        text=True, death_signal=signal.SIGTERM)
    if proc.returncode != 0:
        over = ", ".join(f"{r} by {n} bytes" for r, n in _OVERFLOW.findall("\n".join(lines)))
        return BoardError(f"the firmware does not fit {board.name}: {over}",
                          hint="pick a board with more memory, or a smaller model")
    where = Placement(**{k: v for k, v in marker["placement"].items() if k in ("code", "ram", "weights", "arena")},
                      stack_bytes=marker["placement"]["stack_reserve_bytes"],
                      heap_bytes=marker["placement"]["heap_reserve_bytes"],
                      arena_banks=tuple(marker["placement"].get("arena_banks", ())))
    platform = (project_dir / "build" / "platform").read_text().strip()
    report = fit_report(project_dir / "build" / "measure.elf", board, where, project_dir / "build" / platform)
    if report.fits:   # the linker saw an overflow the report cannot place: say what it said
        over = ", ".join(f"{r} by {n} bytes" for r, n in _OVERFLOW.findall("\n".join(lines)))
        return BoardError(f"the firmware does not fit {board.name}: {over}")
    return FitError(report, marker.get("model", "model"))


def build(project_dir: str | Path, progress: Callable[[str], None] = say,
          platform: str | None = None, jobs: int | None = None) -> SizeReport:
    """Run make in a generated project, streaming its `[build] ...` lines to `progress`.

    `platform` ("board" or "twin") overrides the Makefile's default. Returns the
    firmware's SizeReport. Missing tools -> ToolchainError; memory overflow -> BoardError."""
    project_dir = Path(project_dir)
    marker = read_marker(project_dir)
    host = marker["platform"] == "host"
    if host:
        _require(["make", "cc"], HOST_INSTALL)
    else:
        _require(["make", "arm-none-eabi-gcc", "arm-none-eabi-objcopy", "arm-none-eabi-size"], ARM_INSTALL)

    # The compilers and the Makefile's own `printf >` write through a link they find among
    # their outputs: a link planted there (pointing out of the project) goes first.
    outputs = OutputTree(project_dir)
    for rel in MAKE_OUTPUTS:
        outputs.remove_links(rel)
    cmd = ["make", "-C", tool_arg(project_dir), "--no-print-directory", f"-j{jobs or os.cpu_count() or 1}"]
    if platform is not None and not host:
        cmd.append(f"PLATFORM={platform}")
    lines = []
    # make gets SIGTERM if microcompile dies: it then stops its compilers and deletes the
    # objects they were writing, so no half-written object looks up to date next time.
    with children.spawn(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                        text=True, death_signal=signal.SIGTERM) as proc:
        for line in proc.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            if line.startswith("[build]"):
                progress(line)
        rc = proc.wait()
    if rc != 0:
        overflow = None if host else _overflow_error(project_dir, lines, marker, jobs or os.cpu_count() or 1)
        if overflow is not None:
            raise overflow
        tail = "\n".join(lines[-25:])
        if any(s in tail for s in _TOOLCHAIN_BROKEN):
            raise ToolchainError(f"the toolchain is incomplete; the build failed:\n{tail}", hint=f"install: {ARM_INSTALL}")
        raise ToolchainError(f"make failed in {project_dir} (exit {rc}):\n{tail}",
                             hint=f"rerun `make -C {project_dir}` to see the full log")

    if host:
        exe = project_dir / "firmware"
        if shutil.which("size"):
            return size_report(exe, "size")
        return SizeReport(exe.stat().st_size, 0, 0, {})
    report = size_report(project_dir / "firmware.elf")
    progress(f"[build] flash {report.flash} B (text {report.text} + data {report.data}), "
             f"RAM {report.ram} B (data {report.data} + bss {report.bss})")
    return report
