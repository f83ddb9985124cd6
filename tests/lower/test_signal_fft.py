"""TFLite Micro's SignalFftAutoScale, SignalRfft (int16) and SignalEnergy: ir/signal_fft.py
against TFLM's host interpreter (one-op models), then runtime_c/kernels/mc_signal_fft.c on the
host (ctypes) against the intrinsics' Python semantics, over random inputs (full scale, small,
zeros, impulses, -32768) and random legal parameters, including the audio preprocessor's
configuration (a 480-sample frame, auto-scaled, into a 512-point RFFT); and the C compiled
for Cortex-M0+ and M4."""

from __future__ import annotations

import ctypes
import shutil
import subprocess

import numpy as np
import pytest

from microcompile.ir import signal_fft as sf
from microcompile.resources import resource_dir
from microcompile.tir.intrinsics import get
from signal_models import Input, Output, custom_op_model
from tflm_ref import run_tflm, tflm_interpreter

RUNTIME = resource_dir("runtime_c")
SOURCE = RUNTIME / "kernels" / "mc_signal_fft.c"
CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", "-I", str(RUNTIME / "include")]
# Even lengths whose halves use every kissfft radix: 2, 3, 4, 5 and mixes, up to TFLM's 2048.
FFT_LENGTHS = [4, 6, 10, 16, 24, 40, 60, 64, 120, 128, 256, 512, 1024, 2048]


def _signals(rng, shape) -> list[np.ndarray]:
    """Full scale, small, zeros, impulses (largest positive and negative), random extremes, and a
    full-scale square wave (its fundamental exceeds half scale: kiss_fftr's sums leave int16)."""
    impulse = np.zeros(shape, np.int16)
    flat = impulse.reshape(-1)
    flat[rng.integers(flat.size, size=2)] = (32767, -32768)
    extremes = np.where(rng.random(shape) < 0.5, -32768, 32767).astype(np.int16)
    phase = 2 * np.pi * np.arange(shape[-1]) * rng.integers(1, 4) / shape[-1] + rng.random(shape)
    square = np.where(np.cos(phase) >= 0, 32767, -32768).astype(np.int16)
    return [rng.integers(-32768, 32768, shape).astype(np.int16), rng.integers(-40, 41, shape).astype(np.int16),
            np.zeros(shape, np.int16), impulse, extremes, square]


def _rfft_cases():
    rng = np.random.default_rng(11)
    out = [(x, 512, "audio") for x in _signals(rng, (480,))]     # micro_speech: 480 samples, fft 512
    for k, n in enumerate(FFT_LENGTHS):
        lead = [(), (2,), (2, 2)][k % 3]
        for n_in in sorted({n, int(rng.integers(1, n + 1))}):
            out += [(x, n, f"{n}_{n_in}_{j}") for j, x in enumerate(_signals(rng, lead + (n_in,)))]
    return out


RFFT_CASES = _rfft_cases()


def _run_tflm_arena(model: bytes, x: np.ndarray) -> np.ndarray:
    """run_tflm with a 1 MiB arena: its default (10x the model) is too small for RFFT state."""
    interp = tflm_interpreter(model, arena_size=1 << 20)
    interp.set_input(np.ascontiguousarray(x), 0)
    interp.invoke()
    return np.array(interp.get_output(0), copy=True)


def _auto_scale_cases() -> list[np.ndarray]:
    rng = np.random.default_rng(5)
    quirks = [[-32768, 5, 0, 1], [5, -32768], [-32768], [-32768, -5, -7, 3], [-32768, -5, -3, -1], [-32768, 1],
              [1, 2, 3], [-1], [3, -32768, -9, 100, -32768, -2, 40]]     # MaxAbs16's int16 maximum
    out = [np.array(q, np.int16) for q in quirks]
    for n in (1, 7, 480):
        out += _signals(rng, (n,))
        out.append((rng.integers(-(1 << 12), 1 << 12, n) >> rng.integers(0, 12, n)).astype(np.int16))
    return out


AUTO_SCALE_CASES = _auto_scale_cases()


def _energy_cases():
    rng = np.random.default_rng(3)
    out = []
    for k in (1, 5, 257):
        for x in _signals(rng, (2 * k,)):
            start = int(rng.integers(0, k + 1))
            out += [(x, 0, k), (x, start, int(rng.integers(start, k + 1)))]
    return out


