"""Compile an export's sources with the board's toolchain: the prebuilt library (library.py)
and the code bytes microcompile.json reports.

Objects are compiled from relative paths in a scratch copy of the tree, without debug
information, so that they (and an archive of them) are the same on every machine.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..errors import ToolchainError
from ..project import children
from ..project.toolchain import compiler
from ..target import Board
from .tree import LibraryTree

CFLAGS = ("-O2", "-ffunction-sections", "-fdata-sections", "-Wall", "-Wextra", "-Werror", "-std=c99")


def tools(board: Board) -> tuple[str, str, str]:
    """(cc, ar, size) of the board's toolchain; ToolchainError when one is missing."""
    cc = compiler(board)
    prefix = "" if board.is_host else "arm-none-eabi-"
    found = (cc, f"{prefix}ar", f"{prefix}size")
    for tool in found:
        if shutil.which(tool) is None:
            raise ToolchainError(f"{tool} is not installed", hint="install the board's toolchain (scripts/setup)")
    return found


@contextlib.contextmanager
def compiled(tree: LibraryTree, sources: list[str]) -> Iterator[tuple[Path, dict[str, str]]]:
    """A scratch copy of the tree with `sources` compiled: (its root, {source: object})."""
    cc, _, _ = tools(tree.board)
    flags = [*tree.board.target.cflags, *CFLAGS]
    include = (tree.flat or "include/").rstrip("/")
    with tempfile.TemporaryDirectory(prefix="microcompile-export-build-") as tmp:
        root = Path(tmp)
        for rel, data in tree.files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        objects = {}
        for k, src in enumerate(sources):
            obj = f"obj/{k:03d}_{Path(src).stem}.o"
            (root / obj).parent.mkdir(parents=True, exist_ok=True)
            tool([cc, *flags, f"-I{include}", "-c", src, "-o", obj], root, f"compiling {src}")
            objects[src] = obj
        yield root, objects


def tool(cmd: list[str], cwd: Path, what: str) -> subprocess.CompletedProcess:
    try:
        p = children.run(cmd, cwd=cwd, timeout=600)
    except subprocess.TimeoutExpired:
        raise ToolchainError(f"{cmd[0]} took more than 10 minutes {what}") from None
    if p.returncode != 0:
        err = (p.stderr or b"").decode(errors="replace").strip().splitlines()
        raise ToolchainError(f"{cmd[0]} failed {what}: {err[-1] if err else 'no message'}",
                             hint="this is a bug in microcompile if the toolchain is installed correctly")
    return p


def code_bytes(tree: LibraryTree) -> dict:
    """Flash the code takes, per model (its kernels' functions and tables, weights apart) and
    for the shared runtime and kernels: the compiled objects' text and data, before the link
    drops what nothing calls (so an upper bound). {} when the toolchain is missing."""
    try:
        _, _, size = tools(tree.board)
    except ToolchainError:
        return {}
    weights = {f"{m.name}_weights.c" for m in tree.models}
    model_code = {m.name: [s for s in tree.model_sources(m) if Path(s).name not in weights] for m in tree.models}
    shared = tree.runtime_sources + sorted(s for g in tree.kernel_groups.values() for s in g)
    sources = [s for v in model_code.values() for s in v] + shared
    with compiled(tree, sources) as (root, objects):
        def total(srcs: list[str]) -> int:
            out = tool([size, *(objects[s] for s in srcs)], root, "measuring the code").stdout.decode()
            return sum(int(line.split()[0]) + int(line.split()[1]) for line in out.splitlines()[1:] if line.strip())
        return {"models": {name: total(srcs) for name, srcs in model_code.items()}, "shared": total(shared)}
