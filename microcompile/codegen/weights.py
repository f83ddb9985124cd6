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

import contextlib
import hashlib
from dataclasses import dataclass

import numpy as np

from ..ir.int4 import pack_int4
from ..tir.nodes import PACKED_INT4, Buffer
from ..escape import c_comment
from .c_emitter import C_TYPES

ALIGN = 4                       # LDM and word loads of int16/int32 constants need 4
# 8-byte elements (16x8 biases, double scales, the signal ops' uint64): 8-aligned constants.
ALIGN8_DTYPES = ("int64", "float64", "uint64")
BIN_NAME = "model_weights.bin"
_LE = {"int8": "<i1", "int16": "<i2", "int32": "<i4", "int64": "<i8", "float32": "<f4", "float64": "<f8",
       "uint32": "<u4", "uint64": "<u8"}


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
        if b.dtype == PACKED_INT4:     # two values per byte, the first in the low nibble
            return f"const uint8_t {self.symbol}[{b.nbytes}]"
        return f"const {C_TYPES[b.dtype]} {self.symbol}[{b.size}]"

    @property
    def extern(self) -> str:
        return f"extern {self.declaration};  /* {c_comment(self.buffer.comment)} */"

    def data(self) -> bytes:
        b = self.buffer
        if b.dtype == PACKED_INT4:
            return pack_int4(b.data)
        return np.ascontiguousarray(np.asarray(b.data).reshape(-1), dtype=_LE[b.dtype]).tobytes()


@dataclass(frozen=True)
class WeightBlob:
    """What model_weights.c needs of model_weights.bin: its rows, size and SHA-256."""

    rows: list[dict]            # {"symbol", "offset", "bytes", "comment"}
    size: int
    sha256: str


def write_weights(weights: list[WeightArray], path=None) -> WeightBlob:
    """Write every constant's bytes to `path`, each ALIGN-aligned, one constant at a time (so
    the host holds at most one extra copy of one constant). Without a path, only the layout
    (the weights go into C arrays instead: weight_arrays)."""
    rows, offset, digest = [], 0, hashlib.sha256()
    with open(path, "wb") if path is not None else contextlib.nullcontext(None) as f:
        for w in weights:
            pad = bytes(-offset % ALIGN)
            data = w.data()
            for chunk in (pad, data):
                if f is not None:
                    f.write(chunk)
                digest.update(chunk)
            offset += len(pad)
            rows.append({"symbol": w.symbol, "offset": offset, "bytes": len(data), "comment": w.buffer.comment,
                         "align8": w.buffer.dtype in ALIGN8_DTYPES})
            offset += len(data)
    return WeightBlob(rows, offset, digest.hexdigest())


def _c_values(w: WeightArray) -> list[str]:
    """Each element of a constant as a C initializer that reads back to the same bits."""
    values = np.asarray(w.buffer.data).reshape(-1)
    dtype = w.buffer.dtype
    if dtype == PACKED_INT4:
        return [f"0x{v:02x}" for v in w.data()]
    if dtype in ("float32", "float64"):
        suffix = "f" if dtype == "float32" else ""
        cast = np.float32 if dtype == "float32" else np.float64
        out = []
        for v in values.astype(cast):
            if not np.isfinite(v):
                out.append(("__builtin_nanf(\"\")" if np.isnan(v) else ("-" if v < 0 else "") + "__builtin_inff()")
                           if dtype == "float32" else
                           ("__builtin_nan(\"\")" if np.isnan(v) else ("-" if v < 0 else "") + "__builtin_inf()"))
            else:
                out.append(float(v).hex() + suffix)       # hexadecimal floats are exact
        return out
    if dtype in ("uint32", "uint64"):
        suffix = "u" if dtype == "uint32" else "ull"
        return [f"{int(v)}{suffix}" for v in values.astype(np.uint64)]
    lo = {"int8": -2**7, "int16": -2**15, "int32": -2**31, "int64": -2**63}[dtype]
    # The most negative value is not a C literal (its magnitude does not fit): an expression.
    most_negative = {"int32": "(-2147483647 - 1)", "int64": "(-9223372036854775807LL - 1)"}
    suffix = "LL" if dtype == "int64" else ""
    return [most_negative[dtype] if v == lo and dtype in most_negative else f"{int(v)}{suffix}"
            for v in values.astype(np.int64)]


def weight_arrays(weights: list[WeightArray], per_line: int = 16) -> list[str]:
    """Each constant as a C definition with its initializer, aligned as in the .bin:
    model_weights.c without .incbin (-fdata-sections gives each its own section)."""
    out = []
    for w in weights:
        align = 8 if w.buffer.dtype in ALIGN8_DTYPES else ALIGN
        values = _c_values(w)
        rows = [", ".join(values[i:i + per_line]) for i in range(0, len(values), per_line)]
        body = ",\n    ".join(rows)
        out.append(f"/* {c_comment(w.buffer.comment)} */\n"
                   f"__attribute__((aligned({align})))\n"
                   f"{w.declaration} = {{\n    {body}\n}};")
    return out
