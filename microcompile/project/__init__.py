"""Project generation, build, size report, and running/flashing the firmware.

    generate(artifact_dir, board, out_dir, test_inputs, emulated) -> out_dir
    build(out_dir) -> SizeReport
    run_emulated(out_dir) / run_host(out_dir) -> RunResult
    flash(out_dir)
    qemu_agent(out_dir) / host_agent(out_dir): the agent firmware's other end, always stopped
"""

from microcompile.project.build import SizeReport, build, size_report
from microcompile.project.flash import flash
from microcompile.project.generate import MARKER, check_fits, generate, read_marker
from microcompile.project.launch import host_agent, qemu_agent
from microcompile.project.manifest import load_manifest
from microcompile.project.run import RunResult, parse_output, qemu_command, run_emulated, run_host
from microcompile.project.trace import parse_trace, trace_entries

__all__ = ["MARKER", "RunResult", "SizeReport", "build", "check_fits", "flash", "generate", "host_agent",
           "load_manifest", "qemu_agent",
           "parse_output", "parse_trace", "qemu_command", "read_marker", "run_emulated", "run_host", "size_report",
           "trace_entries"]
