"""Which kernels get int16 ("wide") weights: a per-kernel choice against the board's flash.

On a DSP core a convolution, depthwise convolution or fully connected layer runs faster on
weights widened to int16 at compile time (SMLAD takes int16 pairs with no extraction), at
the price of twice their flash. By default every kernel keeps the model's int8 weights;
then, fastest first, kernels are widened while the weights still fit the budget: the board's
flash less an estimate of the code, or --flash-budget.

The same holds for the rescale tables of an int8 ADD (schedule/tabulate.py): flash that
buys speed, so they take part in the same choice.

"Fastest first" is the estimated instructions saved per extra byte of flash: about
GAIN_PER_MAC instructions per multiply-accumulate (measured on mps2-an386: the GEMM panel
kernel takes 26 instructions per 32 MACs on int16 against 21 per 16 on int8, and a fully
connected layer's mixed kernel, int16 weights on its int8 input, 53 per 64; the depthwise
kernel 4.7 instructions per MAC against 5.3 for its int8 loops), so a layer whose weights
are reused over many pixels goes first. Ties go to the larger layer, then to graph order.
"""

from __future__ import annotations

from dataclasses import dataclass

GAIN_PER_MAC = 0.5
# An int8 ADD's two rescale tables save two multiplies and roundings per element (about 20
# instructions), at 2 KiB of flash (schedule/tabulate.py).
GAIN_PER_TABLE_ELEMENT = 20
# Flash the firmware needs besides the weights, estimated before it is built: the runtime,
# startup and platform code, plus per kernel its code and parameter structs (our models:
# 6-14 KiB of code for 10-16 kernels), plus the embedded test input.
CODE_BASE_BYTES = 8192
CODE_PER_KERNEL_BYTES = 1024


@dataclass(frozen=True)
class Candidate:
    """A kernel that can have int8 or int16 weights."""

    name: str            # the node's name
    gain: float          # estimated instructions saved by the wide variant (estimate_gain)
    narrow_bytes: int    # its constants with int8 weights (no tables)
    wide_bytes: int      # with int16 weights (tables)

    @property
    def extra(self) -> int:
        return self.wide_bytes - self.narrow_bytes


def estimate_gain(op: str, macs: int, out_elements: int) -> float:
    return GAIN_PER_TABLE_ELEMENT * out_elements if op == "add" else GAIN_PER_MAC * macs


def code_estimate(kernels: int, input_bytes: int = 0) -> int:
    return CODE_BASE_BYTES + CODE_PER_KERNEL_BYTES * kernels + input_bytes


def choose_wide(candidates: list[Candidate], fixed_bytes: int, budget: int | None) -> set[str]:
    """The kernels to widen: fastest first while every constant still fits `budget` bytes
    (None: no limit, widen all). `fixed_bytes` are the constants of the other kernels."""
    useful = [c for c in candidates if c.extra > 0]
    if budget is None:
        return {c.name for c in useful}
    total = fixed_bytes + sum(c.narrow_bytes for c in candidates)
    order = sorted(enumerate(useful), key=lambda ic: (-ic[1].gain / ic[1].extra, -ic[1].gain, ic[0]))
    chosen = set()
    for _, c in order:
        if total + c.extra <= budget:
            chosen.add(c.name)
            total += c.extra
    return chosen
