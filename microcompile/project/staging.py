"""Create a directory all at once: write it under a temporary name beside it, then rename.

    with staged(out_dir) as stage:
        ... write the whole tree into `stage` ...

When the block succeeds, `stage` is renamed to `out_dir` (one rename in one directory:
atomic); when it fails, by an exception or a signal, `stage` is removed. So a new
`out_dir` is complete or absent. Only a SIGKILL can leave the hidden sibling
`.<name>.microcompile-new-*` behind; it is never mistaken for a project.

The stage is made with the user's umask, as `mkdir` would make `out_dir`
(tempfile.mkdtemp makes 0700 directories: a project nobody else in the group could read).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from collections.abc import Iterator
from pathlib import Path

from microcompile.errors import UserError

STAGE_INFIX = ".microcompile-new-"


@contextlib.contextmanager
def staged(out_dir: Path) -> Iterator[Path]:
    """A fresh directory beside `out_dir` (which must not exist), renamed to it on success."""
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
        stage = _new_dir(out_dir.parent, f".{out_dir.name[:64]}{STAGE_INFIX}")
    except OSError as e:   # checked before any work (check_out_dir), but made read-only meanwhile
        raise UserError(f"cannot create project directory {out_dir}: {e.strerror or e}") from None
    try:
        yield stage
        try:
            os.rename(stage, out_dir)
        except OSError as e:   # created meanwhile by someone else
            raise UserError(f"cannot create project directory {out_dir}: {e.strerror or e}") from None
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)


def _new_dir(parent: Path, prefix: str) -> Path:
    """A directory parent/<prefix><random> that did not exist, made with the user's umask."""
    while True:
        path = parent / f"{prefix}{secrets.token_hex(6)}"
        try:
            os.mkdir(path, 0o777)
        except FileExistsError:
            continue
        return path
