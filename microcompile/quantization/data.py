"""Calibration data: a .npz / .npy of input samples, or a directory of .npy files.

Accepted layouts, for a graph input of shape (1, *dims):
  - a batch (N, *dims), or (N, 1, *dims);
  - one sample (1, *dims) or (*dims);
  - for a 4-D image input, the same in NCHW (ONNX's layout), transposed to our NHWC.
A .npz names its arrays after the graph inputs (any single array is fine for a
one-input model); a directory holds .npy files, each a sample or a batch, read in
sorted order. Values must be floating point (they are cast to float32): integer data is refused
rather than guessed at (is uint8 0..255 or already scaled?).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import UserError, shown
from ..files import load_arrays
from ..ir import Graph


class CalibrationDataError(UserError):
    """Calibration samples of the wrong shape or dtype, or an unreadable file."""


def _read(path: Path) -> dict[str, np.ndarray] | np.ndarray:
    return load_arrays(path, "calibration data", error=CalibrationDataError)


def _as_batch(a: np.ndarray, shape: tuple[int, ...], name: str, where: str) -> np.ndarray:
    if not isinstance(a, np.ndarray):
        raise CalibrationDataError(f"{where} is an .npz archive, not a .npy array",
                                   hint="a calibration directory holds .npy files")
    if not np.issubdtype(a.dtype, np.floating):
        raise CalibrationDataError(f"calibration data for input {name!r} in {where} has dtype {a.dtype}",
                                   hint="calibration samples are real (float) input values, e.g. float32")
    dims = tuple(shape[1:])
    layouts = [dims]
    if len(shape) == 4:   # NCHW from an ONNX model
        layouts.append((dims[2], dims[0], dims[1]))
    for layout in layouts:
        for batch in (a.reshape((1,) + a.shape) if a.shape == layout else None,
                      a if a.shape[1:] == layout else None,
                      a.reshape((a.shape[0],) + a.shape[2:]) if a.ndim >= 2 and a.shape[1:] == (1,) + layout
                      else None):
            if batch is not None:
                if layout != dims:
                    batch = batch.transpose(0, 2, 3, 1)
                return batch.astype(np.float32)
    raise CalibrationDataError(
        f"calibration data for input {name!r} in {where} has shape {list(a.shape)}, "
        f"but the model input is {list(shape)}",
        hint=f"give a batch of samples shaped [N, {', '.join(map(str, dims))}]")


def load_calibration(source, graph: Graph) -> list[dict[str, np.ndarray]]:
    """The samples, one {input name: float32 array of the input's shape} per sample. `source`
    is a path (a .npz / .npy file or a directory of .npy files) or the arrays themselves (one
    array for a one-input model, a list in input order, or a dict by input name)."""
    specs = [graph.tensors[n] for n in graph.inputs]
    if isinstance(source, (np.ndarray, dict, list, tuple)):
        path = "the calibration data given"
        if isinstance(source, (list, tuple)):
            if len(source) != len(specs):
                raise CalibrationDataError(f"{len(source)} calibration arrays for a model with {len(specs)} inputs",
                                           hint="give one batch per input, in order, or a dict by input name")
            source = dict(zip((t.name for t in specs), source))
        return _samples(source, specs, path)
    path = Path(source)
    if path.is_dir():
        files = sorted(path.glob("*.npy"))
        if not files:
            raise CalibrationDataError(f"calibration directory {path} holds no .npy files",
                                       hint="save one sample (or a batch) per .npy file")
        if len(specs) != 1:
            raise CalibrationDataError("a directory of .npy files can only calibrate a one-input model",
                                       hint="use a .npz with one array per input name")
        arrays = {specs[0].name: np.concatenate([_as_batch(_read(f), specs[0].shape, specs[0].name, str(f))
                                                 for f in files])}
    elif not path.exists():
        raise CalibrationDataError(f"calibration data {path} does not exist", hint="check the path")
    else:
        return _samples(_read(path), specs, path)
    return _split(arrays, specs, path)


def _samples(loaded, specs, path) -> list[dict[str, np.ndarray]]:
    """The samples of one array (a one-input model) or of {name: array}."""
    if isinstance(loaded, np.ndarray) or len(loaded) == 1 and len(specs) == 1:
        if len(specs) != 1:
            raise CalibrationDataError(f"{path} holds one array but the model has {len(specs)} inputs",
                                       hint="pass a .npz with one array per input: "
                                            + ", ".join(shown(t.name) for t in specs))
        arrays = {specs[0].name: loaded if isinstance(loaded, np.ndarray) else next(iter(loaded.values()))}
    else:
        missing = [t.name for t in specs if t.name not in loaded]
        if missing:
            raise CalibrationDataError(f"{path} has no array for input(s) {', '.join(map(shown, missing))}",
                                       hint=f"arrays found: {', '.join(shown(str(k)) for k in loaded)}")
        arrays = loaded
    arrays = {t.name: _as_batch(np.asarray(arrays[t.name]), t.shape, t.name, str(path)) for t in specs}
    return _split(arrays, specs, path)


def _split(arrays: dict[str, np.ndarray], specs, path) -> list[dict[str, np.ndarray]]:
    """Per-sample dicts of same-length batches, each value finite."""
    counts = {len(a) for a in arrays.values()}
    if len(counts) != 1 or 0 in counts:
        raise CalibrationDataError(f"calibration inputs in {path} have different or zero sample counts "
                                   f"{sorted(counts)}",
                                   hint="give every input the same number of samples")
    n = counts.pop()
    for t in specs:
        _check_finite(arrays[t.name], t.name, path)
    return [{t.name: arrays[t.name][k].reshape(t.shape) for t in specs} for k in range(n)]


def _check_finite(batch: np.ndarray, name: str, path: Path) -> None:
    """Calibrating on NaN or infinity gives NaN ranges and a model that computes nothing:
    refuse the data, naming the first bad sample (index into the batch, in file order)."""
    bad = ~np.isfinite(batch.reshape(len(batch), -1))
    if bad.any():
        samples = np.flatnonzero(bad.any(axis=1))
        k = int(samples[0])
        value = batch.reshape(len(batch), -1)[k][bad[k]][0]
        raise CalibrationDataError(
            f"calibration data {path}: sample {k} of input {name!r} holds {'NaN' if np.isnan(value) else 'infinite'} "
            f"values ({int(bad.sum())} non-finite values in {len(samples)} of {len(batch)} samples)",
            hint="drop or repair those samples; calibration needs finite real inputs")
