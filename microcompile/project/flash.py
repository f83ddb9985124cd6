"""`microcompile flash`: check that a firmware fits its board, then write it with the probe on
the board (project/flash_runners.py picks the runner and the probe).

The firmware is a generated project (rebuilt for the real board when its last build was for the
emulated twin) or a bare firmware.elf with --board, whose .bin/.hex/.uf2 are made next to it in a
temporary directory.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from microcompile.errors import BoardError, DeviceError, ToolchainError, UserError
from microcompile.escape import say
from microcompile.project import children
from microcompile.project.build import ARM_INSTALL, build
from microcompile.project.fit import FitError, FitReport, fit_report
from microcompile.project.flash_runners import choose, flash_with, uf2_file
from microcompile.project.generate import BIN_SECTIONS, read_marker
from microcompile.project.placement import Placement
from microcompile.target import Board, load_board


@dataclass
class FlashResult:
    board: str
    runner: str
    probe: str | None
    fit: FitReport


def _placement(marker: dict) -> Placement | None:
    p = marker.get("placement")
    if not p:
        return None
    return Placement(p["code"], p["ram"], p["weights"], p["arena"], p["stack_reserve_bytes"], p["heap_reserve_bytes"],
                     tuple(p.get("arena_banks", ())))


def _board_of_project(project_dir: Path, board: Board | str | None) -> tuple[Board, dict]:
    marker = read_marker(project_dir)
    ours = load_board(marker["board"])
    if board is not None:
        asked = board if isinstance(board, Board) else load_board(board)
        if asked.name != ours.name:
            raise BoardError(f"{project_dir} was generated for {ours.name}, not {asked.name}",
                             hint=f"flash it with --board={ours.name}, or deploy the model again with --board={asked.name}")
    return ours, marker


def _require_runners(board: Board) -> None:
    if not board.flash_runners:
        raise DeviceError(f"board {board.name} cannot be flashed (emulator only)", hint="run it in QEMU with --emulate")


def _files_from_elf(elf: Path, board: Board, tmp: Path) -> dict[str, Path]:
    objcopy = shutil.which("arm-none-eabi-objcopy")
    if objcopy is None:
        raise ToolchainError("arm-none-eabi-objcopy not found on PATH", hint=f"install it: {ARM_INSTALL}")
    files = {"elf": elf, "bin": tmp / "firmware.bin", "hex": tmp / "firmware.hex"}
    sections = [a for s in BIN_SECTIONS + (".weights",) for a in ("-j", s)]
    for args in ([objcopy, "-O", "binary", *sections, str(elf), str(files["bin"])],
                 [objcopy, "-O", "ihex", str(elf), str(files["hex"])]):
        proc = children.run(args, text=True)
        if proc.returncode != 0:
            raise UserError(f"cannot convert {elf}: {proc.stderr.strip()}")
    return files


def flash(target: str | Path, board: Board | str | None = None, probe: str | None = None,
          progress: Callable[[str], None] = say, show_bar: bool = True) -> FlashResult:
    """Flash a project directory or a firmware.elf to `board` through `probe` (a probe id, or
    None to find the one attached). Checks the fit first (FitError when it does not fit); raises
    DeviceError, with what to do, when no runner, no probe, several probes, the wrong chip or a
    failed verification stops it."""
    path = Path(target).resolve()
    with tempfile.TemporaryDirectory(prefix="microcompile-flash-") as tmp_dir:
        tmp = Path(tmp_dir)
        if path.is_dir():
            board_obj, marker = _board_of_project(path, board)
            _require_runners(board_obj)
            built_for = path / "build" / "platform"
            if not (path / "firmware.elf").is_file() or not built_for.is_file() \
                    or built_for.read_text().strip() != "board":
                progress(f"[flash] building for the real {board_obj.mcu.name}")
                build(path, progress=progress, platform="board")
            files = {k: path / f"firmware.{k}" for k in ("elf", "bin", "hex")}
            report = fit_report(files["elf"], board_obj, _placement(marker), path / "build" / "board")
            model = marker.get("model", "model")
        elif path.is_file():
            if board is None:
                raise UserError(f"flashing a bare ELF ({path.name}) needs --board", hint="e.g. --board=stm32")
            board_obj = board if isinstance(board, Board) else load_board(board)
            _require_runners(board_obj)
            files = _files_from_elf(path, board_obj, tmp)
            report = fit_report(path, board_obj)
            model = path.name
        else:
            raise UserError(f"{path} not found", hint="pass a project directory made by `microcompile deploy`, or a firmware.elf")
        progress(report.format())
        if not report.fits:
            raise FitError(report, model)
        if "uf2" in board_obj.flash_runners:
            files["uf2"] = uf2_file(board_obj, files, tmp / "firmware.uf2")
        try:
            runner, found = choose(board_obj, probe)
            bar = _progress_bar(f"[flash] {board_obj.name} with {runner}", show_bar)
            try:
                flash_with(board_obj, files, runner, found, progress=bar.update_to)
            finally:
                bar.close()
        except DeviceError as e:
            raise _with_firmware(e, board_obj, files["elf"] if path.is_dir() else path) from None
        progress(f"[flash] done: {board_obj.name} flashed with {runner}" + (f" (probe {found.id})" if found else ""))
        return FlashResult(board_obj.name, runner, found.id if found else None, report)


def _with_firmware(e: DeviceError, board: Board, elf: Path) -> DeviceError:
    """The error, saying where the firmware is, and that the board's QEMU twin can run it."""
    where = f"the firmware is at {elf} (firmware.bin and firmware.hex next to it for a project)"
    hint = e.hint or ""
    if board.emulator is not None:
        hint += ("; " if hint else "") + f"or run it on the QEMU twin ({board.emulator.machine}) with --emulate"
    return DeviceError(f"{e.message}\n{where}", hint=hint or None)


class _Bar:
    """A tqdm bar of 0..100 % on stderr (or nothing when tqdm is missing or the bar is off)."""

    def __init__(self, desc: str, enabled: bool):
        self._bar = None
        if enabled:
            try:
                from tqdm import tqdm
            except ImportError:
                return
            self._bar = tqdm(total=100, desc=desc, unit="%", file=sys.stderr, leave=False,
                             bar_format="{desc} {bar} {n:.0f}%")

    def update_to(self, fraction: float) -> None:
        if self._bar is not None:
            self._bar.n = max(self._bar.n, round(100 * fraction))
            self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def _progress_bar(desc: str, enabled: bool) -> _Bar:
    return _Bar(desc, enabled)
