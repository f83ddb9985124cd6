"""Hostile names: random byte strings for op, tensor and model names, and the injection
shapes seen in the wild, put into a model file by patching placeholders.

A model is built with placeholder names (`placeholder(i)`, all the same length) through
microcompile's own writers, then each placeholder's bytes in the file are replaced by a
hostile name of the same length. Flatbuffer and protobuf strings carry their length, so
the file stays well-formed whatever the bytes are: invalid UTF-8, NUL, newlines and all.
"""

from __future__ import annotations

import random

# The bytes that make trouble in C, Makefiles, shells and terminals, weighted up.
_NASTY = [b"*", b"/", b"\\", b"\n", b"\r", b'"', b"'", b"?", b"%", b"#", b"$", b"`", b"{", b"}", b";", b"(", b")",
          b"\x00", b"\x1b", b"\x7f", b"\t", b"\x0b", b"\x0c", b"@", b"<", b">", b"!", b"&", b"|", b"^", b"~", b"=",
          "\u202e".encode(), "\u2066".encode(), "\u200b".encode(), "\u200d".encode(), "\ufeff".encode(),
          "\u00e9".encode(), "\u4e2d".encode(), "\U0001F600".encode(),
          b"\xff", b"\xc0", b"\x80", b"\xe2\x80", b"\xf0\x9f"]          # invalid UTF-8
# Whole payloads: a comment closed by a line splice or a trigraph, then code.
PAYLOADS = [b"*\\\n/ int mc_injected_global = 1; /*", b"x??/\n/ int mc_injected_trigraph; /*",
            b"*/ #include \"/etc/hostname\" /*", b"model/conv2d/*", b"*/\n#error injected\n/*",
            b"\"); system(\"id\"); (\"", b"$(shell touch injected)", b"\x1b[2J\x1b[31mred", b"\xe2\x80\xaeevil",
            b"a\\", b"//", b"/*", b"*/", b"??=", b"\\x41\\101", b"%s%n%x"]
NAME_BYTES = 24      # every hostile name is this long: placeholders are this long too


def random_name(rng: random.Random, length: int = NAME_BYTES) -> bytes:
    """`length` bytes: every ASCII control character and the troublesome punctuation, bidi
    and zero-width marks, other UTF-8, invalid UTF-8 and plain letters, or a payload."""
    if rng.random() < 0.15:
        p = rng.choice(PAYLOADS)
        return (p + b"_" * length)[:length]
    out = b""
    while len(out) < length:
        r = rng.random()
        if r < 0.45:
            out += rng.choice(_NASTY)
        elif r < 0.65:
            out += bytes([rng.randrange(0, 32)])                 # any ASCII control character
        elif r < 0.75:
            out += bytes([rng.randrange(128, 256)])              # a stray high byte
        else:
            out += bytes([rng.choice(b"abcdefghijklmnopqrstuvwxyz0123456789_")])
    return out[:length]


def placeholder(i: int, length: int = NAME_BYTES) -> str:
    """The i-th placeholder: ASCII, unique, `length` bytes, found nowhere else in a model file."""
    return f"QZPH{i:06d}".ljust(length, "Q")


def patch(data: bytes, names: dict[str, bytes]) -> bytes:
    """`data` with every occurrence of each placeholder replaced by its name (same length)."""
    for ph, name in names.items():
        assert len(name) == len(ph.encode()) and data.count(ph.encode()) >= 1, ph
        data = data.replace(ph.encode(), name)
    return data


def hostile_names(rng: random.Random, count: int) -> list[bytes]:
    """`count` distinct hostile names (distinct once decoded as TFLite and ONNX readers do,
    with U+FFFD for invalid UTF-8, so that no two collide into one)."""
    seen, out = set(), []
    while len(out) < count:
        n = random_name(rng)
        key = n.decode("utf-8", "replace")
        if key not in seen and n.strip(b"\x00"):
            seen.add(key)
            out.append(n)
    return out
