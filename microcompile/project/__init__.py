"""Project generation, build, fit report, and running/flashing the firmware.

    check_out_dir(out_dir)   (before any work: can a project go there?)
    generate(artifact_dir, board, out_dir, test_inputs, BuildOptions) -> out_dir
    build(out_dir) -> SizeReport
    fit_report(elf, board, placement, build_dir) -> FitReport
    run_emulated(out_dir) / run_host(out_dir) -> RunResult
    flash(out_dir | firmware.elf, board, probe) -> FlashResult
    qemu_agent(out_dir) / host_agent(out_dir): the agent firmware's other end, always stopped
    qemu_profile: the QEMU TCG plugin (built with the host compiler) that traces a twin's run
                  exactly, for the cycle estimate (target/cycles.py)

Every child process (make, QEMU, the native firmware, flash tools, the agent's QEMU) is
started through `children`, so that none outlives microcompile.
"""

from microcompile.project.build import SizeReport, build, size_report
from microcompile.project.fit import FitError, FitReport, check_manifest_fits, fit_report
from microcompile.project.flash import FlashResult, flash
from microcompile.project.generate import MARKER, check_fits, check_out_dir, generate, read_marker
from microcompile.project.launch import host_agent, qemu_agent
from microcompile.project.manifest import load_manifest
from microcompile.project.placement import Placement, model_banks, placement
from microcompile.project.options import BuildOptions
from microcompile.project.toolchain import toolchain_version
from microcompile.project.run import RunResult, parse_output, qemu_command, run_emulated, run_host
from microcompile.project.trace import parse_trace, trace_entries

__all__ = ["MARKER", "BuildOptions", "FitError", "FitReport", "FlashResult", "Placement", "RunResult", "SizeReport",
           "build", "check_fits", "check_manifest_fits", "check_out_dir", "fit_report", "flash", "generate",
           "host_agent", "load_manifest", "model_banks", "parse_output", "parse_trace", "placement", "qemu_agent",
           "qemu_command", "read_marker", "run_emulated", "run_host", "size_report", "trace_entries"]
