"""A model's inputs from what a user has: nothing (a deterministic pattern), a .npy/.npz file,
or numpy arrays (one, a list in input order, or a dict by input name).

A float array for an int8 or int16 input is quantized with that input's scale and zero point,
as TFLite's QUANTIZE does (round half away from zero, then clamp); `note` is told once.
Shapes must match; NaN and infinity are refused (see check_finite_inputs)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import UserError, shown
from ..files import load_arrays
from ..ir import NP_DTYPES, Graph, Tensor
from ..ir.budget import elements
from ..quantization.ptq import quantize_array

Note = Callable[[str], None]


@dataclass(frozen=True)
class InputFile:
    """A .npy/.npz file's arrays, read once (`read`), so that a bad file is found before any
    work and messages still name the file."""

    path: Path
    arrays: object          # one ndarray, or {name: ndarray}

    @classmethod
    def read(cls, path) -> InputFile:
        return cls(Path(path), load_arrays(path, "input file"))


def deterministic_input(shape, dtype: str) -> np.ndarray:
    """The benchmark input: int8 x[i] = (i*7 + 3) % 256 - 128; float models use the same / 128."""
    i = np.arange(elements(shape), dtype=np.int64)
    x = ((i * 7 + 3) % 256 - 128).astype(np.int8)
    return (x.astype(np.float32) / 128 if dtype == "float32" else x.astype(NP_DTYPES[dtype])).reshape(shape)


def model_inputs(graph: Graph, given=None, note: Note | None = None) -> dict[str, np.ndarray]:
    """One input dict for `graph`: `given` is None (the deterministic pattern), a path of a
    .npy/.npz file, an array (a model with one input), a list of arrays in input order, or a
    {name: array} dict. UserError for a wrong name, count, shape, dtype or a non-finite value."""
    specs = [graph.tensors[name] for name in graph.inputs]
    if given is None:
        return {t.name: deterministic_input(t.shape, t.dtype) for t in specs}
    arrays, where = _arrays(graph, given)
    out = {t.name: _conform(t, arrays[t.name], where, note) for t in specs}
    check_finite_inputs(out, where)
    return out


def model_samples(graph: Graph, given, count: int | None = None,
                  note: Note | None = None) -> tuple[list[dict[str, np.ndarray]], bool]:
    """The samples in `given` (as for model_inputs, or a batch as for model_batch, told apart by
    the first input's shape; `count` asks for a batch) and whether it was a batch."""
    if isinstance(given, (str, os.PathLike)):
        given = InputFile.read(given)
    if given is not None and (count is not None or _is_batch(graph, given)):
        return model_batch(graph, given, count, note=note), True
    return [model_inputs(graph, given, note=note)], False


def _is_batch(graph: Graph, given) -> bool:
    first = graph.tensors[graph.inputs[0]]
    if isinstance(given, InputFile):
        given = given.arrays
    if isinstance(given, dict):
        a = given.get(first.name)
    elif isinstance(given, np.ndarray):
        a = given
    else:
        a = list(given)[0] if len(given) else None
    return a is not None and tuple(np.shape(a)) != tuple(first.shape)


def model_batch(graph: Graph, given, count: int | None = None, note: Note | None = None) -> list[dict[str, np.ndarray]]:
    """Samples of a batch: each input's array is [N, ...] with the model's shape (or with its
    leading 1 replaced by N); the first `count` samples (all when None)."""
    arrays, where = _arrays(graph, given)
    n = None
    batches = {}
    for name in graph.inputs:
        t = graph.tensors[name]
        a = np.asarray(arrays[name])
        shape = tuple(t.shape)
        if a.ndim == len(shape) + 1 and tuple(a.shape[1:]) == shape:
            batch = a
        elif shape and shape[0] == 1 and a.ndim == len(shape) and tuple(a.shape[1:]) == shape[1:]:
            batch = a.reshape((a.shape[0],) + shape)
        else:
            raise UserError(f"input {shown(name)!r} in {where} is {list(a.shape)}; a batch is "
                            f"[N, {', '.join(map(str, shape[1:] if shape and shape[0] == 1 else shape))}]",
                            hint="stack the samples along a new first axis (np.stack)")
        batches[name] = batch
        n = batch.shape[0] if n is None else min(n, batch.shape[0])
    if count is not None:
        if n < count:
            name = min(batches, key=lambda k: batches[k].shape[0])
            raise UserError(f"{count} samples asked for but {where} holds {n} samples of {shown(name)!r}",
                            hint=f"ask for {n} or fewer")
        n = count
    samples = [{name: _conform(graph.tensors[name], b[k], where, note if k == 0 else None)
                for name, b in batches.items()} for k in range(n)]
    for s in samples:
        check_finite_inputs(s, where)
    return samples


def _arrays(graph: Graph, given) -> tuple[dict[str, np.ndarray], str]:
    """{input name: array} from what the user gave, and how messages name it."""
    names = list(graph.inputs)
    if isinstance(given, (str, os.PathLike)):
        given = InputFile.read(given)
    if isinstance(given, InputFile):
        where, loaded = str(given.path), given.arrays
    else:
        where, loaded = "the inputs given", given
    if isinstance(loaded, (np.ndarray, list, tuple)):
        arrays = [loaded] if isinstance(loaded, np.ndarray) else list(loaded)
        if len(arrays) != len(names):
            raise UserError(f"{where}: {len(arrays)} array(s) for a model with {len(names)} inputs",
                            hint="give one array per input, in order, or a dict (.npz) by input name: "
                                 + ", ".join(shown(n) for n in names))
        return dict(zip(names, arrays)), where
    if isinstance(loaded, Mapping):
        missing = [n for n in names if n not in loaded]
        if missing:
            raise UserError(f"{where} has no array named {shown(missing[0])!r}",
                            hint=f"arrays found: {', '.join(shown(str(k)) for k in loaded) or 'none'}; the model's "
                                 f"inputs are {', '.join(shown(n) for n in names)}")
        return {n: loaded[n] for n in names}, where
    raise UserError(f"cannot take model inputs from a {type(given).__name__}",
                    hint="give a numpy array, a list of arrays, a dict by input name, or a .npy/.npz path")


def _conform(t: Tensor, a, where: str, note: Note | None) -> np.ndarray:
    """`a` as input `t` takes it: its shape, and its dtype (a float array for an integer input
    is quantized)."""
    a = np.asarray(a)
    want = np.dtype(NP_DTYPES[t.dtype])
    if tuple(a.shape) != tuple(t.shape):
        if a.size == t.size:
            hint = f"reshape it: x.reshape({tuple(t.shape)})"
        else:
            hint = f"the model takes {list(t.shape)} ({t.size:,} values); this holds {a.size:,}"
        raise UserError(f"input {shown(t.name)!r} in {where} is {a.dtype}{list(a.shape)}, but the model expects "
                        f"{want}{list(t.shape)}", hint=hint)
    if a.dtype == want:
        return a
    if t.dtype in ("int8", "int16") and a.dtype.kind == "f" and t.quant is not None:
        if note is not None:
            note(f"[input] {shown(t.name)}: float values quantized to {t.dtype} with the input's scale "
                 f"{t.quant.scale[0]:.6g} and zero point {t.quant.zero_point[0]}")
        check_finite_inputs({t.name: a}, where)
        return quantize_array(a, t.quant, t.dtype)
    if t.dtype == "float32" and a.dtype.kind == "f":   # numpy's default float64 included
        return a.astype(np.float32)
    if want.kind == "i" and a.dtype.kind in "iu":
        info = np.iinfo(want)
        if a.size and (a.min() < info.min or a.max() > info.max):
            raise UserError(f"input {shown(t.name)!r} in {where} holds values outside {t.dtype}'s range "
                            f"[{info.min}, {info.max}]", hint=f"give {t.dtype} values, or float values, which are "
                                                             "quantized with the input's scale and zero point")
        return a.astype(want)
    raise UserError(f"input {shown(t.name)!r} in {where} is {a.dtype}{list(a.shape)}, but the model expects "
                    f"{want}{list(t.shape)}",
                    hint="give float values (quantized with the input's scale and zero point for an integer input) "
                         f"or {want} values")


def check_finite_inputs(inputs: Mapping[str, np.ndarray], where) -> None:
    """Refuse NaN and infinity in float inputs: nothing could be verified with them. numpy
    propagates NaN through every op, while the compiled kernels, like TFLite's, clamp with
    fminf/fmaxf and take maxima by comparison, which drop a NaN or turn it into a finite
    value; infinity gives inf - inf = NaN inside softmax and normalizations."""
    for name, a in inputs.items():
        bad = ~np.isfinite(a) if np.issubdtype(np.asarray(a).dtype, np.floating) else None
        if bad is not None and bad.any():
            at = ", ".join(str(list(map(int, i))) for i in np.argwhere(bad)[:3]) + (" ..." if bad.sum() > 3 else "")
            raise UserError(f"input {shown(name)!r} in {where} has {int(bad.sum())} non-finite value(s) (NaN or "
                            f"infinity) at {at}: the compiled float kernels do not propagate them as the reference "
                            "does (their clamps and maxima drop a NaN or make it finite), so the outputs could not "
                            "be compared", hint="give finite input values")
