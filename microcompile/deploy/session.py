"""Reaching the device: the checks before a build, the serial port, and an agent session on
the host, the QEMU twin or a real board (flashed first when it runs another build)."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import contextmanager
from pathlib import Path

from .. import project
from ..errors import DeviceError, UserError, shown
from ..escape import say
from ..progress import progress_bar
from ..target import Board
from .options import Link

Progress = Callable[[str], None]


def check_target(board: Board, link: Link, agent: bool = True) -> None:
    """Refuse impossible targets before anything is built; on a real board, find its serial
    port first (a missing board is reported before a minute of compiling)."""
    emulate, port = link.emulate, link.port
    if emulate and port:
        raise UserError("--emulate and --port exclude each other", hint="use --emulate for QEMU, --port for a board")
    if emulate and board.emulator is None and not board.is_host:
        raise UserError(f"board {board.name} has no emulated twin",
                        hint="drop --emulate to flash it, or pick a board listed by `microcompile boards` with a twin")
    if port and board.is_host:
        raise UserError("the host board has no serial port", hint="drop --port")
    if agent and not emulate and not board.is_host:
        serial_port(board, port)


def serial_port(board: Board, port: str | None) -> str:
    from ..device import UsbId, find_serial_ports

    if port:
        # A device path that is not there is found now, not after a minute of building
        # (pyserial URLs such as socket://host:port or rfc2217://... are left to pyserial).
        if "://" not in port and not Path(port).exists():
            raise DeviceError(f"serial port {shown(port, 200)} does not exist",
                              hint="check the name (`python -m serial.tools.list_ports` lists the ports), "
                                   "or drop --port to find the board by its USB id")
        return port
    probe = board.probe
    ids = [UsbId(probe.usb_vid, probe.usb_pid)] if probe and probe.usb_vid is not None else []
    if not ids:
        raise DeviceError(f"board {board.name} lists no USB id to find its serial port by",
                          hint="pass --port (e.g. /dev/ttyACM0), or --emulate for its QEMU twin")
    found = find_serial_ports(ids)
    if not found:
        raise DeviceError(f"no serial port with USB id {', '.join(map(str, ids))} ({board.name}) is connected",
                          hint="plug the board in (its ST-LINK USB port), or pass --port; --emulate runs its twin")
    if len(found) > 1:
        raise DeviceError(f"several {board.name} boards are connected: {', '.join(found)}",
                          hint="choose one with --port")
    return found[0]


@contextmanager
def open_session(project_dir: Path, board: Board, link: Link, progress: Progress = say, extra: tuple = ()):
    """A device.Session with the project's agent firmware running: a host process, the QEMU twin
    (always stopped on leaving), or the board on its serial port, flashed first when it does
    not run this build. The session checks the build id. `extra`: more QEMU options."""
    from ..device import BuildIdMismatch, DeviceTimeout, PipeTransport, SerialTransport, Session, SocketTransport

    timeout = link.timeout
    build_id = project.read_marker(project_dir).get("build_id")
    if board.is_host:
        with project.host_agent(project_dir) as proc:
            with Session(PipeTransport(proc.stdin, proc.stdout), timeout=timeout, expect_build_id=build_id) as s:
                s.open()
                yield s
        return
    if link.emulate:
        progress(f"[run] {board.name} on QEMU {board.emulator.machine} (agent on a socket)")
        with project.qemu_agent(project_dir, board, extra=extra) as sock:
            with Session(SocketTransport(sock, f"QEMU {board.emulator.machine}"), timeout=timeout,
                         expect_build_id=build_id) as s:
                s.open()
                yield s
        return
    port = serial_port(board, link.port)
    baud = int(board.console.get("baud", 115200))
    session = Session(SerialTransport(port, baud), timeout=min(timeout, 3.0), expect_build_id=build_id)
    try:
        try:
            session.open()
            progress(f"[run] {board.name} on {port} already runs build {build_id}")
        except (BuildIdMismatch, DeviceTimeout) as e:
            session.close()
            progress(f"[flash] {board.name} on {port}: {e.message.split(':')[0]}; flashing")
            with progress_bar(progress, None, "flash", "step"):
                project.flash(project_dir, board, probe=link.probe, progress=progress)
            session = Session(SerialTransport(port, baud), timeout=timeout, expect_build_id=build_id)
            session.open()
        session.timeout = timeout
        yield session
    finally:
        session.close()