ENERGY_CASES = _energy_cases()


# --- Python against TFLM ---------------------------------------------------------------------

@pytest.mark.parametrize("x", AUTO_SCALE_CASES, ids=lambda x: str(x.size))
def test_fft_auto_scale_equals_tflm(x):
    model = custom_op_model("SignalFftAutoScale", [Input(x.shape, "int16")],
                            [Output(x.shape, "int16"), Output((), "int32")], {})
    want_y, want_scale = run_tflm(model, [x], 2)
    y, scale = sf.fft_auto_scale(x)
    assert y.dtype == np.int16 and np.array_equal(y, want_y)
    assert scale.dtype == np.int32 and int(scale) == int(want_scale)


@pytest.mark.parametrize("x,fft_length,name", RFFT_CASES, ids=[c[2] for c in RFFT_CASES])
def test_rfft_int16_equals_tflm(x, fft_length, name):
    out_shape = x.shape[:-1] + (fft_length + 2,)
    model = custom_op_model("SignalRfft", [Input(x.shape, "int16")], [Output(out_shape, "int16")],
                            {"T": 7, "fft_length": fft_length})
    got = sf.rfft_int16(x, fft_length)
    assert got.dtype == np.int16 and got.shape == out_shape
    assert np.array_equal(got, _run_tflm_arena(model, x))


def test_audio_preprocessor_chain_equals_tflm():
    """FftAutoScale then the 512-point RFFT of a quiet 480-sample frame, as the preprocessor runs them."""
    rng = np.random.default_rng(1)
    frame = (rng.normal(0, 300, 480)).astype(np.int16)
    scaled, scale = sf.fft_auto_scale(frame)
    assert int(scale) > 0
    model = custom_op_model("SignalRfft", [Input((480,), "int16")], [Output((514,), "int16")],
                            {"T": 7, "fft_length": 512})
    assert np.array_equal(sf.rfft_int16(scaled, 512), _run_tflm_arena(model, scaled))


def test_rfft_is_the_dft_over_fft_length():
    """Independent of TFLM: within a few LSB per stage of numpy's FFT / fft_length."""
    rng = np.random.default_rng(2)
    for n in (24, 40, 512):
        x = rng.integers(-20000, 20000, n - 3).astype(np.int16)
        got = sf.rfft_int16(x, n).astype(np.float64)
        want = np.fft.rfft(x.astype(np.float64), n) / n
        stages = len(sf.rfft_tables(n)["factors"]) + 1
        assert np.abs(got[0::2] - want.real).max() <= 2 * stages
        assert np.abs(got[1::2] - want.imag).max() <= 2 * stages


@pytest.mark.parametrize("x,start,end", ENERGY_CASES, ids=[f"{x.size // 2}_{s}_{e}" for x, s, e in ENERGY_CASES])
def test_energy_equals_tflm_in_its_range(x, start, end):
    k = x.size // 2
    model = custom_op_model("SignalEnergy", [Input(x.shape, "int16")], [Output((k,), "uint32")],
                            {"start_index": start, "end_index": end})
    want = run_tflm(model, [x])[0]
    got = sf.energy(x, start, end)
    assert got.dtype == np.uint32 and got.shape == (k,)
    assert np.array_equal(got[start:end], want[start:end])     # TFLM leaves the rest unwritten
    assert not got[:start].any() and not got[end:].any()


def test_refused_lengths():
    # odd (kiss_fftr), 2 (radix 1) and a radix-7 half reach code that TFLM cannot run
    for n in (7, 2, 14, 44):
        with pytest.raises(ValueError):
            sf.rfft_int16(np.zeros(4 if n > 4 else 1, np.int16), n)
    with pytest.raises(ValueError):
        sf.rfft_int16(np.zeros(65, np.int16), 64)
    with pytest.raises(ValueError):
        sf.energy(np.zeros(8, np.int16), 3, 5)
    assert sf.rfft_scratch_bytes(512) == 0
    assert sf.rfft_tables(512)["factors"].tolist() == [[4, 64], [4, 16], [4, 4], [4, 1]]
    assert sf.rfft_tables(60)["factors"].tolist() == [[2, 15], [3, 5], [5, 1]]
    assert sf.rfft_tables(512)["twiddles"].shape == (256, 2) and sf.rfft_tables(512)["super_twiddles"].shape == (128, 2)
    assert sf.energy(np.array([[3, 4, 1, 1], [0, 0, 2, -2]], np.int16), 1, 2).tolist() == [[0, 2], [0, 8]]


