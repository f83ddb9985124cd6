"""What the fit report needs from a firmware ELF: its allocated sections (with load addresses)
and its sized symbols.

Read with pyelftools (the optional extra `microcompile[elf]`). Without it, the sections come from
`arm-none-eabi-objdump -h` and there are no symbols (the report says how to get them).
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from microcompile.errors import ToolchainError, UserError
from microcompile.files import tool_arg
from microcompile.project import children


@dataclass(frozen=True)
class Section:
    name: str
    addr: int        # run address (VMA)
    lma: int         # load address (where its initial bytes sit in flash); == addr unless copied at boot
    size: int
    loaded: bool     # has bytes in the image (PROGBITS), not just reserved (NOBITS)


@dataclass(frozen=True)
class Symbol:
    name: str
    addr: int
    size: int
    kind: str        # "function" or "object"
    section: str     # the output section it lives in


@dataclass(frozen=True)
class ElfImage:
    path: Path
    sections: tuple[Section, ...]
    symbols: tuple[Symbol, ...] | None   # None without pyelftools

    def section(self, name: str) -> Section | None:
        return next((s for s in self.sections if s.name == name), None)


def have_pyelftools() -> bool:
    try:
        import elftools  # noqa: F401
    except ImportError:
        return False
    return True


def read_elf(path: str | Path) -> ElfImage:
    """The allocated sections and sized symbols of an ELF; UserError if it is not one."""
    path = Path(path)
    if not path.is_file():
        raise UserError(f"{path} not found")
    with open(path, "rb") as f:
        if f.read(4) != b"\x7fELF":
            raise UserError(f"{path} is not an ELF file", hint="pass the firmware.elf that the build wrote")
    if have_pyelftools():
        return _read_pyelftools(path)
    return _read_objdump(path)


def _read_pyelftools(path: Path) -> ElfImage:
    from elftools.common.exceptions import ELFError
    from elftools.elf.constants import SH_FLAGS
    from elftools.elf.elffile import ELFFile

    try:
        with open(path, "rb") as f:
            elf = ELFFile(f)
            segments = [s for s in elf.iter_segments() if s["p_type"] == "PT_LOAD"]
            sections, names = [], {}
            for i, s in enumerate(elf.iter_sections()):
                names[i] = s.name
                if not s["sh_flags"] & SH_FLAGS.SHF_ALLOC or s["sh_size"] == 0:
                    continue
                addr = s["sh_addr"]
                # The load address: the same offset into the segment that holds the section.
                seg = next((g for g in segments if g["p_vaddr"] <= addr < g["p_vaddr"] + max(g["p_memsz"], 1)), None)
                lma = seg["p_paddr"] + (addr - seg["p_vaddr"]) if seg is not None else addr
                sections.append(Section(s.name, addr, lma, s["sh_size"], s["sh_type"] != "SHT_NOBITS"))
            symbols = []
            symtab = elf.get_section_by_name(".symtab")
            for sym in (symtab.iter_symbols() if symtab is not None else ()):
                kind = {"STT_FUNC": "function", "STT_OBJECT": "object"}.get(sym["st_info"]["type"])
                shndx = sym["st_shndx"]
                if kind is None or sym["st_size"] == 0 or not isinstance(shndx, int):
                    continue
                symbols.append(Symbol(sym.name, sym["st_value"] & ~1 if kind == "function" else sym["st_value"],
                                      sym["st_size"], kind, names.get(shndx, "")))
    except ELFError as e:
        raise UserError(f"{path} is not a readable ELF file: {e}") from None
    return ElfImage(path, tuple(sections), tuple(symbols))


_OBJDUMP_ROW = re.compile(r"^\s*\d+\s+(\S+)\s+([0-9a-fA-F]+)\s+([0-9a-fA-F]+)\s+([0-9a-fA-F]+)\s+[0-9a-fA-F]+\s+\S+\s*$")


def _read_objdump(path: Path) -> ElfImage:
    tool = "arm-none-eabi-objdump" if shutil.which("arm-none-eabi-objdump") else shutil.which("objdump")
    if tool is None:
        raise ToolchainError("neither pyelftools nor arm-none-eabi-objdump is installed to read the ELF",
                             hint="pip install 'microcompile[elf]', or install gcc-arm-none-eabi")
    proc = children.run([tool, "-h", tool_arg(path)], text=True)
    if proc.returncode != 0:
        raise UserError(f"{path} is not a readable ELF file: {proc.stderr.strip() or f'{tool} failed'}")
    out = proc.stdout
    lines = out.splitlines()
    sections = []
    for i, line in enumerate(lines):
        m = _OBJDUMP_ROW.match(line)
        if not m:
            continue
        flags = lines[i + 1] if i + 1 < len(lines) else ""
        size = int(m.group(2), 16)
        if "ALLOC" not in flags or size == 0:
            continue
        sections.append(Section(m.group(1), int(m.group(3), 16), int(m.group(4), 16), size, "LOAD" in flags))
    return ElfImage(path, tuple(sections), None)
