"""How a long step (compile, build, flash, calibrate, run, tune) reports: lines and bars.

A `Progress` is called with a line (`[build] ...`), printed through escape.terminal; its
`bar(total, desc, unit)` is a tqdm bar on stderr. The CLI shows lines, and bars when stderr is a
terminal. The Python API is quiet unless asked (`progress=True`), and then uses tqdm's notebook
bars in Jupyter (tqdm.auto).
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from .escape import say


class Progress:
    """`lines`: print step lines; `bars`: True/False, or None for "when stderr is a terminal";
    `auto`: tqdm.auto's bars (a notebook widget in Jupyter) instead of plain text bars."""

    def __init__(self, lines: bool = True, bars: bool | None = None, auto: bool = False):
        self.lines, self.bars, self.auto = lines, bars, auto

    def __call__(self, text: str) -> None:
        if self.lines:
            say(text)

    def bar(self, total, desc: str, unit: str = "it", **kw):
        if self.auto:
            from tqdm.auto import tqdm
        else:
            from tqdm import tqdm
        disable = None if self.bars is None else not self.bars
        return tqdm(total=total, desc=desc, unit=unit, disable=disable, leave=False, file=sys.stderr, **kw)


CLI = Progress()
QUIET = Progress(lines=False, bars=False)


def progress_bar(progress: Callable[[str], None], total, desc: str, unit: str = "it", **kw):
    """`progress`'s bar; a plain callable (a test's list.append) gets the CLI's."""
    return (progress if isinstance(progress, Progress) else CLI).bar(total, desc, unit, **kw)

