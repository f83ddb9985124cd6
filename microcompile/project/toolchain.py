"""The C compiler a project is built with and its version: tuning records name it, since
a schedule's measured speed holds for one compiler version only."""

from __future__ import annotations

import functools
import shutil
import subprocess

from microcompile.errors import ToolchainError


def compiler(board) -> str:
    """The gcc that builds `board`'s projects: the host's cc or arm-none-eabi-gcc."""
    return "cc" if board.is_host else "arm-none-eabi-gcc"


@functools.lru_cache(maxsize=None)
def _version(cc: str) -> str:
    exe = shutil.which(cc)
    if exe is None:
        raise ToolchainError(f"{cc} is not installed", hint="run scripts/setup (or apt-get install gcc-arm-none-eabi)")
    out = subprocess.run([exe, "-dumpfullversion", "-dumpversion"], capture_output=True, text=True, timeout=60)
    return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else "unknown"


def toolchain_version(board) -> str:
    """e.g. "arm-none-eabi-gcc 12.2.1"."""
    cc = compiler(board)
    return f"{'gcc' if cc == 'cc' else cc} {_version(cc)}"
