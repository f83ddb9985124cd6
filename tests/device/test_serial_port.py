"""The serial transport: pyserial on a pseudo-terminal with the host agent firmware at the other end
(the real-board code path, short of a USB cable), and finding a board by its USB VID:PID."""

import os
from types import SimpleNamespace

import pytest

from support import flows
from microcompile.device import SerialTransport, Session, UsbId, find_serial_ports
from microcompile.errors import DeviceError
from microcompile.project import children
from microcompile.target import load_board
from microcompile.deploy import serial_port
from support.host_agent_build import built  # noqa: F401  (fixture)


def test_a_session_over_a_serial_port(built):  # noqa: F811
    master, slave = os.openpty()
    port = os.ttyname(slave)
    try:
        with children.spawn([str(built["project"] / "firmware")], stdin=master, stdout=master), \
                Session(SerialTransport(port, 115200), timeout=5, expect_build_id=built["build_id"]) as s:
            out = s.run([built["x"]])
            assert len(out[0].data) == out[0].spec.bytes
            assert s.stats().runs == 1
    finally:
        os.close(master)
        os.close(slave)


def test_a_missing_port_is_a_clear_error(tmp_path):
    with pytest.raises(DeviceError, match=r"cannot open serial port .*nope") as e:
        SerialTransport(str(tmp_path / "nope"))
    assert "list_ports" in e.value.hint


def _ports(monkeypatch, *ports):
    from serial.tools import list_ports

    fake = [SimpleNamespace(device=d, vid=v, pid=p) for d, v, p in ports]
    monkeypatch.setattr(list_ports, "comports", lambda: fake)


def test_ports_are_found_by_usb_id(monkeypatch):
    _ports(monkeypatch, ("/dev/ttyACM1", 0x0483, 0x374B), ("/dev/ttyUSB0", 0x0403, 0x6001),
           ("/dev/ttyACM0", 0x0483, 0x374B), ("/dev/ttyS0", None, None))
    assert find_serial_ports([UsbId(0x0483, 0x374B)]) == ["/dev/ttyACM0", "/dev/ttyACM1"]
    assert find_serial_ports([UsbId(0x1366, 0x0105)]) == []


def test_the_board_data_names_the_st_link(monkeypatch, tmp_path):
    board = load_board("stm32")
    assert (board.probe.usb_vid, board.probe.usb_pid) == (0x0483, 0x374B)
    _ports(monkeypatch, ("/dev/ttyACM3", 0x0483, 0x374B))
    assert serial_port(board, None) == "/dev/ttyACM3"
    given = tmp_path / "ttyUSB9"
    given.touch()
    assert serial_port(board, str(given)) == str(given)     # --port wins
    with pytest.raises(DeviceError, match="ttyUSB8 does not exist"):  # ... when it exists
        serial_port(board, str(tmp_path / "ttyUSB8"))
    _ports(monkeypatch)
    with pytest.raises(DeviceError, match="no serial port with USB id 0483:374b") as e:
        serial_port(board, None)
    assert "--port" in e.value.hint and "--emulate" in e.value.hint
    _ports(monkeypatch, ("/dev/ttyACM0", 0x0483, 0x374B), ("/dev/ttyACM1", 0x0483, 0x374B))
    with pytest.raises(DeviceError, match="several nucleo-f446re boards"):
        serial_port(board, None)
    with pytest.raises(DeviceError, match="lists no USB id"):
        serial_port(load_board("mps2-an386"), None)
