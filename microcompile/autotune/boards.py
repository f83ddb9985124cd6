"""Several real boards measuring at once (`tune --jobs N` without --emulate): which boards.

Each job owns one board, a (probe, serial port) pair: it flashes its candidates with that probe
and talks to the agent over that port. The pairs come from the command line or are discovered:

    --port P1 --probe ID1 --port P2 --probe ID2    paired in order
    --port P1 --port P2                           each port's probe is the one with the port's USB
                                                  serial number (an ST-LINK's virtual COM port and its
                                                  debug interface share it; so do J-Link and CMSIS-DAP)
    --probe ID1 --probe ID2                       each probe's port: the port with that serial number
    (neither)                                     every attached port of the board's probe VID:PID

Fewer boards than --jobs is a UserError naming the boards found. Only tested against fakes
(pseudo-terminals as ports, fake flash tools on PATH): no real board was attached.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError


@dataclass(frozen=True)
class BoardLink:
    """One board of the pool: its debug probe's id (None: the only one attached) and its serial
    port (None: found by the board's USB id)."""

    probe: str | None
    port: str | None

    def __str__(self) -> str:
        return f"{self.port or 'the board'}" + (f" (probe {self.probe})" if self.probe else "")


def attached(board) -> list[BoardLink]:
    """Every serial port with the board's probe USB VID:PID, with its USB serial number as the
    probe id (None when the system does not report one), sorted by port."""
    from serial.tools import list_ports

    probe = board.probe
    if probe is None or probe.usb_vid is None:
        return []
    found = [p for p in list_ports.comports() if (p.vid, p.pid) == (probe.usb_vid, probe.usb_pid)]
    return sorted((BoardLink(getattr(p, "serial_number", None) or None, p.device) for p in found),
                  key=lambda b: b.port)


def _check_port(port: str) -> None:
    if "://" not in port and not Path(port).exists():
        raise UserError(f"serial port {port} does not exist",
                        hint="check the name (`python -m serial.tools.list_ports` lists the ports)")


def resolve_boards(board, jobs: int, ports: list[str], probes: list[str]) -> list[BoardLink]:
    """The `jobs` boards of the pool for real board `board` (target.Board)."""
    ports, probes = list(ports or []), list(probes or [])
    if jobs == 1 and len(ports) <= 1 and len(probes) <= 1:
        return [BoardLink(probes[0] if probes else None, ports[0] if ports else None)]
    for name, values in (("--port", ports), ("--probe", probes)):
        twice = sorted({v for v in values if values.count(v) > 1})
        if twice:
            raise UserError(f"{name} {twice[0]} is given twice", hint="each job needs a board of its own")
    given = ports or probes
    if given and len(given) < jobs:
        raise _too_few(board, jobs, [BoardLink(None, p) for p in ports] or [BoardLink(i, None) for i in probes])
    if ports and probes:
        if len(ports) != len(probes):
            raise UserError(f"{len(ports)} --port but {len(probes)} --probe",
                            hint="give one --probe per --port, in the same order (or only the ports)")
        links = [BoardLink(i, p) for p, i in zip(ports, probes)]
    elif ports or probes:
        found = attached(board)
        by_port = {b.port: b.probe for b in found}
        by_probe = {b.probe: b.port for b in found if b.probe}
        links = []
        for p in ports:
            if by_port.get(p) is None:
                raise UserError(f"cannot tell which probe flashes the board on {p} (no {board.name} probe with "
                                "that port's USB serial number is attached)", hint="pair it: --port P --probe ID")
            links.append(BoardLink(by_port[p], p))
        for i in probes:
            if i not in by_probe:
                raise UserError(f"cannot tell the serial port of probe {i} (no {board.name} port with that USB "
                                "serial number is attached)", hint="pair it: --port P --probe ID")
            links.append(BoardLink(i, by_probe[i]))
    else:
        links = attached(board)
        unknown = [b.port for b in links if b.probe is None]
        if len(links) > 1 and unknown:
            raise UserError(f"the USB serial number of {', '.join(unknown)} is unknown, so its probe is too",
                            hint="pair each board: --port P --probe ID (repeat for each)")
    for b in links:
        if b.port:
            _check_port(b.port)
    if len(links) < jobs:
        raise _too_few(board, jobs, links)
    return links[:jobs]


def _too_few(board, jobs: int, links: list[BoardLink]) -> UserError:
    seen = ", ".join(str(b) if b.port else f"probe {b.probe}" for b in links) or "none"
    return UserError(f"--jobs {jobs} on real boards needs {jobs} {board.name} boards; found {len(links)}: {seen}",
                     hint=f"attach more boards, give one --port (and --probe) per board, lower --jobs to "
                          f"{max(1, len(links))}, or add --emulate for QEMU twins")
