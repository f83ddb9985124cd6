"""Run the self-test firmware (in QEMU or natively) and parse its MC-* console protocol."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from microcompile.errors import DeviceError, ToolchainError
from microcompile.files import tool_arg
from microcompile.project import children
from microcompile.project.generate import QEMU_FLAGS, read_marker
from microcompile.project.manifest import load_manifest, tensor_array
from microcompile.target import Board, load_board


@dataclass
class RunResult:
    outputs: list[np.ndarray]   # one per model output, dtype/shape from the manifest
    ticks: int                  # platform counter delta of one inference
    instructions: int | None    # ticks * instructions_per_tick under QEMU; None natively
    console: str                # the raw console text
    kernel_ticks: list[int] = field(default_factory=list)   # per kernel, from the MC-KERNEL lines
    stack_bytes: int | None = None   # the deepest stack use since reset (MC-STACK), where measured

    @property
    def kernel_instructions(self) -> list[int] | None:
        """Per-kernel instructions under QEMU (ticks * instructions_per_tick); None natively."""
        if self.instructions is None or not self.ticks:
            return None
        per_tick = self.instructions / self.ticks
        return [round(t * per_tick) for t in self.kernel_ticks]


def parse_output(text: str, manifest: dict) -> tuple[list[np.ndarray], int]:
    """Parse MC-BEGIN / MC-OUTPUT <i> <hex> / MC-TICKS <n> / MC-END into (outputs, ticks)."""
    lines = [ln.strip() for ln in text.replace("\r", "").split("\n")]
    errors = [ln for ln in lines if ln.startswith("MC-ERROR")]
    if errors:
        raise DeviceError(f"the firmware reported an error: {errors[0][len('MC-ERROR '):]}")
    if "MC-BEGIN" not in lines or "MC-END" not in lines:
        raise DeviceError("the firmware output has no complete MC-BEGIN ... MC-END block:\n" + _tail(text))
    body = lines[lines.index("MC-BEGIN") + 1:lines.index("MC-END")]
    hexes = [""] * len(manifest["outputs"])
    ticks = None
    for ln in body:
        parts = ln.split()
        try:
            if parts[0] == "MC-OUTPUT":
                hexes[int(parts[1])] += parts[2] if len(parts) > 2 else ""
            elif parts[0] == "MC-KERNEL":
                int(parts[1]), int(parts[2])      # per-kernel ticks: parse_kernel_ticks
            elif parts[0] == "MC-TICKS":
                ticks = int(parts[1])
            elif parts[0] == "MC-STACK":
                int(parts[1])                     # stack high-water mark: parse_stack_bytes
            else:
                raise ValueError(ln)
        except (ValueError, IndexError) as e:
            raise DeviceError(f"garbled firmware output line {ln!r}") from e
    if ticks is None:
        raise DeviceError("the firmware output has no MC-TICKS line:\n" + _tail(text))
    outputs = []
    for spec, h in zip(manifest["outputs"], hexes):
        try:
            data = bytes.fromhex(h)
        except ValueError as e:
            raise DeviceError(f"garbled hex for output {spec['name']!r}") from e
        if len(data) != spec["bytes"]:
            raise DeviceError(f"output {spec['name']!r}: got {len(data)} bytes, expected {spec['bytes']}")
        outputs.append(tensor_array(spec, data))
    return outputs, ticks


def parse_kernel_ticks(text: str) -> list[int]:
    """Ticks of each kernel from the `MC-KERNEL <k> <ticks>` lines, in kernel order."""
    found = {}
    for ln in text.replace("\r", "").split("\n"):
        parts = ln.split()
        if len(parts) == 3 and parts[0] == "MC-KERNEL":
            found[int(parts[1])] = int(parts[2])
    return [found[k] for k in sorted(found)]


def parse_stack_bytes(text: str) -> int | None:
    """The `MC-STACK <bytes>` figure: the deepest stack use the painted stack shows."""
    for ln in text.replace("\r", "").split("\n"):
        parts = ln.split()
        if len(parts) == 2 and parts[0] == "MC-STACK":
            return int(parts[1])
    return None


def _tail(text: str, n: int = 15) -> str:
    return "\n".join(text.splitlines()[-n:]) or "(no output)"


def _project_and_elf(project: str | Path) -> tuple[Path, Path]:
    project = Path(project)
    if project.is_file():
        return project.parent, project
    return project, project / "firmware.elf"


def qemu_command(board: Board, elf: str | Path, extra: Sequence[str] = ()) -> list[str]:
    """The qemu-system-arm command line that runs `elf` on the board's emulated twin (`extra`:
    more options, e.g. the profile plugin's)."""
    emu = board.emulator
    return ["qemu-system-arm", "-machine", emu.machine, "-cpu", emu.cpu, *QEMU_FLAGS.split(), *extra,
            "-kernel", tool_arg(elf)]


