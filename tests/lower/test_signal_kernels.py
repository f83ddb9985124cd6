"""TFLM's signal-library ops (the audio front end of micro_speech): the Python semantics
(microcompile/ir/signal_math.py) against TFLM's host interpreter, one-op models per case; the
C kernels (runtime_c/kernels/mc_signal.c) against the Python on the host through ctypes; the
C for Cortex-M0+ and M4 with -Werror; and the intrinsic declarations' semantics on flat
buffers. Random legal parameters (channel counts, mel and random filter-bank layouts, shifts,
LUTs), full-range, zero and small inputs; several invocations in a row where an op has state.
Each group also checks that its cases reach the wrap-arounds and saturations it is about."""

from __future__ import annotations

import ctypes
import math
import subprocess

import numpy as np
import pytest
from signal_models import Input, Output, custom_op_model
from tflm_ref import tflm_interpreter

from microcompile.ir import signal_math as sm
from support.audio_frontend import mel_filter_bank, pcan_lut
from microcompile.resources import resource_dir
from microcompile.tir import intrinsics, intrinsics_signal as isig

U32_MAX = 2**32 - 1
CFLAGS = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-O2"]


def _source():
    rc = resource_dir("runtime_c")
    return rc / "kernels" / "mc_signal.c", rc / "include"


def _tflm(code: str, inputs: list, outputs: list[Output], options: dict, feeds: list[list[np.ndarray]]):
    """Outputs of `code` over successive invocations, one list of fed inputs per invocation."""
    model = custom_op_model(code, inputs, outputs, options)
    interp = tflm_interpreter(model, arena_size=65536 + 4 * _tensor_bytes(inputs, outputs))
    results = []
    for feed in feeds:
        for k, x in enumerate(feed):
            interp.set_input(np.array(x, order="C"), k)     # (ascontiguousarray would make a scalar 1-D)
        interp.invoke()
        results.append([np.array(interp.get_output(k), copy=True) for k in range(len(outputs))])
    return results


def _tensor_bytes(inputs: list, outputs: list[Output]) -> int:
    return sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in inputs + outputs)


def _u32_values(rng, n: int) -> np.ndarray:
    """Full-range uint32 with zeros, ones, small values, powers of two and their neighbours."""
    kind = rng.integers(0, 5, n)
    full = rng.integers(0, 2**32, n, dtype=np.uint64)
    small = rng.integers(0, 16, n, dtype=np.uint64)
    pow2 = np.uint64(1) << rng.integers(0, 32, n).astype(np.uint64)
    near = (pow2 + rng.integers(-1, 2, n).astype(np.int64).astype(np.uint64)) & np.uint64(U32_MAX)
    scaled = full >> rng.integers(0, 32, n).astype(np.uint64)
    return np.choose(kind, [full, small, near, scaled, np.zeros(n, np.uint64)]).astype(np.uint32)


# --- the C kernels, compiled once ------------------------------------------------------------

class _Window(ctypes.Structure):
    _fields_ = [(f, ctypes.c_int32) for f in isig.WINDOW_PARAMS.fields]


class _FilterBank(ctypes.Structure):
    _fields_ = [(f, ctypes.c_int32) for f in isig.FILTER_BANK_PARAMS.fields]


class _Sqrt(ctypes.Structure):
    _fields_ = [(f, ctypes.c_int32) for f in isig.FILTER_BANK_SQRT_PARAMS.fields]


class _SpectralSubtraction(ctypes.Structure):
    _fields_ = [(f, ctypes.c_int32) for f in isig.SPECTRAL_SUBTRACTION_PARAMS.fields]


class _Pcan(ctypes.Structure):
    _fields_ = [(f, ctypes.c_int32) for f in isig.PCAN_PARAMS.fields]


class _Log(ctypes.Structure):
    _fields_ = [(f, ctypes.c_int32) for f in isig.FILTER_BANK_LOG_PARAMS.fields]


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    src, inc = _source()
    so = tmp_path_factory.mktemp("signal") / "libmc_signal.so"
    subprocess.run(["gcc", "-shared", "-fPIC", *CFLAGS, "-I", str(inc), str(src), "-o", str(so)], check=True)
    return ctypes.CDLL(str(so))


