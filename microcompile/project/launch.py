"""Start the agent firmware's other end: QEMU with its console UART on a TCP socket, or a
host-built firmware on pipes. Both are context managers that always stop the child:
after success, an error, a timeout, Ctrl-C (SIGINT), SIGTERM or SIGHUP.

The child is started through `children.spawn`, like every child of microcompile: its own
process group (a terminal's Ctrl-C reaches only microcompile, which then stops it), SIGKILL
if microcompile itself dies (Linux parent-death signal; see children.py for macOS and
Windows), and stopped when the block is left. The CLI's error boundary turns SIGTERM and
SIGHUP into an exception, so the blocks are left on those signals too.

The QEMU socket: microcompile listens on 127.0.0.1 with port 0 (the kernel picks a free
port and we hold it, so parallel runs cannot race for it), and QEMU connects to it as a
client (`-serial tcp:127.0.0.1:PORT`) before the guest starts, so no byte is lost.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from microcompile.errors import DeviceError, ToolchainError
from microcompile.files import tool_arg
from microcompile.project import children
from microcompile.project.generate import QEMU_FLAGS, read_marker
from microcompile.target import Board, load_board


def qemu_agent_command(board: Board, elf: str | Path, port: int, extra: Sequence[str] = ()) -> list[str]:
    emu = board.emulator
    return ["qemu-system-arm", "-machine", emu.machine, "-cpu", emu.cpu, *QEMU_FLAGS.split(), *extra,
            "-serial", f"tcp:127.0.0.1:{port},nodelay=on", "-kernel", tool_arg(elf)]


@contextmanager
def qemu_agent(project_dir: str | Path, board: Board | str | None = None,
               connect_timeout: float = 30.0, extra: Sequence[str] = ()) -> Iterator[socket.socket]:
    """Run the project's agent firmware on the board's QEMU twin; yields the connected
    socket of its console UART. QEMU is stopped on leaving, whatever happened. `extra`: more
    QEMU options (the profile plugin's)."""
    project_dir = Path(project_dir)
    marker = read_marker(project_dir)
    board = load_board(board or marker["board"]) if not isinstance(board, Board) else board
    if board.emulator is None:
        raise DeviceError(f"board {board.name} has no emulated twin", hint="pass --port to use the real board")
    elf = project_dir / "firmware.elf"
    if not elf.is_file():
        raise DeviceError(f"{elf} not found", hint="build the project first")
    if not marker.get("agent"):
        raise DeviceError(f"{project_dir} holds a self-test build, not the agent firmware",
                          hint="regenerate it as an agent build (microcompile run / deploy --agent)")
    if shutil.which("qemu-system-arm") is None:
        raise ToolchainError("qemu-system-arm not found on PATH", hint="install it: sudo apt-get install qemu-system-arm")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)
        listener.settimeout(0.2)
        cmd = qemu_agent_command(board, elf, listener.getsockname()[1], extra)
        with children.spawn(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE) as proc:
            conn = None
            deadline = time.monotonic() + connect_timeout
            while conn is None:
                try:
                    conn, _ = listener.accept()
                except socket.timeout:
                    if proc.poll() is not None:
                        err = proc.stderr.read().decode(errors="replace").strip()
                        raise DeviceError(f"QEMU ({board.emulator.machine}) exited with status {proc.returncode} "
                                          f"before connecting: {err or '(no message)'}")
                    if time.monotonic() > deadline:
                        raise DeviceError(f"QEMU did not connect to its console socket within {connect_timeout:g} s")
            try:
                conn.settimeout(None)
                yield conn
            finally:
                conn.close()
    finally:
        listener.close()


@contextmanager
def host_agent(project_dir: str | Path) -> Iterator[subprocess.Popen]:
    """Run a host build of the agent firmware; yields the process (talk over its stdin/stdout)."""
    exe = Path(project_dir) / "firmware"
    if not exe.is_file():
        raise DeviceError(f"{exe} not found", hint="build the project for the host board first")
    with children.spawn([str(exe.resolve())], stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        yield proc
