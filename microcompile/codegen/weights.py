"""Constants in flash, as one binary file that the assembler includes.

The bytes of every constant go, in order and each aligned to ALIGN, into model_weights.bin
(little-endian, as every supported core and host is). model_weights.c gives each one a
named, sized symbol in a section of its own (so the map file says which layer owns which
bytes, and --gc-sections drops an unused one) with the assembler's `.incbin`:

    MC_CONST(mc_k0_conv2d_weights, 0, 5120);   /* conv_2d_0 filter [64,10,4,1] int8 (as int16) */

and model_weights.h declares it (`extern const int16_t mc_k0_conv2d_weights[2560];`). Writing
bytes instead of C text keeps compile time and host memory linear in the weights; the C file
carries the .bin's SHA-256, so it changes (and make rebuilds it) whenever the weights do.
The assembler finds model_weights.bin on its include path (`-Wa,-I<dir>`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

from ..tir.nodes import Buffer
from ..escape import c_comment
from .c_emitter import C_TYPES

ALIGN = 4                       # LDM and word loads of int16/int32 constants need 4
BIN_NAME = "model_weights.bin"
_LE = {"int8": "<i1", "int16": "<i2", "int32": "<i4", "int64": "<i8", "float32": "<f4", "float64": "<f8"}


@dataclass(frozen=True)
class WeightArray:
    symbol: str          # mc_k<i>_<op>_<role>
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
        return f"extern {self.declaration};  /* {c_comment(self.buffer.comment)} */"

    def data(self) -> bytes:
        b = self.buffer
        return np.ascontiguousarray(np.asarray(b.data).reshape(-1), dtype=_LE[b.dtype]).tobytes()


@dataclass(frozen=True)
class WeightBlob:
    """What model_weights.c needs of model_weights.bin: its rows, size and SHA-256."""

    rows: list[dict]            # {"symbol", "offset", "bytes", "comment"}
    size: int
    sha256: str


def write_weights(weights: list[WeightArray], path) -> WeightBlob:
    """Write every constant's bytes to `path`, each ALIGN-aligned, one constant at a time (so
    the host holds at most one extra copy of one constant)."""
    rows, offset, digest = [], 0, hashlib.sha256()
    with open(path, "wb") as f:
        for w in weights:
            pad = bytes(-offset % ALIGN)
            data = w.data()
            for chunk in (pad, data):
                f.write(chunk)
                digest.update(chunk)
            offset += len(pad)
            rows.append({"symbol": w.symbol, "offset": offset, "bytes": len(data), "comment": w.buffer.comment,
                         "align8": w.buffer.dtype in ("int64", "float64")})   # int64_t / double (16x8): 8-aligned
            offset += len(data)
    return WeightBlob(rows, offset, digest.hexdigest())
