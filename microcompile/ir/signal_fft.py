"""Bit-exact semantics of three TFLite Micro signal-library ops (the micro_speech audio front
end): SignalFftAutoScale, SignalRfft (int16) and SignalEnergy. runtime_c/kernels/mc_signal_fft.c
computes the same, and the interpreter runs these functions.

SignalRfft int16 is kissfft v130 with FIXED_POINT=16 (TFLM's kiss_fft_fixed16::kiss_fftr):
the real FFT of length n is a complex FFT of n/2 points over (even, odd) sample pairs, mixed
radix 4, 2, 3, 5 (kf_factor's order), every butterfly first dividing its inputs by its radix
(C_FIXDIV, so the output is the DFT / n), then kiss_fftr's post-processing with its super
twiddles. Products round as kissfft's sround ((x + 2^14) >> 15, no saturation) and every
int16 store wraps, as in the C. The butterflies of one stage are independent, so each stage
runs vectorized here (the C loops over them in the same order of stages).
"""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

_RADICES = (2, 3, 4, 5)     # kf_bfly_generic (any other prime) needs malloc, which TFLM patches to NULL


def _w16(a: np.ndarray) -> np.ndarray:
    """The int16 store of an int32 value: wraps, as the C conversion does."""
    return ((a + 32768) & 0xFFFF) - 32768


def _sround(a: np.ndarray) -> np.ndarray:
    return _w16((a + (1 << 14)) >> 15)


