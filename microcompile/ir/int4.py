"""Packed int4: two signed 4-bit values per byte, the first in the low nibble.

This is TFLite's INT4 tensor layout (LiteRT reads it so: checked by swapping the nibbles,
which changes its outputs) and the layout of int4 weights in our firmware's flash, which
runtime_c's mc_unpack_s4 expands. An odd count leaves the last high nibble zero."""

from __future__ import annotations

import numpy as np

INT4_RANGE = (-8, 7)


def is_int4(values) -> bool:
    """Whether every value (an array of any shape; none at all is true) lies in -8..7."""
    v = np.asarray(values)
    return not v.size or (INT4_RANGE[0] <= int(v.min()) and int(v.max()) <= INT4_RANGE[1])


def packed_bytes(count: int) -> int:
    """Bytes `count` int4 values take packed."""
    return (count + 1) // 2


def pack_int4(values: np.ndarray) -> bytes:
    """The values (integers in -8..7, any shape, row-major) packed two per byte."""
    v = np.asarray(values).reshape(-1).astype(np.int16)
    if not is_int4(v):
        raise ValueError(f"int4 values must lie in -8..7, got {int(v.min())}..{int(v.max())}")
    nibbles = (v & 0xF).astype(np.uint8)
    if nibbles.size % 2:
        nibbles = np.append(nibbles, np.uint8(0))
    return (nibbles[0::2] | (nibbles[1::2] << 4)).astype(np.uint8).tobytes()


def unpack_int4(data: bytes, count: int) -> np.ndarray:
    """The first `count` values of packed int4 `data`, as an int8 array."""
    b = np.frombuffer(data, np.uint8)
    out = np.empty(2 * b.size, np.int8)
    # Sign-extend a nibble: shift it to the top of an int8, then back arithmetically.
    out[0::2] = (b << 4).astype(np.uint8).view(np.int8) >> 4
    out[1::2] = b.view(np.int8) >> 4
    return out[:count].copy()
