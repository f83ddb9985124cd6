"""The agent's commands, status codes and INFO layout: the host's copy of runtime_c/agent/mc_agent.h
(tests/device/test_protocol_constants.py checks the two agree)."""

from __future__ import annotations

import struct
from dataclasses import dataclass

CMD_INFO = 0x01
CMD_SET_INPUT = 0x02
CMD_RUN = 0x03
CMD_GET_OUTPUT = 0x04
CMD_GET_TENSOR = 0x05
CMD_PROFILE = 0x06
CMD_RESET = 0x07
CMD_STATS = 0x08
MSG_BOOT = 0x7E
MSG_ERROR = 0xFF
REPLY = 0x80

RUN_PROFILE = 0x01
RUN_ALL = 0xFFFF

OK = 0
ERR_CRC = 1
ERR_MALFORMED = 2
ERR_OVERSIZE = 3
ERR_VERSION = 4
ERR_SEQUENCE = 5
ERR_NO_SESSION = 6
ERR_COMMAND = 7
ERR_ARGUMENT = 8
ERR_NO_INPUT = 9
ERR_NOT_READY = 10
ERR_TIMEOUT = 11

ERROR_NAMES = {ERR_CRC: "bad CRC", ERR_MALFORMED: "malformed frame", ERR_OVERSIZE: "frame too large",
               ERR_VERSION: "protocol version", ERR_SEQUENCE: "out of sequence", ERR_NO_SESSION: "no session",
               ERR_COMMAND: "unknown command", ERR_ARGUMENT: "argument out of range",
               ERR_NO_INPUT: "input not set", ERR_NOT_READY: "not ready", ERR_TIMEOUT: "truncated frame"}
# Errors about a request the agent never read intact: sending it again is the cure.
RESEND = {ERR_CRC, ERR_MALFORMED, ERR_TIMEOUT}

INFO_FORMAT = 1
UNITS = {0: "cycles", 1: "instructions", 2: "ns"}     # MC_COUNTER_* of mc_platform.h
DTYPES = {0: "int8", 1: "float32", 2: "int32", 3: "int16", 4: "uint32", 5: "uint64"}   # mc_dtype_t
DTYPE_CODES = {"int8": "b", "float32": "f", "int32": "i", "int16": "h", "uint32": "I", "uint64": "Q"}  # array module
DTYPE_BYTES = {"int8": 1, "float32": 4, "int32": 4, "int16": 2, "uint32": 4, "uint64": 8}


@dataclass(frozen=True)
class TensorSpec:
    name: str
    dtype: str
    shape: tuple[int, ...]
    scale: float
    zero_point: int
    bytes: int
    kernel: int | None = None      # for planned tensors: the kernel that writes it


@dataclass(frozen=True)
class KernelSpec:
    name: str
    op: str
    macs: int


@dataclass(frozen=True)
class Info:
    """What the firmware says about itself (INFO)."""

    protocol: int
    build_id: str                  # 16 hex digits
    model: str
    arena_bytes: int
    chunk_bytes: int               # the most data bytes one frame carries
    unit: str                      # "cycles", "instructions" or "ns"
    per_count: int                 # units per counter tick
    counts_per_second: int
    inputs: tuple[TensorSpec, ...]
    outputs: tuple[TensorSpec, ...]
    kernels: tuple[KernelSpec, ...]
    tensors: tuple[TensorSpec, ...]

    def to_units(self, ticks: int) -> int:
        """Counter ticks in `unit`. Under QEMU -icount shift=0 an instruction takes exactly 1 ns,
        so a counter of `counts_per_second` ticks is 1e9 / counts_per_second instructions per
        tick, also where that is not an integer (the AN547's 32 MHz SysTick: 31.25)."""
        if self.unit == "instructions" and self.counts_per_second:
            return round(ticks * 1e9 / self.counts_per_second)
        return ticks * self.per_count

    def resolution(self) -> float:
        """Units per counter tick: two runs of one build may differ by this much, because where
        the counter's tick falls against the first instruction depends on when the host's bytes
        arrived (the agent polls the UART until then)."""
        if self.unit == "instructions" and self.counts_per_second:
            return 1e9 / self.counts_per_second
        return float(self.per_count)


class _Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        s = struct.Struct("<" + fmt)
        if self.pos + s.size > len(self.data):
            raise ValueError(f"info ends at byte {len(self.data)}, wanted {self.pos + s.size}")
        values = s.unpack_from(self.data, self.pos)
        self.pos += s.size
        return values if len(values) > 1 else values[0]

    def text(self) -> str:
        n = self.take("H")
        if self.pos + n > len(self.data):
            raise ValueError("info string runs past the end")
        s = self.data[self.pos:self.pos + n].decode("utf-8", errors="replace")
        self.pos += n
        return s

    def tensor(self, kernel: int | None = None) -> TensorSpec:
        name = self.text()
        dtype, ndim = self.take("BB")
        shape = tuple(self.take("i") for _ in range(ndim))
        scale, zp, nbytes = self.take("fiI")
        if dtype not in DTYPES:
            raise ValueError(f"tensor {name!r} has unknown dtype code {dtype}")
        return TensorSpec(name, DTYPES[dtype], shape, scale, zp, nbytes, kernel)


def parse_info(data: bytes) -> Info:
    """Parse INFO's bytes (layout in runtime_c/agent/mc_agent.c, write_info). ValueError if garbled."""
    r = _Reader(data)
    fmt, protocol = r.take("BB")
    if fmt != INFO_FORMAT:
        raise ValueError(f"info format {fmt}, this host reads {INFO_FORMAT}")
    build = r.take("8s").hex()
    arena, chunk, unit, per_count, hz = r.take("IIBII")
    n_in, n_out, n_k, n_t = r.take("HHHH")
    model = r.text()
    inputs = tuple(r.tensor() for _ in range(n_in))
    outputs = tuple(r.tensor() for _ in range(n_out))
    kernels = tuple(KernelSpec(r.text(), r.text(), r.take("I")) for _ in range(n_k))
    tensors = []
    for _ in range(n_t):
        kernel = r.take("H")
        tensors.append(r.tensor(kernel))
    if r.pos != len(data):
        raise ValueError(f"{len(data) - r.pos} bytes left over after the info")
    return Info(protocol, build, model, arena, chunk, UNITS.get(unit, f"unit{unit}"), per_count, hz,
                inputs, outputs, kernels, tuple(tensors))


# ---- request payloads ----

def info_request(offset: int) -> bytes:
    return struct.pack("<I", offset)


def set_input_request(index: int, offset: int, data: bytes) -> bytes:
    return struct.pack("<BI", index, offset) + bytes(data)


def run_request(profile: bool = False, end: int = RUN_ALL) -> bytes:
    return struct.pack("<BH", RUN_PROFILE if profile else 0, end)


def get_output_request(index: int, offset: int, count: int) -> bytes:
    return struct.pack("<BIH", index, offset, count)


def get_tensor_request(entry: int, offset: int, count: int) -> bytes:
    return struct.pack("<HIH", entry, offset, count)


def profile_request(first: int) -> bytes:
    return struct.pack("<H", first)
