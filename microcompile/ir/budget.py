"""The compiler's own memory budget: what compiling one model may allocate.

A model file is untrusted, and its sizes are numbers it chose: 181 bytes of ONNX can ask for
an 8 GiB constant (an Expand of a scalar to [65536, 32768]). So every tensor made at compile
time from sizes read from a file (constants folded by the readers and the passes, repacked and
widened weights) is checked here BEFORE it is allocated, against two bounds:

- one tensor: TENSOR_BYTES, far above any tensor a microcontroller holds (a few MiB of RAM);
- all tensors one stage makes (`Tally`): TOTAL_BYTES, so that a thousand tensors each just
  under the first bound do not add up to gigabytes (it bounds the time spent making them too).

Sizes are Python integers: a product of dimensions never wraps around 64 bits (numpy's
int64 product of [65536] * 4 is 0).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import ModelFormatError

MIB = 1 << 20
TENSOR_BYTES = 256 * MIB
TOTAL_BYTES = 1024 * MIB

HINT = ("a model for a microcontroller needs far less; the file is corrupted or was made to exhaust "
        "the compiler's memory")


def elements(shape) -> int:
    """The number of elements of `shape`, exact (a Python integer, never wrapped)."""
    return math.prod(int(d) for d in shape)


def nbytes(shape, itemsize: int) -> int:
    return elements(shape) * int(itemsize)


def shown_bytes(n: int) -> str:
    """8589934592 -> '8,589,934,592 bytes (8 GiB)'."""
    for unit, scale in (("GiB", 1 << 30), ("MiB", MIB), ("KiB", 1 << 10)):
        if n >= scale:
            value = n / scale
            return f"{n:,} bytes ({value:.3g} {unit})" if value < 1000 else f"{n:,} bytes ({value:,.0f} {unit})"
    return f"{n:,} bytes"


def _limit(n: int) -> str:
    return f"{n // MIB} MiB" if n % MIB == 0 else f"{n:,} bytes"


def _shape_text(shape) -> str:
    dims = [str(int(d)) for d in shape]
    return "[" + ", ".join(dims if len(dims) <= 8 else dims[:8] + [f"... ({len(dims)} dims)"]) + "]"


def check_tensor(what: str, shape, itemsize: int) -> int:
    """The bytes of a tensor of `shape` (`itemsize` bytes each) that `what` is about to make;
    ModelFormatError (exit 2) naming `what` and the size when it is over TENSOR_BYTES.
    `what` names the maker in the model's terms, e.g. "ONNX node 'big' (Expand), folded at import"."""
    n = nbytes(shape, itemsize)
    if n > TENSOR_BYTES:
        raise ModelFormatError(f"{what}: a tensor of shape {_shape_text(shape)} needs {shown_bytes(n)}, more than "
                               f"the {_limit(TENSOR_BYTES)} microcompile allows one tensor", hint=HINT)
    return n


@dataclass
class Tally:
    """The bytes one stage (a reader, a pass) has made so far, against TOTAL_BYTES.

    A stage makes one Tally per run and calls `take` before each allocation: the stage's
    own counter, not shared state. It counts what was made, freed or not, so that it bounds
    the stage's time as well as its memory."""

    stage: str        # what makes the tensors, e.g. "constant folding at import"
    made: int = 0

    def take(self, what: str, shape, itemsize: int) -> None:
        """Account for a tensor `what` is about to make; ModelFormatError when it alone is over
        TENSOR_BYTES, or when with the tensors made before it it is over TOTAL_BYTES."""
        self.add(what, check_tensor(what, shape, itemsize))

    def add(self, what: str, n: int) -> None:
        """Account for `n` bytes `what` makes (tensors each checked already); ModelFormatError
        when with the bytes made before they are over TOTAL_BYTES."""
        if self.made + n > TOTAL_BYTES:
            raise ModelFormatError(f"{what}: {shown_bytes(n)} after {shown_bytes(self.made)} made by {self.stage}: "
                                   f"more than the {_limit(TOTAL_BYTES)} microcompile allows one stage to make",
                                   hint=HINT)
        self.made += n
