"""Start the agent firmware's other end: QEMU with its console UART on a TCP socket, or a
host-built firmware on pipes. Both are context managers that always stop the child:
after success, an error, a timeout, Ctrl-C (SIGINT) or SIGTERM.

The child runs in its own process group (a terminal's Ctrl-C reaches only microcompile,
which then stops it), gets SIGKILL if microcompile itself dies (Linux parent-death
signal), and is stopped in a `finally`. `spawn`/`stop` are the one place that does this;
they are meant to give way to the shared child-process helper of project/ (issue 14).

The QEMU socket: microcompile listens on 127.0.0.1 with port 0 (the kernel picks a free
port and we hold it, so parallel runs cannot race for it), and QEMU connects to it as a
client (`-serial tcp:127.0.0.1:PORT`) before the guest starts, so no byte is lost.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from microcompile.errors import DeviceError, ToolchainError
from microcompile.project.generate import QEMU_FLAGS, read_marker
from microcompile.target import Board, load_board

_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:   # runs in the child between fork and exec
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass                      # not Linux: the finally and the signal handlers remain


def spawn(cmd: list[str], **popen_kw) -> subprocess.Popen:
    """Start a child in its own process group that dies with microcompile."""
    linux = sys.platform.startswith("linux")
    return subprocess.Popen(cmd, start_new_session=True, preexec_fn=_die_with_parent if linux else None,
                            **popen_kw)


def stop(proc: subprocess.Popen, grace: float = 2.0) -> None:
    """Stop a child started by spawn (and its group): SIGTERM, then SIGKILL after `grace` s."""
    if proc.poll() is None:
        for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                break
            try:
                proc.wait(wait)
                break
            except subprocess.TimeoutExpired:
                continue
    proc.wait()


@contextmanager
def _sigterm_raises() -> Iterator[None]:
    """While inside, SIGTERM raises SystemExit(143) so that the `finally` blocks run."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        raise SystemExit(128 + signum)
    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def qemu_agent_command(board: Board, elf: str | Path, port: int) -> list[str]:
    emu = board.emulator
    return ["qemu-system-arm", "-machine", emu.machine, "-cpu", emu.cpu, *QEMU_FLAGS.split(),
            "-serial", f"tcp:127.0.0.1:{port},nodelay=on", "-kernel", str(elf)]


@contextmanager
def qemu_agent(project_dir: str | Path, board: Board | str | None = None,
               connect_timeout: float = 30.0) -> Iterator[socket.socket]:
    """Run the project's agent firmware on the board's QEMU twin; yields the connected
    socket of its console UART. QEMU is stopped on leaving, whatever happened."""
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
    if subprocess.run(["which", "qemu-system-arm"], capture_output=True).returncode != 0:
        raise ToolchainError("qemu-system-arm not found on PATH", hint="install it: sudo apt-get install qemu-system-arm")
    with _sigterm_raises():
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        conn = None
        proc = None
        try:
            listener.bind(("127.0.0.1", 0))
            listener.listen(1)
            listener.settimeout(0.2)
            cmd = qemu_agent_command(board, elf, listener.getsockname()[1])
            proc = spawn(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
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
            conn.settimeout(None)
            yield conn
        finally:
            if conn is not None:
                conn.close()
            listener.close()
            if proc is not None:
                stop(proc)
                proc.stderr.close()


@contextmanager
def host_agent(project_dir: str | Path) -> Iterator[subprocess.Popen]:
    """Run a host build of the agent firmware; yields the process (talk over its stdin/stdout)."""
    exe = Path(project_dir) / "firmware"
    if not exe.is_file():
        raise DeviceError(f"{exe} not found", hint="build the project for the host board first")
    with _sigterm_raises():
        proc = spawn([str(exe.resolve())], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            yield proc
        finally:
            for f in (proc.stdin, proc.stdout):
                try:
                    f.close()
                except OSError:
                    pass
            stop(proc)
