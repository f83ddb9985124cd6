"""Input sections of a linked firmware, from the linker's map file (firmware.map).

With -ffunction-sections/-fdata-sections every function and constant is an input section of
its own (`.rodata.mc_k0_conv2d_weights`), which the map lists with its address and size, so
the flash a set of symbols takes is read off what was actually linked (after --gc-sections).
"""

from __future__ import annotations

import re
from pathlib import Path

# " .rodata.name" then, on the same line or the next, "0xADDRESS 0xSIZE object"
_SECTION = re.compile(r"^ (\.[\w.$]+)\s+0x([0-9a-fA-F]+)\s+0x([0-9a-fA-F]+)\s+\S", re.M)


def section_sizes(map_path: str | Path) -> dict[str, int]:
    """{input section name: bytes} for every linked input section."""
    text = Path(map_path).read_text(errors="replace")
    sizes: dict[str, int] = {}
    for name, _addr, size in _SECTION.findall(text):
        sizes[name] = sizes.get(name, 0) + int(size, 16)
    return sizes


def symbols_bytes(map_path: str | Path, symbols, prefix: str = ".rodata.") -> int | None:
    """Total bytes of the sections `prefix + symbol` that were linked; None if none is found."""
    sizes = section_sizes(map_path)
    found = [sizes[prefix + s] for s in symbols if prefix + s in sizes]
    return sum(found) if found else None


def prefix_bytes(map_path: str | Path, prefix: str) -> int:
    """Total bytes of the linked sections whose name starts with `prefix`."""
    return sum(v for k, v in section_sizes(map_path).items() if k.startswith(prefix))
