"""Byte links to a device: a serial port (pyserial), a TCP socket (a QEMU twin), or the
pipes of a host-built firmware process. Each has write(bytes), read(timeout) -> bytes
(b"" when nothing came in time) and close(); a closed link raises LinkClosed.

Who starts the other end (QEMU, the host firmware) is not this package's business:
microcompile.project does that, and hands over the socket or the pipes.
"""

from __future__ import annotations

import os
import select
import socket
from dataclasses import dataclass

from microcompile.errors import DeviceError


class LinkClosed(DeviceError):
    """The other end closed the link (QEMU or the firmware process ended, a cable came out)."""


class SocketTransport:
    """A connected TCP socket, e.g. to QEMU's `-serial tcp:...`."""

    def __init__(self, sock: socket.socket, name: str = "socket"):
        self.sock = sock
        self.name = name
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def write(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as e:
            raise LinkClosed(f"{self.name}: the connection is gone ({e})") from None

    def read(self, timeout: float) -> bytes:
        ready, _, _ = select.select([self.sock], [], [], max(timeout, 0.0))
        if not ready:
            return b""
        try:
            data = self.sock.recv(65536)
        except OSError as e:
            raise LinkClosed(f"{self.name}: the connection is gone ({e})") from None
        if not data:
            raise LinkClosed(f"{self.name}: the device closed the connection")
        return data

    def close(self) -> None:
        self.sock.close()


class PipeTransport:
    """The stdin/stdout pipes of a host-built agent firmware (board `host`)."""

    def __init__(self, to_device, from_device, name: str = "host firmware"):
        self.to_device, self.from_device, self.name = to_device, from_device, name

    def write(self, data: bytes) -> None:
        try:
            self.to_device.write(data)
            self.to_device.flush()
        except (BrokenPipeError, ValueError, OSError):
            raise LinkClosed(f"{self.name}: the firmware process has ended") from None

    def read(self, timeout: float) -> bytes:
        fd = self.from_device.fileno()
        ready, _, _ = select.select([fd], [], [], max(timeout, 0.0))
        if not ready:
            return b""
        data = os.read(fd, 65536)
        if not data:
            raise LinkClosed(f"{self.name}: the firmware process has ended")
        return data

    def close(self) -> None:
        for f in (self.to_device, self.from_device):
            try:
                f.close()
            except OSError:
                pass


class SerialTransport:
    """A serial port (USB CDC of a probe, or a USB-UART cable), through pyserial."""

    def __init__(self, port: str, baud: int = 115200):
        import serial   # pyserial, only when a real port is used

        self.name = port
        try:
            self.port = serial.Serial(port, baudrate=baud, timeout=0)
        except (serial.SerialException, OSError, ValueError) as e:
            raise DeviceError(f"cannot open serial port {port}: {e}",
                              hint="check the port name (`python -m serial.tools.list_ports`) and that no "
                                   "other program (a terminal, another microcompile) has it open") from None
        self._serial = serial

    def write(self, data: bytes) -> None:
        try:
            self.port.write(data)
            self.port.flush()
        except (self._serial.SerialException, OSError) as e:
            raise LinkClosed(f"{self.name}: {e}") from None

    def read(self, timeout: float) -> bytes:
        try:
            self.port.timeout = max(timeout, 0.0)
            first = self.port.read(1)
            if not first:
                return b""
            self.port.timeout = 0
            return first + self.port.read(self.port.in_waiting or 0)
        except (self._serial.SerialException, OSError) as e:
            raise LinkClosed(f"{self.name}: {e}") from None

    def close(self) -> None:
        self.port.close()


@dataclass(frozen=True)
class UsbId:
    vid: int
    pid: int

    def __str__(self) -> str:
        return f"{self.vid:04x}:{self.pid:04x}"


def find_serial_ports(ids: list[UsbId]) -> list[str]:
    """The serial ports whose USB VID:PID is one of `ids` (serial.tools.list_ports), sorted."""
    from serial.tools import list_ports

    wanted = {(i.vid, i.pid) for i in ids}
    return sorted(p.device for p in list_ports.comports() if (p.vid, p.pid) in wanted)
