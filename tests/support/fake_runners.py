"""Fake flash tools for the flash tests: scripts put on PATH that record their arguments and answer
as the test tells them.

    bin_dir = install(tmp, ["st-flash", "st-info"])
    behave(bin_dir, "st-info", [("--probe", OUTPUT, 0)])   # (substring of the arguments, output, exit status)
    calls(bin_dir)  ->  [["st-info", "--probe"], ["st-flash", "--reset", ...], ...]

A tool with no matching rule prints nothing and exits 0. A rule's output may be `sleep:<seconds>`.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

ORIGINAL_PATH = os.environ.get("PATH", os.defpath)   # before any test replaces PATH
SCRIPT = """#!{python}
import json, os, sys, time
name = os.path.basename(sys.argv[0])
here = os.path.dirname(os.path.abspath(sys.argv[0]))
with open(os.path.join(here, "calls.jsonl"), "a") as f:
    f.write(json.dumps([name] + sys.argv[1:]) + "\\n")
rules = os.path.join(here, name + ".rules.json")
args = " ".join(sys.argv[1:])
if os.path.exists(rules):
    for match, out, rc in json.load(open(rules)):
        if match in args:
            if out.startswith("sleep:"):
                time.sleep(float(out[6:]))
            else:
                sys.stdout.write(out)
            sys.exit(rc)
sys.exit(0)
"""


def install(root: Path, tools: list[str]) -> Path:
    """A directory holding a fake of each tool; returns it (put it on PATH)."""
    bin_dir = Path(root) / "fakebin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for tool in tools:
        path = bin_dir / tool
        path.write_text(SCRIPT.format(python=sys.executable))
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return bin_dir


def behave(bin_dir: Path, tool: str, rules: list[tuple[str, str, int]]) -> None:
    (Path(bin_dir) / f"{tool}.rules.json").write_text(json.dumps(rules))


def calls(bin_dir: Path) -> list[list[str]]:
    path = Path(bin_dir) / "calls.jsonl"
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def link(bin_dir: Path, real: str) -> None:
    """Make a real tool (found on the current PATH) available in bin_dir too."""
    import shutil

    target = shutil.which(real, path=ORIGINAL_PATH)
    if target is not None and not (Path(bin_dir) / real).exists():
        os.symlink(target, Path(bin_dir) / real)


ST_INFO_ONE = """Found 1 stlink programmers
  version:    V2J37S26
  serial:     0671FF495457725187074012
  flash:      524288 (pagesize: 131072)
  sram:       131072
  chipid:     0x0421
  descr:      F446
"""

ST_INFO_TWO = ST_INFO_ONE.replace("Found 1", "Found 2") + """  version:    V2J37S26
  serial:     066DFF555054877567014727
  flash:      524288 (pagesize: 131072)
  sram:       131072
  chipid:     0x0421
  descr:      F446
"""

ST_INFO_F746 = ST_INFO_ONE.replace("0x0421", "0x0449").replace("F446", "F7")
