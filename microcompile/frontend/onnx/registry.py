"""The ONNX converter table: `@converter(op_type, opsets, domain)` fills it from the
op-family modules (convert_*.py, qdq.py); `find_converter` picks the entry for a model's
opset. See the package docstring for the converter API."""

from __future__ import annotations

from typing import Callable

OPSET_MIN, OPSET_MAX = 11, 21

Converter = Callable[..., None]
CONVERTERS: dict[tuple[str, str], list[tuple[int, int, Converter]]] = {}


def converter(op_type: str, opsets: tuple[int, int] = (OPSET_MIN, OPSET_MAX), domain: str = ""):
    """Register the decorated function as the converter of `op_type` for opsets in range."""
    def register(fn: Converter) -> Converter:
        entries = CONVERTERS.setdefault((domain, op_type), [])
        for lo, hi, other in entries:
            assert opsets[1] < lo or opsets[0] > hi, f"{op_type}: opsets {opsets} overlap {other.__name__}"
        entries.append((opsets[0], opsets[1], fn))
        return fn
    return register


def find_converter(op_type: str, opset: int, domain: str = "") -> Converter | None:
    for lo, hi, fn in CONVERTERS.get((domain, op_type), ()):
        if lo <= opset <= hi:
            return fn
    return None
