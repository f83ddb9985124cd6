"""How a compiled model becomes a running firmware: frozen records built once at the edge (the
CLI, the Python API) and handed down unchanged."""

from __future__ import annotations

from dataclasses import dataclass

# Options of the stages below, re-exported: deploy's options in one place.
from ..project.options import BuildOptions  # noqa: F401
from ..quantization.options import QuantizeOptions  # noqa: F401


@dataclass(frozen=True)
class Link:
    """How to reach the device: its QEMU twin (`emulate`), or the real board on a serial `port`
    (found by its USB id when None) flashed with `probe`; `timeout` bounds each command (s)."""

    emulate: bool = False
    port: str | None = None
    probe: str | None = None
    timeout: float = 10.0
