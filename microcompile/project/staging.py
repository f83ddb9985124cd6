"""Create a directory all at once: write it under a temporary name beside it, then rename.

    with staged(out_dir) as stage:
        ... write the whole tree into `stage` ...

When the block succeeds, `stage` is renamed to `out_dir` (one rename in one directory:
atomic); when it fails, by an exception or a signal, `stage` is removed. So a new
`out_dir` is complete or absent. Only a SIGKILL can leave the hidden sibling
`.<name>.microcompile-new-*` behind; it is never mistaken for a project.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from microcompile.errors import UserError

STAGE_INFIX = ".microcompile-new-"


@contextlib.contextmanager
def staged(out_dir: Path) -> Iterator[Path]:
    """A fresh directory beside `out_dir` (which must not exist), renamed to it on success."""
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{out_dir.name[:64]}{STAGE_INFIX}", dir=out_dir.parent))
    try:
        yield stage
        try:
            os.rename(stage, out_dir)
        except OSError as e:   # created meanwhile by someone else
            raise UserError(f"cannot create project directory {out_dir}: {e.strerror or e}") from None
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)
