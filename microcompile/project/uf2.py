"""UF2 images (Microsoft's USB flashing format, github.com/microsoft/uf2, section "File format"):
what a board's mass-storage boot loader (the RP2040's BOOTSEL drive) flashes when a file is
copied to it.

A UF2 file is a sequence of 512-byte blocks, each carrying 256 bytes of the image at its target
address, with magic numbers at both ends and the chip's family ID.
"""

from __future__ import annotations

import struct

MAGIC_START0 = 0x0A324655   # "UF2\n"
MAGIC_START1 = 0x9E5D5157
MAGIC_END = 0x0AB16F30
FLAG_FAMILY_ID = 0x00002000
PAYLOAD = 256               # bytes of image per block (the RP2040 boot ROM takes 256 only)


def to_uf2(image: bytes, base: int, family_id: int) -> bytes:
    """The UF2 blocks of `image`, to be written at `base`."""
    count = max(1, -(-len(image) // PAYLOAD))
    blocks = []
    for i in range(count):
        chunk = image[i * PAYLOAD:(i + 1) * PAYLOAD].ljust(PAYLOAD, b"\0")
        header = struct.pack("<8I", MAGIC_START0, MAGIC_START1, FLAG_FAMILY_ID, base + i * PAYLOAD, PAYLOAD, i,
                             count, family_id)
        blocks.append(header + chunk.ljust(476, b"\0") + struct.pack("<I", MAGIC_END))
    return b"".join(blocks)


def from_uf2(data: bytes) -> dict[int, bytes]:
    """{address: payload} of every block (for tests and checks); ValueError on a bad block."""
    out = {}
    for off in range(0, len(data), 512):
        block = data[off:off + 512]
        m0, m1, flags, addr, size, _, _, _ = struct.unpack_from("<8I", block)
        (end,) = struct.unpack_from("<I", block, 508)
        if (m0, m1, end) != (MAGIC_START0, MAGIC_START1, MAGIC_END) or size > 476:
            raise ValueError(f"bad UF2 block at offset {off}")
        out[addr] = block[32:32 + size]
    return out