def _fixdiv(a: np.ndarray, p: int) -> np.ndarray:
    return _sround(a * (32767 // p))


def _cmul(ar, ai, br, bi) -> tuple[np.ndarray, np.ndarray]:
    return _sround(ar * br - ai * bi), _sround(ar * bi + ai * br)


def fft_auto_scale(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TFLM's FftAutoScale: int16 [N] -> (x << scale_bits wrapped to int16, int32 scale_bits),
    scale_bits = max(0, 15 - bit_length(MaxAbs16(x))). MaxAbs16 keeps an int16 running maximum,
    so -32768 stores as -32768 (negative) and the elements after it restart it oddly: we replay
    its loop from the last -32768. A maximum <= 0 gives scale_bits 0 (MostSignificantBit32 of 0
    or of a negative int16 is 32 in TFLM's GCC/Clang builds)."""
    x = np.asarray(x, dtype=np.int16).reshape(-1)
    m = int(np.abs(x.astype(np.int32)).max(initial=0))
    low = np.flatnonzero(x == -32768)
    if low.size:
        m = -32768
        for k in range(low[-1] + 1, x.size):
            v = int(x[k])
            if m >= 0:      # from here on it is an ordinary running max |v|
                m = max(m, int(np.abs(x[k:].astype(np.int32)).max()))
                break
            m = v if v > m else -v if -v > m else m
    scale = 15 - m.bit_length() if m > 0 else 0
    return _w16(x.astype(np.int32) << scale).astype(np.int16), np.int32(scale)


def _factors(ncfft: int) -> list[tuple[int, int]]:
    """kissfft's kf_factor: (radix, remaining length) pairs, 4s first, then a 2, then odd primes."""
    out, n, p = [], ncfft, 4
    floor_sqrt = math.floor(math.sqrt(ncfft))
    while True:
        while n % p:
            p = {4: 2, 2: 3}.get(p, p + 2)
            if p > floor_sqrt:
                p = n
        n //= p
        out.append((p, n))
        if n <= 1:
            return out


FFT_LENGTH_MAX = 1 << 16


def check_fft_length(fft_length: int) -> None:
    """The lengths TFLM's int16 RFFT runs: even (kiss_fftr), and fft_length/2 >= 2 factoring into
    kissfft's radix 2, 3, 4 and 5 butterflies (others reach kf_bfly_generic, whose scratch TFLM's
    patched KISS_FFT_MALLOC returns as NULL; fft_length 2 reaches it with radix 1), and at most
    FFT_LENGTH_MAX (TFLM's front ends use 512 to 4096; the tables of a longer one would not fit
    an MCU's flash, and a model file must not make the compiler build gigabytes of them)."""
    ncfft = fft_length // 2
    if not 4 <= fft_length <= FFT_LENGTH_MAX:
        raise ValueError(f"SignalRfft int16: fft_length {fft_length} is outside 4..{FFT_LENGTH_MAX}")
    if fft_length % 2 or ncfft < 2 or any(p not in _RADICES for p, _ in _factors(ncfft)):
        raise ValueError(f"SignalRfft int16: fft_length {fft_length} is not an even 2*(2^a 3^b 5^c) >= 4")


def _kiss_cexp(phase: float) -> tuple[int, int]:
    # KISS_FFT_COS/SIN in fixed point: floor(.5 + SAMP_MAX * cos(phase)) of the double phase
    return math.floor(0.5 + 32767 * math.cos(phase)), math.floor(0.5 + 32767 * math.sin(phase))


@lru_cache(maxsize=None)
def _tables(fft_length: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    check_fft_length(fft_length)
    n = fft_length // 2
    pi = 3.141592653589793238462643383279502884197169399375105820974944
    tw = [_kiss_cexp(-2 * pi * i / n) for i in range(n)]                   # kiss_fft_alloc
    sup = [_kiss_cexp(-pi * ((i + 1) / n + .5)) for i in range(n // 2)]    # kiss_fftr_alloc
    arrays = (np.array(tw, np.int16).reshape(n, 2), np.array(sup, np.int16).reshape(n // 2, 2),
              np.array(_factors(n), np.int32).reshape(-1, 2))
    for a in arrays:
        a.setflags(write=False)
    return arrays


def rfft_tables(fft_length: int) -> dict[str, np.ndarray]:
    """The constant tables mc_rfft_s16 takes: `twiddles` int16 [fft_length/2][2] and
    `super_twiddles` int16 [fft_length/4][2] (re, im; kissfft's values), `factors` int32
    [stages][2] (radix, remaining length: kf_factor's facbuf)."""
    tw, sup, fac = _tables(fft_length)
    return {"twiddles": tw, "super_twiddles": sup, "factors": fac}


def rfft_scratch_bytes(fft_length: int) -> int:
    """Scratch mc_rfft_s16 needs: none. It runs the complex FFT in its output row (fft_length/2
    + 1 complex values >= the fft_length/2 the FFT needs) and post-processes there in place;
    the zero padding is read, not stored. The output must not overlap the input."""
    check_fft_length(fft_length)
    return 0


@lru_cache(maxsize=None)
def _leaf_order(fft_length: int) -> np.ndarray:
    """kf_work's leaf copies: buffer[j] = input pair[order[j]] (mixed-radix digit reversal)."""
    factors = _factors(fft_length // 2)
    strides = np.cumprod([1] + [p for p, _ in factors[:-1]])
    order = np.zeros(1, np.int64)
    for (p, _), fstride in zip(reversed(factors), reversed(strides)):
        order = (np.arange(p)[:, None] * fstride + order[None, :]).reshape(-1)
    return order


def _butterfly(f: list, tw: list, p: int, roots: np.ndarray) -> list:
    """One kissfft butterfly (kf_bfly2/3/4/5, forward) on the stacked (re, im) int32 inputs f[j]
    (int16 values), tw[j] their twiddles; `roots` holds the (re, im) of twiddles[fstride*m] and
    twiddles[2*fstride*m] (radix 3's epi3, radix 5's ya and yb). Returns unwrapped outputs."""
    f = [(_fixdiv(r, p), _fixdiv(i, p)) for r, i in f]
    s = [f[0]] + [_cmul(f[j][0], f[j][1], *tw[j]) for j in range(1, p)]
    if p == 2:
        (ar, ai), (tr, ti) = s
        return [(ar + tr, ai + ti), (ar - tr, ai - ti)]
    if p == 4:
        (ar, ai), (s0r, s0i), (s1r, s1i), (s2r, s2i) = s
        s5r, s5i, s3r, s3i, s4r, s4i = ar - s1r, ai - s1i, s0r + s2r, s0i + s2i, s0r - s2r, s0i - s2i
        return [(ar + s1r + s3r, ai + s1i + s3i), (s5r + s4i, s5i - s4r), (ar + s1r - s3r, ai + s1i - s3i),
                (s5r - s4i, s5i + s4r)]
    if p == 3:
        (ar, ai), (s1r, s1i), (s2r, s2i) = s
        s3r, s3i = _w16(s1r + s2r), _w16(s1i + s2i)
        e = int(roots[1])                                          # epi3.i
        s0r, s0i = _sround(_w16(s1r - s2r) * e), _sround(_w16(s1i - s2i) * e)
        mr, mi = ar - (s3r >> 1), ai - (s3i >> 1)                  # HALF_OF of the stored int16
        return [(ar + s3r, ai + s3i), (mr - s0i, mi + s0r), (mr + s0i, mi - s0r)]
    (ar, ai), (s1r, s1i), (s2r, s2i), (s3r, s3i), (s4r, s4i) = s
    s7r, s7i, s10r, s10i = _w16(s1r + s4r), _w16(s1i + s4i), _w16(s1r - s4r), _w16(s1i - s4i)
    s8r, s8i, s9r, s9i = _w16(s2r + s3r), _w16(s2i + s3i), _w16(s2r - s3r), _w16(s2i - s3i)
    yar, yai, ybr, ybi = (int(v) for v in roots)

    def smul(a, b):
        return _sround(a * b)
    s5r, s5i = ar + smul(s7r, yar) + smul(s8r, ybr), ai + smul(s7i, yar) + smul(s8i, ybr)
    s6r, s6i = smul(s10i, yai) + smul(s9i, ybi), -smul(s10r, yai) - smul(s9r, ybi)
    s11r, s11i = ar + smul(s7r, ybr) + smul(s8r, yar), ai + smul(s7i, ybr) + smul(s8i, yar)
    s12r, s12i = -smul(s10i, ybi) + smul(s9i, yai), smul(s10r, ybi) - smul(s9r, yai)
    return [(ar + s7r + s8r, ai + s7i + s8i), (s5r - s6r, s5i - s6i), (s11r + s12r, s11i + s12i),
            (s11r - s12r, s11i - s12i), (s5r + s6r, s5i + s6i)]


def _complex_fft(re: np.ndarray, im: np.ndarray, fft_length: int) -> tuple[np.ndarray, np.ndarray]:
    """kiss_fft (forward) of [rows, ncfft] int32 pairs already in leaf order, stage by stage."""
    tw, _, fac = _tables(fft_length)
    twr, twi = tw[:, 0].astype(np.int32), tw[:, 1].astype(np.int32)
    rows, ncfft = re.shape
    for p, m in reversed(fac.tolist()):
        fstride = ncfft // (p * m)
        shape = (rows, fstride, p, m)
        r4, i4 = re.reshape(shape), im.reshape(shape)
        u = np.arange(m) * fstride
        r2 = 2 * fstride * m % ncfft        # only radix 5 reads it, where it is < ncfft
        roots = (twr[fstride * m], twi[fstride * m], twr[r2], twi[r2])
        out = _butterfly([(r4[:, :, j], i4[:, :, j]) for j in range(p)],
                         [(twr[j * u], twi[j * u]) for j in range(p)], p, np.array(roots))
        re = _w16(np.stack([o[0] for o in out], axis=2)).reshape(rows, ncfft)
        im = _w16(np.stack([o[1] for o in out], axis=2)).reshape(rows, ncfft)
    return re, im


def rfft_int16(x: np.ndarray, fft_length: int) -> np.ndarray:
    """TFLM's SignalRfft with T=int16: int16 [..., N] (N <= fft_length, zero-padded to
    fft_length) -> int16 [..., 2*(fft_length/2 + 1)] interleaved (re, im), the DFT / fft_length
    as kissfft rounds it; each leading row independently."""
    x = np.asarray(x, dtype=np.int16)
    lead, n_in = x.shape[:-1], x.shape[-1]
    if n_in > fft_length:
        raise ValueError(f"SignalRfft: input length {n_in} > fft_length {fft_length}")
    check_fft_length(fft_length)
    ncfft = fft_length // 2
    rows = x.reshape(-1, n_in).astype(np.int32)
    padded = np.zeros((rows.shape[0], fft_length), np.int32)
    padded[:, :n_in] = rows
    order = _leaf_order(fft_length)
    re, im = _complex_fft(padded[:, 0::2][:, order], padded[:, 1::2][:, order], fft_length)

    _, sup, _ = _tables(fft_length)
    out = np.zeros((re.shape[0], ncfft + 1, 2), np.int32)
    dr, di = _fixdiv(re[:, 0], 2), _fixdiv(im[:, 0], 2)
    out[:, 0, 0], out[:, ncfft, 0] = _w16(dr + di), _w16(dr - di)
    k = np.arange(1, ncfft // 2 + 1)
    pkr, pki = _fixdiv(re[:, k], 2), _fixdiv(im[:, k], 2)
    nkr, nki = _fixdiv(re[:, ncfft - k], 2), _fixdiv(_w16(-im[:, ncfft - k]), 2)
    f1r, f1i, f2r, f2i = _w16(pkr + nkr), _w16(pki + nki), _w16(pkr - nkr), _w16(pki - nki)
    twr, twi = _cmul(f2r, f2i, sup[k - 1, 0].astype(np.int32), sup[k - 1, 1].astype(np.int32))
    out[:, k, 0], out[:, k, 1] = (f1r + twr) >> 1, (f1i + twi) >> 1          # HALF_OF of the int sums
    out[:, ncfft - k, 0], out[:, ncfft - k, 1] = (f1r - twr) >> 1, (twi - f1i) >> 1   # wins at k = ncfft/2
    return out.astype(np.int16).reshape(*lead, 2 * (ncfft + 1))


def energy(x: np.ndarray, start_index: int, end_index: int) -> np.ndarray:
    """TFLM's SignalEnergy: int16 [2K] (re, im pairs) -> uint32 [K], re^2 + im^2 (mod 2^32, as
    TFLM's int32 sum converts) for k in [start_index, end_index). TFLM leaves the other outputs
    unwritten (whatever the arena held); here, and in mc_energy_s16, they are 0. (TFLM takes
    1-D only; leading dimensions here are rows, each with the same bins.)"""
    x = np.asarray(x, dtype=np.int16)
    k = x.shape[-1] // 2
    if x.shape[-1] % 2 or not 0 <= start_index <= end_index <= k:
        raise ValueError(f"SignalEnergy: bins [{start_index}, {end_index}) outside a spectrum of {x.shape[-1]} values")
    part = x[..., 2 * start_index:2 * end_index].astype(np.int64)
    out = np.zeros(x.shape[:-1] + (k,), np.uint32)
    out[..., start_index:end_index] = (part[..., 0::2] ** 2 + part[..., 1::2] ** 2).astype(np.uint32)
    return out
