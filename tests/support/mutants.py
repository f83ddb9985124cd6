"""Seeded byte mutators for the fuzz tests: corrupted .tflite, .onnx and .npy files.

A mutant is the original file with one to four edits. Uniform edits of a model mostly land
in its weights, which only changes the numbers, so most edits aim at the structure:

  - TFLite: the bytes outside the buffers' data (tables, vtables, shapes, indices,
    quantization vectors), as single bytes or as aligned 32-bit words set to values that
    break sizes and indices (0, 1, -1, 2^31 - 1, ...); now and then a word of the data
    itself (an int32 bias at INT32_MAX, a float weight at NaN);
  - ONNX: any byte of the protobuf (varint lengths, tags, dims, attribute values);
  - .npy: the header (magic, version, dict) more than the payload.

Everything is drawn from `random.Random(seed)`, so a failing mutant is reproduced by its
index: `mutants(data, seed, n)[i]`.
"""

from __future__ import annotations

import random

# 32-bit words that break sizes, counts, offsets and indices, or are special floats.
SPECIAL_WORDS = (0, 1, 2, 3, 4, 7, 0xFF, 0x100, 0xFFFF, 0x10000, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF,
                 0xFFFFFFFE, 0x7FC00000, 0x7F800000, 0xFF800000, 0x00000001, 0x3F800000)


def tflite_data_ranges(data: bytes) -> list[tuple[int, int]]:
    """[start, end) of every buffer's data vector in a .tflite file."""
    import flatbuffers
    import tflite

    model = tflite.Model.GetRootAs(data, 0)
    ranges = []
    for i in range(model.BuffersLength()):
        b = model.Buffers(i)
        o = flatbuffers.number_types.UOffsetTFlags.py_type(b._tab.Offset(4))
        if o:
            start = b._tab.Vector(o)
            ranges.append((start, start + b._tab.VectorLen(o)))
    return ranges


def _outside(ranges: list[tuple[int, int]], size: int) -> list[int]:
    inside = bytearray(size)
    for a, b in ranges:
        inside[a:b] = b"\x01" * (b - a)
    return [i for i in range(size) if not inside[i]]


def _set_word(buf: bytearray, pos: int, value: int) -> None:
    pos -= pos % 4
    if pos + 4 <= len(buf):
        buf[pos:pos + 4] = value.to_bytes(4, "little")


def tflite_mutants(data: bytes, seed: int, n: int) -> list[bytes]:
    rng = random.Random(seed)
    ranges = tflite_data_ranges(data)
    meta = _outside(ranges, len(data))
    words_in_data = [(a, b) for a, b in ranges if b - a >= 4]
    out = []
    for _ in range(n):
        buf = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 3, 4))):
            r = rng.random()
            if r < 0.45:
                buf[rng.choice(meta)] = rng.randrange(256)
            elif r < 0.85:
                _set_word(buf, rng.choice(meta), rng.choice(SPECIAL_WORDS))
            elif r < 0.95 and words_in_data:
                a, b = rng.choice(words_in_data)
                _set_word(buf, rng.randrange(a, b - 3), rng.choice(SPECIAL_WORDS))
            else:
                buf[rng.randrange(len(buf))] ^= 1 << rng.randrange(8)
        out.append(bytes(buf))
    return out


def bytes_mutants(data: bytes, seed: int, n: int, hot: int = 0, hot_share: float = 0.0) -> list[bytes]:
    """Generic mutants: random bytes, bit flips, special words, a cut or a duplicated slice.
    `hot_share` of the edits land in the first `hot` bytes (a header)."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        buf = bytearray(data)
        for _ in range(rng.choice((1, 1, 2, 3))):
            pos = rng.randrange(min(hot, len(buf))) if hot and rng.random() < hot_share else rng.randrange(len(buf))
            r = rng.random()
            if r < 0.4:
                buf[pos] = rng.randrange(256)
            elif r < 0.6:
                buf[pos] ^= 1 << rng.randrange(8)
            elif r < 0.8:
                _set_word(buf, pos, rng.choice(SPECIAL_WORDS))
            elif r < 0.9:
                del buf[pos:]
            else:
                buf[pos:pos] = buf[pos:pos + rng.randrange(1, 16)]
            if not buf:
                break
        out.append(bytes(buf))
    return out
