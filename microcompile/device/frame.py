"""Framing of the agent protocol, the host's half of runtime_c/agent/mc_frame.c.

A frame is `version, type, seq (u16 LE), payload, CRC-32 (LE, zlib's) of all before it`,
COBS-encoded and ended by a 0x00 delimiter; senders put a 0x00 before it too, so that
garbage on the line (a reset, a truncated frame) ends there. runtime_c/tests/frame_vectors.txt
holds frames both sides must encode and decode identically.
"""

from __future__ import annotations

import binascii
import struct
from dataclasses import dataclass

VERSION = 1
SEQ_NONE = 0xFFFF          # frames that answer no request: errors about unreadable frames, BOOT
HEADER = struct.Struct("<BBH")
MIN_BYTES = HEADER.size + 4


@dataclass(frozen=True)
class Frame:
    type: int
    seq: int
    payload: bytes
    version: int = VERSION


class FrameError(Exception):
    """A frame that did not decode. `kind`: oversize, malformed, short or crc (mc_frame_status_t)."""

    def __init__(self, kind: str, raw: bytes):
        super().__init__(f"{kind} frame ({len(raw)} bytes on the wire)")
        self.kind = kind
        self.raw = raw


def crc32(data: bytes) -> int:
    return binascii.crc32(data) & 0xFFFFFFFF


def seal(type_: int, seq: int, payload: bytes = b"", version: int = VERSION) -> bytes:
    """The decoded frame: header, payload, CRC."""
    body = HEADER.pack(version, type_, seq) + bytes(payload)
    return body + struct.pack("<I", crc32(body))


def cobs_encode(data: bytes) -> bytes:
    """COBS without the delimiter: blocks of a code byte (1 + non-zero bytes that follow,
    at most 254) standing for the bytes and, unless the block is full or last, a zero."""
    out = bytearray()
    start = 0
    while True:
        end = start
        while end < len(data) and data[end] != 0 and end - start < 254:
            end += 1
        code = end - start + 1
        out.append(code)
        out += data[start:end]
        if end == len(data):
            return bytes(out)
        start = end if code == 0xFF else end + 1


def cobs_decode(data: bytes) -> tuple[bytes, bool]:
    """(decoded bytes, complete): complete is False when a code byte promises more bytes
    than there are (a truncated frame)."""
    out = bytearray()
    i = 0
    while i < len(data):
        code = data[i]
        block = data[i + 1:i + code]
        out += block
        if len(block) < code - 1:
            return bytes(out), False
        i += code
        if i < len(data) and code != 0xFF:
            out.append(0)
    return bytes(out), True


def encode(type_: int, seq: int, payload: bytes = b"", version: int = VERSION) -> bytes:
    """The wire bytes of a frame as the vector file lists them: COBS and the delimiter
    (senders add a leading 0x00 as well)."""
    return cobs_encode(seal(type_, seq, payload, version)) + b"\0"


def parse(wire: bytes, capacity: int | None = None) -> Frame:
    """Decode the bytes between two delimiters; FrameError as the C decoder would report it."""
    decoded, complete = cobs_decode(wire)
    if capacity is not None and len(decoded) > capacity:
        raise FrameError("oversize", wire)
    if not complete:
        raise FrameError("malformed", wire)
    if len(decoded) < MIN_BYTES:
        raise FrameError("short", wire)
    body, (crc,) = decoded[:-4], struct.unpack("<I", decoded[-4:])
    if crc32(body) != crc:
        raise FrameError("crc", wire)
    version, type_, seq = HEADER.unpack_from(body)
    return Frame(type_, seq, body[HEADER.size:], version)


class Decoder:
    """Splits a byte stream at delimiters into Frames and FrameErrors (empty frames are skipped)."""

    def __init__(self, capacity: int | None = None, limit: int = 1 << 20):
        self.capacity = capacity
        self.limit = limit          # never hold more than this much of an unfinished frame
        self._pending = bytearray()
        self.dropped = 0

    @property
    def busy(self) -> bool:
        return bool(self._pending)

    def feed(self, data: bytes) -> list[Frame | FrameError]:
        out: list[Frame | FrameError] = []
        for piece_end in _split(data):
            piece, ended = piece_end
            self._pending += piece
            if len(self._pending) > self.limit:
                self.dropped += len(self._pending)
                self._pending.clear()
                out.append(FrameError("oversize", b""))
            if ended:
                wire, self._pending = bytes(self._pending), bytearray()
                if wire:
                    try:
                        out.append(parse(wire, self.capacity))
                    except FrameError as e:
                        out.append(e)
        return out


def _split(data: bytes):
    """(piece, ended at a delimiter) for each part of `data`."""
    parts = bytes(data).split(b"\0")
    for k, part in enumerate(parts):
        yield part, k < len(parts) - 1
