"""The skip budget: a skipped test is a test that stopped testing, so every skip must say
why, and only a few reasons are acceptable.

At the end of a run the suite prints every skip reason with its count (`tests/conftest.py`
calls `summary`) and fails the run when a skip's reason matches none of the allowed
entries below. `MC_SKIPS_ALLOWED` (comma-separated keys of ALLOWED) narrows the list:
CI runs with `MC_SKIPS_ALLOWED=hardware`, so there the only acceptable skip is a test that
needs a real board. Add an entry here only for a reason no change to the code can remove.
"""

from __future__ import annotations

import os
import re
from collections import Counter

# The skip reasons the suite itself uses (tests call pytest.skip / importorskip with these).
NO_HARDWARE = "no real board attached"
NO_LITERT = "ai_edge_litert (the TFLite reference kernels) is not available on this platform"
NO_MODELS = "not found: the MLPerf Tiny models live in ../shared/models next to the repository"
OFFLINE = "offline: pip cannot fetch the build backend"
NOT_INSTALLED = "microcompile is not pip-installed (non-editable) in this interpreter"
NO_RAY = "ray (the optional extra microcompile[ray]) is not installed"
NO_XGBOOST = "xgboost (the optional extra microcompile[xgboost]; the test extra installs it) is not installed"

# key -> pattern of the reasons it allows (searched in the skip message).
ALLOWED = {
    "hardware": re.escape(NO_HARDWARE),
    "litert": re.escape(NO_LITERT),
    "models": re.escape(NO_MODELS),
    "offline": re.escape(OFFLINE),
    "not-installed": re.escape(NOT_INSTALLED),
    "ray": re.escape(NO_RAY),   # an optional extra; only the slow Ray executor test needs it
    "xgboost": re.escape(NO_XGBOOST),   # an optional extra; .[test] pulls it (CI), an older venv may lack it
}


def allowed_keys() -> list[str]:
    """The keys in force: MC_SKIPS_ALLOWED, or all of ALLOWED."""
    chosen = os.environ.get("MC_SKIPS_ALLOWED")
    if chosen is None:
        return list(ALLOWED)
    keys = [k.strip() for k in chosen.split(",") if k.strip()]
    unknown = [k for k in keys if k not in ALLOWED]
    if unknown:
        raise ValueError(f"MC_SKIPS_ALLOWED names unknown keys {unknown}; known: {', '.join(ALLOWED)}")
    return keys


def reason_of(report) -> str:
    """The message of a skipped test report (setup- or call-time skip, marker or importorskip)."""
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        text = str(longrepr[2])
    else:
        text = str(longrepr)
    return text.removeprefix("Skipped: ")


def classify(reason: str, keys: list[str]) -> str | None:
    """The allowed key whose pattern matches `reason`, or None when the skip is not allowed."""
    for key in keys:
        if re.search(ALLOWED[key], reason):
            return key
    return None


def summary(reasons: list[str], keys: list[str]) -> tuple[list[str], int]:
    """The lines to print (count, key or NOT ALLOWED, reason) and the number of skips not allowed."""
    counts = Counter(reasons)
    lines, bad = [], 0
    for reason, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        key = classify(reason, keys)
        if key is None:
            bad += n
        lines.append(f"{n:5d}  {key or 'NOT ALLOWED':<13} {reason}")
    return lines, bad
