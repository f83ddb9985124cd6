"""Flash a real board through the first of its flash runners that works."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from microcompile.errors import DeviceError
from microcompile.project.build import build
from microcompile.project.generate import read_marker
from microcompile.target import Board, load_board


def flash(project_dir: str | Path, board: Board | str | None = None,
          progress: Callable[[str], None] = print, timeout: float = 120.0) -> str:
    """Flash a generated project with the board's runners, in order (builds PLATFORM=board first if needed).

    Returns the name of the runner that succeeded. If none is installed, or none
    finds a probe, raises DeviceError naming the firmware files and how to flash by hand."""
    project_dir = Path(project_dir).resolve()
    marker = read_marker(project_dir)
    board = load_board(board or marker["board"]) if not isinstance(board, Board) else board
    files = {k: project_dir / f"firmware.{k}" for k in ("elf", "bin", "hex")}
    where = f"the firmware is at {files['elf']} (also {files['bin'].name} and {files['hex'].name} there)"
    if not board.flash_runners:
        raise DeviceError(f"board {board.name} cannot be flashed (emulator only); {where}",
                          hint="run it in QEMU with --emulate")
    built_for = project_dir / "build" / "platform"
    if not files["elf"].is_file() or not built_for.is_file() or built_for.read_text().strip() != "board":
        progress(f"[flash] building for the real {board.mcu.name}")
        build(project_dir, progress=progress, platform="board")

    failures = []
    for runner in board.flash_runners:
        if shutil.which(runner.tool) is None:
            failures.append(f"{runner.name}: not installed")
            continue
        cmd = [a.format(**{k: str(v) for k, v in files.items()}) for a in runner.command]
        progress(f"[flash] {runner.name}: {' '.join(cmd)}")
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            failures.append(f"{runner.name}: timed out after {timeout:g} s")
            continue
        if proc.returncode == 0:
            progress(f"[flash] done with {runner.name}")
            return runner.name
        last = (proc.stderr or proc.stdout).strip().splitlines()
        failures.append(f"{runner.name}: failed ({last[-1] if last else f'exit {proc.returncode}'})")
    manual = " ".join(a.format(elf=files["elf"], bin=files["bin"], hex=files["hex"])
                      for a in board.flash_runners[0].command)
    raise DeviceError(f"could not flash {board.name} (no probe attached, or no flash tool installed: "
                      f"{'; '.join(failures)}); {where}",
                      hint=f"flash it by hand, e.g. `{manual}`, or run it in the emulator with --emulate")
