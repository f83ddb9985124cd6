"""Where the data directories (runtime_c/, boards/, templates/) live.

In a source checkout they sit at the repository top level, next to the package.
In an installed wheel they are packaged as `microcompile/_data/<name>`.
"""

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent
RESOURCE_NAMES = ("runtime_c", "boards", "templates")


def resource_dir(name: str) -> Path:
    """The directory of resource `name` (one of RESOURCE_NAMES); wheel layout first."""
    if name not in RESOURCE_NAMES:
        raise ValueError(f"unknown resource {name!r}; expected one of {RESOURCE_NAMES}")
    for candidate in (_PACKAGE_DIR / "_data" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"microcompile resource directory {name!r} not found in {_PACKAGE_DIR / '_data'} "
        f"nor {_PACKAGE_DIR.parent}; the installation is broken"
    )