# --- the C kernels against the Python semantics ----------------------------------------------

def _struct(fields: tuple[str, ...], values: dict):
    cls = type("P", (ctypes.Structure,), {"_fields_": [(f, ctypes.c_int32) for f in fields]})
    return cls(**values)


def _ptr(a: np.ndarray):
    return ctypes.c_void_p(a.ctypes.data)


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    path = tmp_path_factory.mktemp("signal_fft") / "libmc_signal_fft.so"
    subprocess.run(["gcc", "-shared", "-fPIC", *CFLAGS, str(SOURCE), "-o", str(path)], check=True)
    return ctypes.CDLL(str(path))


def _call(lib, name: str, arrays: list[np.ndarray], params: dict) -> None:
    """The intrinsic `name` in C (arrays by pointer, params as its struct) and in Python (the
    same arrays' copies at offset 3, as the interpreter passes them); the written ones must agree."""
    kernel = get(name)
    struct = kernel.arg_dtypes[-1]
    padded = [np.concatenate([np.full(3, 77, a.dtype), a]) for a in arrays]
    getattr(lib, name)(*[_ptr(a) for a in arrays], ctypes.byref(_struct(struct.fields, params)))
    kernel.impl(*[(p, 3) for p in padded], params)
    for k in kernel.writes:
        assert np.array_equal(arrays[k], padded[k][3:]), (name, k)
        assert (padded[k][:3] == 77).all()


@pytest.mark.parametrize("x", AUTO_SCALE_CASES, ids=lambda x: str(x.size))
def test_c_fft_auto_scale(lib, x):
    y, scale = np.full(x.size, 1234, np.int16), np.full(1, -5, np.int32)
    _call(lib, "mc_fft_auto_scale_s16", [y, scale, x.copy()], {"size": x.size})
    assert int(scale[0]) == int(sf.fft_auto_scale(x)[1])


@pytest.mark.parametrize("x,fft_length,name", RFFT_CASES, ids=[c[2] for c in RFFT_CASES])
def test_c_rfft(lib, x, fft_length, name):
    t = sf.rfft_tables(fft_length)
    rows = x.size // x.shape[-1]
    y = np.full(rows * (fft_length + 2), 1234, np.int16)
    params = {"rows": rows, "input_length": x.shape[-1], "fft_length": fft_length, "stages": len(t["factors"])}
    _call(lib, "mc_rfft_s16", [y, x.reshape(-1).copy(), t["twiddles"].reshape(-1), t["super_twiddles"].reshape(-1),
                               t["factors"].reshape(-1)], params)
    assert np.array_equal(y, sf.rfft_int16(x, fft_length).reshape(-1))


@pytest.mark.parametrize("x,start,end", ENERGY_CASES, ids=[f"{x.size // 2}_{s}_{e}" for x, s, e in ENERGY_CASES])
def test_c_energy(lib, x, start, end):
    y = np.full(x.size // 2, 99, np.uint32)
    _call(lib, "mc_energy_s16", [y, x.copy()], {"length": x.size // 2, "start_index": start, "end_index": end})
    assert np.array_equal(y, sf.energy(x, start, end))


@pytest.mark.parametrize("cpu", [["-mcpu=cortex-m0plus", "-mthumb"],
                                 ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]],
                         ids=["m0plus", "m4"])
def test_c_compiles_for_cortex_m(tmp_path, cpu):
    if shutil.which("arm-none-eabi-gcc") is None:
        pytest.skip("arm-none-eabi-gcc is not installed")
    obj = tmp_path / "mc_signal_fft.o"
    r = subprocess.run(["arm-none-eabi-gcc", *cpu, *CFLAGS, "-c", str(SOURCE), "-o", str(obj)],
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    symbols = subprocess.run(["arm-none-eabi-nm", str(obj)], capture_output=True, text=True, check=True).stdout
    undefined = {line.split()[-1] for line in symbols.splitlines() if line.split()[0] == "U"}
    assert undefined <= {"__aeabi_idiv", "__aeabi_idivmod"}, undefined     # no libm, no malloc