def run_emulated(project: str | Path, board: Board | str | None = None, timeout: float = 60.0,
                 extra: Sequence[str] = ()) -> RunResult:
    """Run a twin build (project dir or its firmware.elf) in QEMU and parse its output
    (`extra`: more QEMU options, e.g. qemu_profile.plugin_args)."""
    project_dir, elf = _project_and_elf(project)
    marker = read_marker(project_dir)
    board = load_board(board or marker["board"]) if not isinstance(board, Board) else board
    if board.emulator is None:
        raise DeviceError(f"board {board.name} has no emulated twin")
    if not elf.is_file():
        raise DeviceError(f"{elf} not found", hint="build the project first")
    built_for = (project_dir / "build" / "platform")
    if built_for.is_file() and built_for.read_text().strip() != "twin" and board.emulator.mcu != board.mcu:
        raise DeviceError(f"{elf} was built for the real {board.mcu.name}, not for the emulated twin",
                          hint=f"rebuild with `make -C {project_dir} PLATFORM=twin`")
    if shutil.which("qemu-system-arm") is None:
        raise ToolchainError("qemu-system-arm not found on PATH", hint="install it: sudo apt-get install qemu-system-arm")
    manifest = load_manifest(project_dir)
    try:
        proc = children.run(qemu_command(board, elf, extra), timeout=timeout)
    except subprocess.TimeoutExpired as e:
        out = (e.stdout or b"").decode(errors="replace")
        raise DeviceError(f"QEMU ({board.emulator.machine}) did not finish within {timeout:g} s; "
                          f"the firmware hung or crashed. Console so far:\n{_tail(out)}") from e
    out = proc.stdout.decode(errors="replace")
    if proc.returncode != 0:
        parse_errors = [ln for ln in out.splitlines() if ln.startswith("MC-ERROR")]
        detail = parse_errors[0] if parse_errors else _tail(out + proc.stderr.decode(errors="replace"))
        raise DeviceError(f"QEMU ({board.emulator.machine}) exited with status {proc.returncode}: {detail}")
    outputs, ticks = parse_output(out, manifest)
    return RunResult(outputs, ticks, round(ticks * board.emulator.instructions_per_tick), out,
                     parse_kernel_ticks(out), parse_stack_bytes(out))


def run_host(project_dir: str | Path, timeout: float = 60.0) -> RunResult:
    """Run a host build's ./firmware and parse its output (ticks are ns)."""
    project_dir = Path(project_dir)
    exe = project_dir / "firmware"
    if not exe.is_file():
        raise DeviceError(f"{exe} not found", hint="build the project for the host board first")
    manifest = load_manifest(project_dir)
    try:
        proc = children.run([str(exe.resolve())], timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise DeviceError(f"{exe} did not finish within {timeout:g} s") from e
    out = proc.stdout.decode(errors="replace")
    if proc.returncode != 0:
        errs = [ln for ln in out.splitlines() if ln.startswith("MC-ERROR")]
        raise DeviceError(f"{exe} exited with status {proc.returncode}: {errs[0] if errs else _tail(out)}")
    outputs, ticks = parse_output(out, manifest)
    return RunResult(outputs, ticks, None, out, parse_kernel_ticks(out))
