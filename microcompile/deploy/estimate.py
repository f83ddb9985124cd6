"""Estimated cycles for a run on a QEMU twin: the self-test runs once with the profile plugin
(project/qemu_profile.py), and its measured windows are priced with the core's timings and
the board's memory system (target/cycles.py). The report says `estimated_`, never `cycles`:
it is a model's figure, not a measurement (on a real board the counter is DWT->CYCCNT)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field

from .. import project
from ..errors import DeviceError, ToolchainError
from ..project import qemu_profile
from ..target import Board
from ..target.cycles import MemorySystem, core_timing, estimate, memory_system


@dataclass(frozen=True)
class CycleEstimate:
    core: str
    clock_hz: int
    cycles: int
    instructions: int                  # what the plugin saw in the inference window
    parts: dict                        # cycles by source (pipeline, branches, loops, flash)
    kernel_cycles: tuple[int, ...] = ()
    memory: MemorySystem | None = field(default=None, compare=False)

    @property
    def ms(self) -> float:
        return 1000.0 * self.cycles / self.clock_hz

    def report_keys(self) -> dict:
        return {"estimated_cycles": self.cycles, "estimated_ms": round(self.ms, 4), "clock_hz": self.clock_hz,
                "estimate": {"core": self.core, "instructions_traced": self.instructions, "parts": self.parts,
                             "flash_wait_states": self.memory.flash_wait_states if self.memory else None,
                             "note": "a model's estimate from QEMU's exact instruction trace, not a measurement "
                                     "(docs/cycles.md)"}}


def flash_range(board: Board) -> tuple[int, int] | None:
    bank = board.mcu.flash
    return (bank.origin, bank.end) if bank is not None else None


def run_estimated(project_dir, board: Board, n_kernels: int, mem: MemorySystem | None = None,
                  timeout: float = 120.0, progress=None):
    """Run the self-test on the twin with the profile plugin: (RunResult, CycleEstimate or
    None). `mem`: price with another memory system than the board's (the benchmark's what-ifs).
    A firmware failure raises as without the plugin; when only the estimate fails (no host
    compiler, a QEMU that refuses the plugin: only QEMU 7.2's plugin API version 1 is spoken,
    windows that do not match the counter), the run stands and `progress` says why."""
    mem = mem or memory_system(board)
    timing = core_timing(board.target.core)
    elf = project_dir / "firmware.elf"
    try:
        mark = qemu_profile.symbol_address(elf, qemu_profile.MARK_SYMBOL)
        if mark is None:
            raise ToolchainError(f"{elf} has no {qemu_profile.MARK_SYMBOL}: cannot find the measured windows")
        lib = qemu_profile.plugin_library()
        refused = qemu_profile.plugin_refused(lib, board.emulator.machine, board.emulator.cpu)
        if refused:
            raise ToolchainError(f"this QEMU refuses the profile plugin: {refused}")
    except ToolchainError as e:
        if progress is None:
            raise
        progress(f"[run] no cycle estimate ({e.message})")
        return project.run_emulated(project_dir, board, timeout=timeout), None
    flash = flash_range(board)
    out_dir = qemu_profile.profile_dir()
    try:
        out = out_dir / "profile.txt"
        run = project.run_emulated(project_dir, board, timeout=timeout,
                                   extra=qemu_profile.plugin_args(lib, out, [mark], flash, mem))
        try:
            segments = qemu_profile.parse_profile(out.read_text(), qemu_profile.ElfCode(elf))
            tolerance = 2 * int(board.emulator.instructions_per_tick) + 64
            windows = qemu_profile.selftest_windows(segments, n_kernels, run.instructions, run.kernel_instructions,
                                                    tolerance)
        except (DeviceError, OSError) as e:
            if progress is None:
                raise
            progress(f"[run] no cycle estimate ({e})")
            return run, None
    finally:
        shutil.rmtree(out_dir, ignore_errors=True)

    def price(seg):
        lines = seg.code_lines(flash, mem.cache_line_bytes) if mem.flash_wait_states else 0
        return estimate(seg.blocks, timing, mem, lines, mve=board.target.mve)

    whole = price(windows.inference)
    kernels = tuple(price(k).cycles for k in windows.kernels)
    return run, CycleEstimate(board.target.core, mem.clock_hz, whole.cycles, whole.instructions, whole.parts,
                              kernels, mem)


class AgentTrace:
    """The profile plugin on the agent firmware's QEMU twin, for `profile`'s estimated cycles.
    Segments start at mc_run() and at the agent's per-kernel profile hook (store_ticks), so a
    profiled inference gives one segment per kernel; they are found by their instruction counts,
    which must equal the agent's per-kernel counts within the counter's resolution."""

    HOOK = "store_ticks"

    def __init__(self, built):
        self.board = built.board
        self.mem = memory_system(self.board)
        self.timing = core_timing(self.board.target.core)
        self.elf = built.project_dir / "firmware.elf"
        marks = [qemu_profile.symbol_address(self.elf, s) for s in ("mc_run", self.HOOK)]
        if None in marks:
            raise ToolchainError(f"{self.elf} has no mc_run or {self.HOOK}: cannot find the kernel windows")
        self.flash = flash_range(self.board)
        lib = qemu_profile.plugin_library()
        refused = qemu_profile.plugin_refused(lib, self.board.emulator.machine, self.board.emulator.cpu)
        if refused:
            raise ToolchainError(f"this QEMU refuses the profile plugin: {refused}")
        self.dir = qemu_profile.profile_dir()
        self.out = self.dir / "profile.txt"
        self.qemu_args = qemu_profile.plugin_args(lib, self.out, marks, self.flash, self.mem)

    def kernel_cycles(self, counts: list[int]) -> list[int] | None:
        """Estimated cycles of each kernel of the latest profiled inference (None when its
        windows are not found)."""
        if not self.out.is_file():
            return None
        segments = qemu_profile.parse_profile(self.out.read_text(), qemu_profile.ElfCode(self.elf), complete=False)
        tolerance = 2 * int(self.board.emulator.instructions_per_tick) + 64
        kernels = qemu_profile.match_kernels(segments, counts, tolerance)
        if kernels is None:
            return None
        lines = self.mem.cache_line_bytes
        return [estimate(k.blocks, self.timing, self.mem, k.code_lines(self.flash, lines) if self.mem.flash_wait_states
                         else 0, mve=self.board.target.mve).cycles for k in kernels]

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def agent_trace(built, progress) -> AgentTrace | None:
    """An AgentTrace for a QEMU twin whose core has a cycle model, or None (with a note why)."""
    from ..target.cycles import CORES

    if built.board.is_host or built.board.emulator is None or built.board.target.core not in CORES:
        return None
    try:
        return AgentTrace(built)
    except (ToolchainError, DeviceError) as e:
        progress(f"[run] no cycle estimate ({e})")
        return None