def _p(a: np.ndarray):
    assert a.flags.c_contiguous
    return ctypes.c_void_p(a.ctypes.data)


def _s32(v: int) -> int:
    """An int32 struct field holding a uint32 value's bits."""
    v = int(v) & U32_MAX
    return v - 2**32 if v >= 2**31 else v


# --- SignalWindow ----------------------------------------------------------------------------

def _window_cases():
    rng = np.random.default_rng(1)
    hann = np.round((0.5 - 0.5 * np.cos(2 * np.pi * np.arange(480) / 480)) * 4096).astype(np.int16)
    x = rng.integers(-32768, 32768, (1, 480)).astype(np.int16)
    x[0, :4] = [-32768, 32767, 0, -1]
    cases = [(x, hann, 12)]
    shapes = [((7,), 7), ((3, 16), 16), ((2, 2, 33), 33), ((4, 64), 64), ((1, 1), 1), ((2, 6), 3), ((5, 512), 512)]
    for shape, n in shapes:
        w = rng.integers(-32768, 32768, n).astype(np.int16)
        w[:2] = [-32768, 32767][:min(2, n)]
        x = rng.integers(-32768, 32768, shape).astype(np.int16)
        x.reshape(-1)[:2] = [-32768, -32768][:min(2, x.size)]
        for shift in (0, int(rng.integers(1, 31)), 31):
            cases.append((x, w, shift))
    return cases


def test_window_matches_tflm():
    cases = _window_cases()
    for x, w, shift in cases:
        (want,), = _tflm("SignalWindow", [Input(x.shape, "int16"), w], [Output(x.shape, "int16")],
                         {"shift": shift}, [[x]])
        got = sm.window(x, w, shift)
        assert got.dtype == np.int16 and got.shape == want.shape
        np.testing.assert_array_equal(got, want, err_msg=f"shape {x.shape} shift {shift}")
    # the cases saturate both ways (shift 0 with full-range values)
    both = [sm.window(x, w, s) for x, w, s in cases]
    assert any((o == 32767).any() for o in both) and any((o == -32768).any() for o in both)


