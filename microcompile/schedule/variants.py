"""Which micro-kernel variants a core gets, from its ISA features alone (boards/cores/*.toml).

    "mve"  Helium (Armv8.1-M MVE): runtime_c/kernels/mve/, int8 operands as they are
    "dsp"  the Armv7E-M DSP extension (SMLAD, SXTB16): runtime_c/kernels/dsp/
    "c"    portable C: Cortex-M0/M0+/M3 and the host

The schedules ask `kernel_set(target)` and nothing else about the core; `microcompile boards`
prints the same answer.
"""

from __future__ import annotations

KERNEL_SETS = ("mve", "dsp", "c")


def kernel_set(target) -> str:
    """The kernel set of `target` (a microcompile.target.Target, or None: portable C)."""
    if target is not None and getattr(target, "mve", False):
        return "mve"
    if target is not None and getattr(target, "dsp", False):
        return "dsp"
    return "c"
