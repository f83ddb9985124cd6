"""Compare a device result with a reference: the one definition of "outputs match".

int8/int32: every element equal. float32: |dev - ref| <= 1e-5 * |ref| + 1e-6 * max|ref|,
i.e. 1e-5 relative per element, with a floor at a millionth of the tensor's magnitude so
that values that are ~0 (where any rounding difference is "infinitely" relative) compare
against the scale of the tensor they belong to. A NaN, or an infinity, equals only itself in the
same place (sqrt of a negative is NaN on the device and in the reference alike); the magnitude
is taken over the finite reference values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

RTOL = 1e-5
ATOL_OF_MAX = 1e-6


@dataclass(frozen=True)
class Comparison:
    equal: bool
    max_abs_diff: float
    n_diff: int
    first_mismatch: tuple[int, ...] | None

    def to_json(self) -> dict:
        return {"equal": self.equal, "max_abs_diff": self.max_abs_diff, "n_diff": self.n_diff,
                "first_mismatch": list(self.first_mismatch) if self.first_mismatch is not None else None}


def compare(dev: np.ndarray, ref: np.ndarray, atol_of_max: float = ATOL_OF_MAX) -> Comparison:
    """`atol_of_max` sets the floor (a fraction of max|ref|); only `microcompile verify`
    raises it, for float intermediates (see verify_layers.FLOAT_LAYER_ATOL_OF_MAX)."""
    dev, ref = np.asarray(dev), np.asarray(ref)
    if dev.shape != ref.shape or dev.dtype != ref.dtype:
        return Comparison(False, float("inf"), int(ref.size), ())
    if np.issubdtype(ref.dtype, np.floating):
        d64, r64 = dev.astype(np.float64), ref.astype(np.float64)
        finite = np.abs(r64[np.isfinite(r64)])
        special = ~np.isfinite(d64) | ~np.isfinite(r64)
        same = (np.isnan(d64) & np.isnan(r64)) | (d64 == r64)
        with np.errstate(invalid="ignore"):
            # a NaN or an infinity is 0 away from itself and infinitely far from anything else
            diff = np.where(special, np.where(same, 0.0, np.inf), np.abs(d64 - r64))
            close = diff <= RTOL * np.abs(r64) + atol_of_max * (finite.max() if finite.size else 0.0)
        bad = np.where(special, ~same, ~close)
    else:
        diff = np.abs(dev.astype(np.int64) - ref.astype(np.int64))
        bad = diff != 0
    idx = np.argwhere(bad)
    return Comparison(equal=not idx.size, max_abs_diff=float(diff.max()) if diff.size else 0.0,
                      n_diff=int(bad.sum()), first_mismatch=tuple(int(i) for i in idx[0]) if idx.size else None)
