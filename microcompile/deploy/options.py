"""How a compiled model becomes a running firmware: frozen records built once at the edge (the
CLI, the Python API) and handed down unchanged."""

from __future__ import annotations

from dataclasses import dataclass

from ..quantization.options import QuantizeOptions  # noqa: F401  (deploy's options, in one place)


@dataclass(frozen=True)
class BuildOptions:
    """What goes into the project besides the model.

    emulate: the Makefile's default PLATFORM is the QEMU twin (the linker script always uses the
        real board's memory).
    agent: the agent firmware (serves the model over the serial protocol) instead of the
        self-test (the input compiled in, one run, MC-OUTPUT lines).
    trace: the self-test also prints every kernel's outputs (`verify` on the host board).
    arena_region / weights_region: the arena / the weights in another memory bank.
    arena_budget: bytes the planned arena may take (the tuner's bound); None: any.
    """

    emulate: bool = False
    agent: bool = False
    trace: bool = False
    arena_region: str | None = None
    weights_region: str | None = None
    arena_budget: int | None = None


@dataclass(frozen=True)
class Link:
    """How to reach the device: its QEMU twin (`emulate`), or the real board on a serial `port`
    (found by its USB id when None) flashed with `probe`; `timeout` bounds each command (s)."""

    emulate: bool = False
    port: str | None = None
    probe: str | None = None
    timeout: float = 10.0
