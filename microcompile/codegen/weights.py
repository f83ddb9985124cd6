"""Constants as C arrays in flash (.rodata), deterministically formatted.

    const int8_t mc_w0[96] __attribute__((aligned(4))) = {
        12, -7, ...      (16 per line)
    };

float32 values are printed with 9 significant digits, which reads back to the identical float.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..tir.nodes import Buffer
from .c_emitter import C_TYPES, comment, float_literal, int_literal

PER_LINE = 16


@dataclass(frozen=True)
class WeightArray:
    symbol: str          # mc_w<i>
    buffer: Buffer

    @property
    def nbytes(self) -> int:
        return self.buffer.nbytes

    @property
    def declaration(self) -> str:
        b = self.buffer
        return f"const {C_TYPES[b.dtype]} {self.symbol}[{b.size}]"

    @property
    def extern(self) -> str:
        return f"extern {self.declaration};  /* {comment(self.buffer.comment)} */"

    def definition(self) -> str:
        b = self.buffer
        flat = np.asarray(b.data).reshape(-1)
        fmt = float_literal if b.dtype == "float32" else int_literal
        values = [fmt(v) for v in flat.tolist()]
        rows = [", ".join(values[i:i + PER_LINE]) for i in range(0, len(values), PER_LINE)]
        body = ",\n".join(f"    {r}" for r in rows)
        return (f"/* {comment(b.comment)} */\n"
                f"{self.declaration} __attribute__((aligned(4))) = {{\n{body}\n}};\n")