def test_window_c_matches_python(lib):
    for x, w, shift in _window_cases():
        y = np.zeros_like(x)
        lib.mc_window_s16(_p(y), _p(x), _p(w), ctypes.byref(_Window(x.size // w.size, w.size, shift)))
        np.testing.assert_array_equal(y, sm.window(x, w, shift))


# --- SignalFilterBank ------------------------------------------------------------------------

def _random_filter_bank(rng, spectrum_size: int, num_channels: int):
    """Any layout TFLM indexes in bounds: overlapping bands, zero and negative widths, shared
    weights, full-range int16 weights (a negative one wraps the uint64 sums)."""
    n_weights = int(rng.integers(1, 80))
    wd = rng.integers(-2, min(n_weights, spectrum_size) + 1, num_channels + 1)
    span = np.maximum(wd, 0)
    fs = np.array([rng.integers(0, spectrum_size - s + 1) for s in span])
    ws = np.array([rng.integers(0, n_weights - s + 1) for s in span])
    weights = rng.integers(-32768, 32768, n_weights).astype(np.int16)
    unweights = rng.integers(-32768, 32768, n_weights).astype(np.int16)
    if rng.integers(0, 2):     # realistic magnitudes, positive
        weights, unweights = np.abs(weights.astype(np.int32)) // 8, np.abs(unweights.astype(np.int32)) // 8
    return (weights.astype(np.int16), unweights.astype(np.int16), fs.astype(np.int16), ws.astype(np.int16),
            wd.astype(np.int16))


def _filter_bank_cases():
    rng = np.random.default_rng(2)
    banks = [(257, 40, mel_filter_bank(257, 40, 16000, 125, 7500, block=4, align=2)),   # the preprocessor's
             (257, 40, mel_filter_bank(257, 40, 16000, 125, 7500)),
             (129, 23, mel_filter_bank(129, 23, 8000, 20, 3900)),
             (513, 64, mel_filter_bank(513, 64, 16000, 0, 7999)),
             (33, 20, mel_filter_bank(33, 20, 16000, 100, 7000))]    # narrow: zero-width channels
    for _ in range(24):
        size, n = int(rng.integers(1, 120)), int(rng.integers(1, 40))
        banks.append((size, n, _random_filter_bank(rng, size, n)))
    cases = []
    for size, n, bank in banks:
        for x in (_u32_values(rng, size), np.full(size, U32_MAX, np.uint32), np.zeros(size, np.uint32),
                  rng.integers(0, 100, size).astype(np.uint32)):
            cases.append((x, bank, n))
    return cases


def test_mel_filter_banks_are_realistic():
    """The generator lays out the audio preprocessor's bank (316 weights, 41 channel entries),
    and a narrow bank has zero-width channels (pointed at the shared zero weight)."""
    weights, unweights, fs, ws, wd = mel_filter_bank(257, 40, 16000, 125, 7500, block=4, align=2)
    assert len(weights) == len(unweights) == 316 and len(fs) == len(ws) == len(wd) == 41
    assert weights.min() >= 0 and unweights.min() >= 0 and weights.max() <= 4096
    weights, _, fs, ws, wd = mel_filter_bank(33, 20, 16000, 100, 7000)
    assert ((wd == 1) & (ws == 0) & (weights[0] == 0)).sum() > 1


def test_filter_bank_matches_tflm():
    wrapped = False
    for x, bank, n in _filter_bank_cases():
        (want,), = _tflm("SignalFilterBank", [Input(x.shape, "uint32"), *bank], [Output((n,), "uint64")],
                         {"num_channels": n}, [[x]])
        got = sm.filter_bank(x, *bank, n)
        assert got.dtype == np.uint64
        np.testing.assert_array_equal(got, want, err_msg=f"{n} channels over {x.size} bins")
        exact = _filter_bank_exact(x, *bank, n)
        wrapped |= any(e != int(g) for e, g in zip(exact, got))
    assert wrapped, "no case wrapped a uint64 sum"


def _filter_bank_exact(x, weights, unweights, fs, ws, wd, n):
    """Unbounded integer sums: where they differ from the op's, the op wrapped."""
    out = []
    for c in range(1, n + 1):
        s = sum(int(weights[ws[c] + j]) * int(x[fs[c] + j]) for j in range(max(int(wd[c]), 0)))
        s += sum(int(unweights[ws[c - 1] + j]) * int(x[fs[c - 1] + j]) for j in range(max(int(wd[c - 1]), 0)))
        out.append(s)
    return out


def test_filter_bank_c_matches_python(lib):
    for x, bank, n in _filter_bank_cases():
        y = np.zeros(n, np.uint64)
        lib.mc_filter_bank_u32(_p(y), _p(x), *(_p(np.ascontiguousarray(a)) for a in bank),
                               ctypes.byref(_FilterBank(n)))
        np.testing.assert_array_equal(y, sm.filter_bank(x, *bank, n))


# --- SignalFilterBankSquareRoot --------------------------------------------------------------

def _sqrt_inputs(rng, n: int) -> np.ndarray:
    roots = rng.integers(0, 2**32, n, dtype=np.uint64)
    squares = roots * roots + rng.integers(-1, 2, n).astype(np.int64).astype(np.uint64)   # wraps at 0
    mids = roots * roots + roots + rng.integers(0, 2, n).astype(np.uint64)   # the rounding boundary
    full = rng.integers(0, 2**63, n, dtype=np.uint64) * np.uint64(2) + rng.integers(0, 2, n, dtype=np.uint64)
    low = rng.integers(0, 2**32, n, dtype=np.uint64) >> rng.integers(0, 32, n).astype(np.uint64)
    edges = np.array([0, 1, 2, 3, 4, 2**32 - 1, 2**32, 2**32 + 1, 0xFFFF * 0xFFFF + 0xFFFF,
                      0xFFFF * 0xFFFF + 0xFFFF + 1, 2**64 - 2**32, 2**64 - 2**32 + 1, 2**64 - 1], np.uint64)
    kind = rng.integers(0, 5, n)
    return np.concatenate([edges, np.choose(kind, [roots, squares, mids, full, low])])


def test_sqrt64_is_rounded_and_capped():
    rng = np.random.default_rng(3)
    x = _sqrt_inputs(rng, 3000)
    got = sm.sqrt64(x)
    for v, r in zip(x.tolist(), got.tolist()):
        f = math.isqrt(v)
        want = f + 1 if v - f * f > f else f
        want = min(want, 0xFFFF if v < 2**32 else U32_MAX)
        assert r == want, v


def test_filter_bank_square_root_matches_tflm():
    rng = np.random.default_rng(4)
    for k in range(20):
        n = int(rng.integers(1, 300))
        x = _sqrt_inputs(rng, n)
        model = [Input(x.shape, "uint64"), Input((), "int32")]
        feeds = [[x, np.array(s, np.int32)] for s in ([0, 31] if k == 0 else []) + list(rng.integers(0, 32, 3))]
        for feed, (want,) in zip(feeds, _tflm("SignalFilterBankSquareRoot", model, [Output(x.shape, "uint32")], {},
                                              feeds)):
            got = sm.filter_bank_square_root(x, int(feed[1]))
            assert got.dtype == np.uint32
            np.testing.assert_array_equal(got, want, err_msg=f"scale_bits {int(feed[1])}")


def test_filter_bank_square_root_c_matches_python(lib):
    rng = np.random.default_rng(5)
    for k in range(20):
        x = _sqrt_inputs(rng, int(rng.integers(1, 500)))
        for s in (0, 31, int(rng.integers(0, 32)), 32 + k, -1 - k):    # beyond 0..31: modulo 32
            y, bits = np.zeros(x.size, np.uint32), np.array([s], np.int32)
            lib.mc_filter_bank_sqrt_u64(_p(y), _p(x), _p(bits), ctypes.byref(_Sqrt(x.size)))
            np.testing.assert_array_equal(y, sm.filter_bank_square_root(x, s))


# --- SignalFilterBankSpectralSubtraction -----------------------------------------------------

PREPROCESSOR_SS = {"alternate_one_minus_smoothing": 15401, "alternate_smoothing": 983, "clamping": False,
                   "min_signal_remaining": 819, "num_channels": 40, "one_minus_smoothing": 15975, "smoothing": 409,
                   "smoothing_bits": 10, "spectral_subtraction_bits": 14}


def _ss_options(rng, n: int, clamping: bool, wild: bool) -> dict:
    bits = int(rng.integers(0, 64 if wild else 20))
    top = 2**31 if wild else max(2**bits, 2)
    smoothing = int(rng.integers(0, top))
    alt = int(rng.integers(0, top))
    return {"alternate_one_minus_smoothing": int(rng.integers(0, top)) if wild else max(2**bits - alt, 0),
            "alternate_smoothing": alt, "clamping": clamping,
            "min_signal_remaining": int(rng.integers(0, top)), "num_channels": n,
            "one_minus_smoothing": int(rng.integers(0, top)) if wild else max(2**bits - smoothing, 0),
            "smoothing": smoothing, "smoothing_bits": int(rng.integers(0, 32 if wild else 12)),
            "spectral_subtraction_bits": bits}


def _ss_config(opts: dict) -> sm.SpectralSubtractionConfig:
    return sm.SpectralSubtractionConfig(**opts)


def _ss_cases():
    """(options, frames): loud frames, then quiet ones so that the estimate exceeds the signal."""
    rng = np.random.default_rng(6)
    cases = []
    for k in range(30):
        if k < 2:
            opts = dict(PREPROCESSOR_SS, clamping=bool(k))
        else:
            opts = _ss_options(rng, int(rng.integers(1, 50)), bool(k % 2), wild=k >= 16)
        n = opts["num_channels"]
        frames = [_u32_values(rng, n) for _ in range(2)] + [np.full(n, U32_MAX >> 4, np.uint32)] * 2
        frames += [np.zeros(n, np.uint32), rng.integers(0, 64, n).astype(np.uint32), _u32_values(rng, n)]
        cases.append((opts, frames))
    return cases


def test_spectral_subtraction_matches_tflm():
    clamped = {False: False, True: False}
    for opts, frames in _ss_cases():
        n = opts["num_channels"]
        outs = _tflm("SignalFilterBankSpectralSubtraction", [Input((n,), "uint32")],
                     [Output((n,), "uint32"), Output((n,), "uint32")], opts, [[f] for f in frames])
        noise = np.zeros(n, np.uint32)
        for step, (frame, (want_signal, want_noise)) in enumerate(zip(frames, outs)):
            before = noise.copy()
            signal, noise_copy = sm.spectral_subtraction(frame, noise, _ss_config(opts))
            assert signal.dtype == noise_copy.dtype == np.uint32
            np.testing.assert_array_equal(signal, want_signal, err_msg=f"{opts} step {step}")
            np.testing.assert_array_equal(noise_copy, want_noise, err_msg=f"{opts} step {step}")
            np.testing.assert_array_equal(noise, want_noise)      # the state, updated in place
            # an estimate above the signal: clamping pulls the state down to it
            scaled = (frame.astype(np.uint64) << np.uint64(opts["smoothing_bits"])) & np.uint64(U32_MAX)
            unclamped = _ss_config(dict(opts, clamping=False))
            if (sm.spectral_subtraction(frame, before.copy(), unclamped)[1] > scaled).any():
                clamped[opts["clamping"]] = True
    assert clamped[True] and clamped[False], "no case had a noise estimate above the signal"


def test_spectral_subtraction_c_matches_python(lib):
    for opts, frames in _ss_cases():
        n, config = opts["num_channels"], _ss_config(opts)
        params = _SpectralSubtraction(*(_s32(int(opts[f])) for f in isig.SPECTRAL_SUBTRACTION_PARAMS.fields))
        state_c, state_py = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
        for frame in frames:
            y, noise_out = np.zeros(n, np.uint32), np.zeros(n, np.uint32)
            lib.mc_spectral_subtraction_u32(_p(y), _p(noise_out), _p(frame), _p(state_c), ctypes.byref(params))
            signal, noise = sm.spectral_subtraction(frame, state_py, config)
            np.testing.assert_array_equal(y, signal)
            np.testing.assert_array_equal(noise_out, noise)
            np.testing.assert_array_equal(state_c, state_py)


# --- SignalPCAN ------------------------------------------------------------------------------

def _pcan_cases():
    rng = np.random.default_rng(7)
    luts = [pcan_lut(0.95, 80.0, 7, 21), pcan_lut(0.5, 1.0, 10, 16)]
    luts += [pcan_lut(float(rng.uniform(0.1, 1.0)), float(rng.uniform(0.5, 200)), int(rng.integers(0, 12)),
                      int(rng.integers(12, 22))) for _ in range(4)]
    luts += [rng.integers(-32768, 32768, sm.PCAN_LUT_SIZE).astype(np.int16) for _ in range(6)]
    cases = []
    for k, lut in enumerate(luts):
        for shift in (6, int(rng.integers(0, 40)), 63):
            n = 40 if k == 0 else int(rng.integers(1, 80))
            noise = _u32_values(rng, n)
            noise[:min(n, 4)] = [0, 1, 2, 3][:min(n, 4)]
            cases.append((_u32_values(rng, n), noise, lut, shift))
    return cases


def test_pcan_matches_tflm():
    negative_gain = False
    for x, noise, lut, shift in _pcan_cases():
        n = x.size
        (want,), = _tflm("SignalPCAN", [Input((n,), "uint32"), Input((n,), "uint32"), lut],
                         [Output((n,), "uint32")], {"snr_shift": shift}, [[x, noise]])
        got = sm.pcan(x, noise, lut, shift)
        assert got.dtype == np.uint32
        np.testing.assert_array_equal(got, want, err_msg=f"snr_shift {shift}")
        negative_gain |= bool((sm.pcan_gain(noise, lut) < 0).any())
    assert negative_gain, "no case had a negative (wrapped) gain"


def test_pcan_c_matches_python(lib):
    for x, noise, lut, shift in _pcan_cases():
        y = np.zeros_like(x)
        lib.mc_pcan_u32(_p(y), _p(x), _p(noise), _p(lut), ctypes.byref(_Pcan(x.size, shift)))
        np.testing.assert_array_equal(y, sm.pcan(x, noise, lut, shift))
        lib.mc_pcan_u32(_p(x), _p(x), _p(noise), _p(lut), ctypes.byref(_Pcan(x.size, shift)))   # in place
        np.testing.assert_array_equal(x, y)


# --- SignalFilterBankLog ---------------------------------------------------------------------

def _log_cases():
    rng = np.random.default_rng(8)
    cases = [(_u32_values(rng, 40), 3, 64)]
    for bits, scale in [(0, 1), (0, 64), (31, 64), (5, 2**31 - 1), (0, 70000), (12, 3000)]:
        cases.append((_u32_values(rng, int(rng.integers(1, 200))), bits, scale))
    for _ in range(16):
        cases.append((_u32_values(rng, int(rng.integers(1, 200))), int(rng.integers(0, 32)),
                      int(rng.integers(0, 2**31))))
    cases.append((np.arange(0, 4096, dtype=np.uint32), 0, 1 << 15))     # every small value, unclipped
    return cases


def test_filter_bank_log_matches_tflm():
    wrapped = False
    for x, bits, scale in _log_cases():
        (want,), = _tflm("SignalFilterBankLog", [Input(x.shape, "uint32")], [Output(x.shape, "int16")],
                         {"input_correction_bits": bits, "output_scale": scale}, [[x]])
        got = sm.filter_bank_log(x, bits, scale)
        assert got.dtype == np.int16
        np.testing.assert_array_equal(got, want, err_msg=f"input_correction_bits {bits} output_scale {scale}")
        scaled = (x.astype(np.int64) << bits) & U32_MAX
        live = scaled > 1
        exact = np.log(np.where(live, scaled, 2).astype(np.float64)) * scale
        wrapped |= bool((live & (exact > 33100) & (got < 32767)).any())    # unwrapped, it would clip
    assert wrapped, "no case wrapped the uint32 output scaling"
    # the audio preprocessor's options stay close to round(64 ln(8 x))
    x = np.arange(1, 100000, 7, dtype=np.uint32)
    approx = sm.filter_bank_log(x, 3, 64).astype(np.float64)
    assert np.abs(approx - 64 * np.log(8.0 * x)).max() <= 1.0


def test_filter_bank_log_c_matches_python(lib):
    for x, bits, scale in _log_cases():
        y = np.zeros(x.size, np.int16)
        lib.mc_filter_bank_log_u32(_p(y), _p(x), ctypes.byref(_Log(x.size, bits, _s32(scale))))
        np.testing.assert_array_equal(y, sm.filter_bank_log(x, bits, scale))


# --- the declarations, and the C for Cortex-M ------------------------------------------------

def _call(name: str, *args):
    intr = intrinsics.get(name)
    assert intr.extern and intr.header == "mc_signal.h" and len(args) == len(intr.arg_dtypes)
    intr.impl(*args)


def test_intrinsics_run_the_semantics_at_offsets():
    """Each declaration's semantics reads and writes its pointers at their offsets (the rest of
    the flat buffers untouched) and updates the spectral subtraction's state in place."""
    rng = np.random.default_rng(9)
    pad = 3

    def at(a):
        flat = np.concatenate([np.full(pad, 7, a.dtype), np.ravel(a), np.full(pad, 7, a.dtype)])
        return flat, (flat, pad)

    x16, w16 = rng.integers(-32768, 32768, 2 * 8).astype(np.int16), rng.integers(-32768, 32768, 8).astype(np.int16)
    yb, y = at(np.zeros(16, np.int16))
    _call("mc_window_s16", y, at(x16)[1], at(w16)[1], isig.WINDOW_PARAMS(frames=2, size=8, shift=5).as_dict())
    np.testing.assert_array_equal(yb[pad:-pad], sm.window(x16, w16, 5))
    assert (yb[:pad] == 7).all() and (yb[-pad:] == 7).all()

    x, bank, n = _filter_bank_cases()[0]
    yb, y = at(np.zeros(n, np.uint64))
    _call("mc_filter_bank_u32", y, at(x)[1], *(at(a)[1] for a in bank),
          isig.FILTER_BANK_PARAMS(num_channels=n).as_dict())
    np.testing.assert_array_equal(yb[pad:-pad], sm.filter_bank(x, *bank, n))

    xs = _sqrt_inputs(rng, 20)
    yb, y = at(np.zeros(xs.size, np.uint32))
    _call("mc_filter_bank_sqrt_u64", y, at(xs)[1], at(np.array([9], np.int32))[1],
          isig.FILTER_BANK_SQRT_PARAMS(channels=xs.size).as_dict())
    np.testing.assert_array_equal(yb[pad:-pad], sm.filter_bank_square_root(xs, 9))

    opts = dict(PREPROCESSOR_SS, clamping=True)
    params = isig.SPECTRAL_SUBTRACTION_PARAMS(**{k: int(v) for k, v in opts.items()})
    sb, state = at(np.zeros(40, np.uint32))
    ref = np.zeros(40, np.uint32)
    for frame in _ss_cases()[1][1]:
        yb, y = at(np.zeros(40, np.uint32))
        nb, noise_out = at(np.zeros(40, np.uint32))
        _call("mc_spectral_subtraction_u32", y, noise_out, at(frame)[1], state, params.as_dict())
        signal, noise = sm.spectral_subtraction(frame, ref, _ss_config(opts))
        np.testing.assert_array_equal(yb[pad:-pad], signal)
        np.testing.assert_array_equal(nb[pad:-pad], noise)
        np.testing.assert_array_equal(sb[pad:-pad], ref)
    assert ref.any() and (sb[:pad] == 7).all()

    xp, noise, lut, shift = _pcan_cases()[0]
    yb, y = at(np.zeros(xp.size, np.uint32))
    _call("mc_pcan_u32", y, at(xp)[1], at(noise)[1], at(lut)[1], isig.PCAN_PARAMS(
        channels=xp.size, snr_shift=shift).as_dict())
    np.testing.assert_array_equal(yb[pad:-pad], sm.pcan(xp, noise, lut, shift))

    xl = _u32_values(rng, 40)
    yb, y = at(np.zeros(40, np.int16))
    _call("mc_filter_bank_log_u32", y, at(xl)[1], isig.FILTER_BANK_LOG_PARAMS(
        channels=40, input_correction_bits=3, output_scale=64).as_dict())
    np.testing.assert_array_equal(yb[pad:-pad], sm.filter_bank_log(xl, 3, 64))


def test_declared_writes_are_the_output_and_state_pointers():
    writes = {name: intrinsics.get(name).writes for name in (
        "mc_window_s16", "mc_filter_bank_u32", "mc_filter_bank_sqrt_u64", "mc_spectral_subtraction_u32",
        "mc_pcan_u32", "mc_filter_bank_log_u32")}
    assert writes == {"mc_window_s16": (0,), "mc_filter_bank_u32": (0,), "mc_filter_bank_sqrt_u64": (0,),
                      "mc_spectral_subtraction_u32": (0, 1, 3), "mc_pcan_u32": (0,), "mc_filter_bank_log_u32": (0,)}


@pytest.mark.parametrize("cpu", [["-mcpu=cortex-m0plus", "-mthumb"],
                                 ["-mcpu=cortex-m4", "-mthumb", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]],
                         ids=["cortex-m0plus", "cortex-m4"])
def test_c_compiles_for_cortex_m(tmp_path, cpu):
    src, inc = _source()
    r = subprocess.run(["arm-none-eabi-gcc", *cpu, *CFLAGS, "-I", str(inc), "-c", str(src), "-o",
                        str(tmp_path / "mc_signal.o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "mc_signal.o").stat().st_size > 0
