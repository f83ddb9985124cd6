"""What a generated project is built for, besides its model."""

from __future__ import annotations

from dataclasses import dataclass


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
