"""The depthwise micro-kernels of runtime_c/include/mc_depthwise.h: declarations, Python
semantics, and the packed weight layout they read (int16, groups of four channels in the
order c, c+2, c+1, c+3 per tap: ORDER). The tensor intrinsic that reaches them and the
packing primitive are in schedule/depthwise_intrin.py.
"""

from __future__ import annotations

import numpy as np

from ..ir.fixedpoint import multiply_by_quantized_multiplier
from .intrinsics import StructType, intrinsic, requantized, window_taps

DEPTHWISE_PARAMS = StructType("mc_depthwise_params_t", ("channels", "kh", "kw", "x_row", "x_col", "w_row", "w_group",
                                                         "out_offset", "act_min", "act_max"))

DEPTHWISE_VARIANTS = ("c", "dsp", "mve")
# Windows with a variant of their own (the sub-windows of a 3x3 filter at padding 1).
FIXED_WINDOWS = {"dsp": ((3, 3), (2, 3), (3, 2), (2, 2)), "c": (), "mve": ((3, 3), (2, 3), (3, 2), (2, 2))}
FIXED_W_ROW = 12              # int16 elements from one filter row to the next: 3 taps * 4 lanes
ORDER = (0, 2, 1, 3)          # packed position of channel c % 4 (mc_depthwise.h); its own inverse


def kernel_name(variant: str, kh: int, kw: int, w_row: int = FIXED_W_ROW) -> str:
    """The variant for a kh x kw window; the fixed-window ones also fix the filter's width."""
    fixed = f"{kh}x{kw}_" if (kh, kw) in FIXED_WINDOWS[variant] and w_row == FIXED_W_ROW else ""
    return f"mc_depthwise_{fixed}{variant}_s8"


def _depthwise(y, x, w, bias, mult, rshift, p: dict):
    """Python semantics of every variant (they differ only in speed); bias, mult and rshift
    are int64 arrays over the channels."""
    channels, kh, kw, x_row, x_col, w_row, w_group, out_offset, lo, hi = (p[f] for f in DEPTHWISE_PARAMS.fields)
    (ya, yo), (xa, xo), (wa, wo) = y, x, w
    c = np.arange(channels)
    acc = bias.copy()
    wc = wo + (c // 4) * w_group + np.array(ORDER)[c % 4]
    for i in range(kh):
        for j in range(kw):
            acc += xa[xo + i * x_row + j * x_col + c].astype(np.int64) * wa[wc + i * w_row + j * 4]
    assert np.all(np.abs(acc) < 2**30) and np.all(rshift >= 1), "outside mc_mul_by_qm_pos_rshift's domain"
    v = multiply_by_quantized_multiplier(acc, mult, -rshift)
    ya[yo + c] = np.clip(np.asarray(v, np.int64) + out_offset, lo, hi).astype(np.int8)


def _impl(y, x, w, bias, mult, rshift, p: dict):
    c = np.arange(p["channels"])
    (ba, bo), (ma, mo), (sa, so) = bias, mult, rshift
    _depthwise(y, x, w, ba[bo + c].astype(np.int64), ma[mo + c].astype(np.int64), sa[so + c].astype(np.int64), p)


for _v in DEPTHWISE_VARIANTS:
    for _name in sorted({kernel_name(_v, 0, 0), *(kernel_name(_v, *k) for k in FIXED_WINDOWS[_v])}):
        intrinsic(_name, ("handle",) * 6 + (DEPTHWISE_PARAMS,), "void", "mc_depthwise.h", extern=True,
                  writes=(0,))(_impl)


# ---------------------------------------------------------------- requantization records
# The DSP fixed-window kernels read each group of four channels' output arithmetic as one
# record of RQ_RECORD int32 (three LDM): bias[4], mult[4] and rshift[4] - 1 (the shift their
# rounding takes, mc_requant_dsp.h). A partial last group is zero-padded.
RQ_RECORD = 12
RQ_WINDOWS = FIXED_WINDOWS["dsp"]


def rq_kernel_name(kh: int, kw: int) -> str:
    return f"mc_depthwise_{kh}x{kw}_dsp_rq_s8"


def requant_records(bias: np.ndarray, mult: np.ndarray, rshift: np.ndarray) -> np.ndarray:
    """[C] bias, mult, rshift -> the flat int32 records (groups of four channels)."""
    c = len(bias)
    groups = -(-c // 4)
    rec = np.zeros((groups, 3, 4), np.int64)
    for k, (arr, delta) in enumerate(((bias, 0), (mult, 0), (rshift, -1))):
        flat = np.zeros(groups * 4, np.int64)
        flat[:c] = np.asarray(arr[:c], np.int64) + delta
        rec[:, k, :] = flat.reshape(groups, 4)
    return rec.reshape(-1).astype(np.int32)


def _impl_rq(y, x, w, rq, p: dict):
    c = np.arange(p["channels"])
    ra, ro = rq
    at = ro + (c // 4) * RQ_RECORD + c % 4
    _depthwise(y, x, w, ra[at].astype(np.int64), ra[at + 4].astype(np.int64), ra[at + 8].astype(np.int64) + 1, p)


for _kh, _kw in RQ_WINDOWS:
    intrinsic(rq_kernel_name(_kh, _kw), ("handle",) * 4 + (DEPTHWISE_PARAMS,), "void", "mc_depthwise.h",
              extern=True, writes=(0,))(_impl_rq)


# ---------------------------------------------------------------- whole-layer 3x3 kernel (rows)
# mc_depthwise_3x3_rows_dsp_s8 computes a whole int8 3x3 depthwise layer (depth multiplier 1,
# stride 1 or 2, any padding) one output row at a time: each padded input row is turned once
# into int16 pairs of adjacent columns per channel (a ring of three rows in scratch), so every
# SMLAD does two taps of one channel; see runtime_c/kernels/dsp/mc_depthwise_rows_dsp.c.
# Its constant is one record of ROWS_RECORD int32 per channel: 2*bias, the filter rows as pairs
# (2*w[i][0], 2*w[i][1]) and (2*w[i][1], 2*w[i][2]) for i = 0..2 (doubled: the sums come out as
# 2*acc, the operand SMMLAR needs), mult, K = 2^(e-1) + out_offset*2^e and e = rshift.
DEPTHWISE_ROWS_PARAMS = StructType("mc_depthwise_rows_params_t",
                                   ("batch", "channels", "in_h", "in_w", "out_h", "out_w", "stride_h", "stride_w",
                                    "pad_top", "pad_left", "pairs", "zp_in", "act_min", "act_max", "block"))
ROWS_RECORD = 10
ROWS_KERNEL = "mc_depthwise_3x3_rows_dsp_s8"


def rows_pairs(out_w: int, stride_w: int) -> int:
    """Column pairs per padded input row the kernel reads: up to padded column (out_w-1)*s + 2."""
    return ((out_w - 1) * stride_w + 2) // 2 + 1


def rows_scratch_words(block: int, pairs: int) -> int:
    """int32 words of the kernel's scratch: the ring of three pair rows of one block of channels,
    then `block` bytes of zp_in (what a padding column reads)."""
    return 3 * block * pairs + (block + 3) // 4


def _pair(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return ((lo.astype(np.int64) & 0xFFFF) | (hi.astype(np.int64) << 16)).astype(np.uint32).view(np.int32)


def rows_records(w: np.ndarray, bias: np.ndarray, mult: np.ndarray, rshift: np.ndarray,
                 out_offset: int) -> np.ndarray | None:
    """w: int [3, 3, C]; bias (the full fold, bias - zp_in*sum(w)), mult, rshift: [C] ->
    the flat int32 records. None when K or the doubled sums leave int32 (a shift above about
    21 or a bias beyond 2^30): the kernel's arithmetic needs both."""
    w2, e = 2 * np.asarray(w, np.int64), np.asarray(rshift, np.int64)
    k = (np.int64(1) << (e - 1)) + out_offset * (np.int64(1) << e)
    if np.any(np.abs(k) >= 2**30 - 1) or np.any(np.abs(bias) >= 2**30) or np.any(e < 1) or np.any(mult < 0):
        return None
    rec = np.zeros((w.shape[2], ROWS_RECORD), np.int32)
    for i in range(3):
        rec[:, 1 + 2 * i] = _pair(w2[i, 0], w2[i, 1])
        rec[:, 2 + 2 * i] = _pair(w2[i, 1], w2[i, 2])
    rec[:, 0] = 2 * np.asarray(bias, np.int64)
    rec[:, 7], rec[:, 8], rec[:, 9] = mult, k, e
    return rec.reshape(-1)


def _unpair(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    u = np.asarray(v, np.int32).view(np.uint32).astype(np.int64)
    lo, hi = u & 0xFFFF, u >> 16
    return np.where(lo >= 0x8000, lo - 0x10000, lo), np.where(hi >= 0x8000, hi - 0x10000, hi)


@intrinsic(ROWS_KERNEL, ("handle",) * 4 + (DEPTHWISE_ROWS_PARAMS,), "void", "mc_depthwise.h", extern=True,
           writes=(0, 3))
def _impl_rows(y, x, rec, scratch, p: dict):
    """Python semantics: TFLite's DepthwiseConvPerChannel (padding reads zp_in, which the full
    bias fold cancels) from the records; the scratch is the kernel's own business."""
    (ya, yo), (xa, xo), (ra, ro) = y, x, rec
    n, c, ih, iw, oh, ow = (p[f] for f in ("batch", "channels", "in_h", "in_w", "out_h", "out_w"))
    r = np.asarray(ra[ro:ro + c * ROWS_RECORD]).reshape(c, ROWS_RECORD)
    w = np.zeros((3, 3, c), np.int64)
    for i in range(3):
        w[i, 0], w[i, 1] = _unpair(r[:, 1 + 2 * i])
        w[i, 2] = _unpair(r[:, 2 + 2 * i])[1]
    w //= 2
    bias, mult, k, e = r[:, 0].astype(np.int64) // 2, r[:, 7].astype(np.int64), r[:, 8].astype(np.int64), \
        r[:, 9].astype(np.int64)
    off = (k - (np.int64(1) << (e - 1))) >> e
    xs = np.asarray(xa[xo:xo + n * ih * iw * c], np.int64).reshape(n, ih, iw, c)
    acc = np.broadcast_to(bias, (n, oh, ow, c)).copy()
    for i, j, taps in window_taps(xs, p, 3, 3):
        acc += taps * w[i, j]
    assert np.all(np.abs(acc) < 2**30), "outside mc_mul_by_qm_pos_rshift's domain"
    v = np.asarray(multiply_by_quantized_multiplier(acc, mult, -e), np.int64) + off
    ya[yo:yo + acc.size] = np.clip(v, p["act_min"], p["act_max"]).astype(np.int8).reshape(-1)


# mc_depthwise_layer_mve_s8 (Helium): a whole int8 3x3 depthwise layer of depth multiplier 1 on
# the folded bias and int8 weights in groups of four channels (mc_depthwise.h;
# schedule/depthwise_intrin.py).
LAYER_MVE_KERNEL = "mc_depthwise_layer_mve_s8"
DEPTHWISE_LAYER_PARAMS = StructType("mc_depthwise_layer_params_t",
                                    ("batch", "channels", "in_h", "in_w", "out_h", "out_w", "kh", "kw", "stride_h",
                                     "stride_w", "dil_h", "dil_w", "pad_top", "pad_left", "padded_w", "zp_in",
                                     "out_offset", "act_min", "act_max", "block"))


def pack_layer_mve(w: np.ndarray) -> np.ndarray:
    """[1, kh, kw, c] int8 -> the kernel's groups of four channels: [g][t][u][4], zero-padded."""
    _, kh, kw, c = w.shape
    g = (c + 3) // 4
    pad = np.zeros((kh, kw, g * 4), w.dtype)
    pad[:, :, :c] = w.reshape(kh, kw, c)
    return pad.reshape(kh, kw, g, 4).transpose(2, 0, 1, 3).reshape(-1)


def unpack_layer_mve(flat: np.ndarray, kh: int, kw: int, c: int) -> np.ndarray:
    g = (c + 3) // 4
    return flat[:g * kh * kw * 4].reshape(g, kh, kw, 4).transpose(1, 2, 0, 3).reshape(kh, kw, g * 4)[:, :, :c]


def layer_mve_records(bias: np.ndarray, mult: np.ndarray, rshift: np.ndarray) -> np.ndarray:
    """Per group of four channels: bias[4], mult[4], -rshift[4] (int32; zeros past the channels)."""
    c = len(bias)
    g = (c + 3) // 4
    rec = np.zeros((g, 3, 4), np.int32)
    for k, v in enumerate((bias, mult, -np.asarray(rshift, np.int64))):
        pad = np.zeros(g * 4, np.int64)
        pad[:c] = v
        rec[:, k, :] = pad.reshape(g, 4)
    return rec.reshape(-1)


@intrinsic(LAYER_MVE_KERNEL, ("handle",) * 5 + (DEPTHWISE_LAYER_PARAMS,), "void", "mc_depthwise.h", extern=True,
           writes=(0, 4))
def _impl_layer_mve(y, x, w, rq, rows, p: dict):
    """Python semantics: TFLite's DepthwiseConvPerChannel, a padded tap reading zp_in (the full
    bias fold cancels it); `rows` is the kernel's own scratch."""
    (ya, yo), (xa, xo), (wa, wo), (ra, ro) = y, x, w, rq
    n, c, ih, iw, oh, ow = (p[f] for f in ("batch", "channels", "in_h", "in_w", "out_h", "out_w"))
    kh, kw = p["kh"], p["kw"]
    filt = unpack_layer_mve(np.asarray(wa[wo:]), kh, kw, c).astype(np.int64)
    g = (c + 3) // 4
    rec = np.asarray(ra[ro:ro + g * 12], np.int64).reshape(g, 3, 4).transpose(1, 0, 2).reshape(3, g * 4)[:, :c]
    bias, m, r = rec[0], rec[1], -rec[2]
    xs = np.asarray(xa[xo:xo + n * ih * iw * c], np.int64).reshape(n, ih, iw, c)
    acc = np.broadcast_to(bias, (n, oh, ow, c)).copy()
    for t, u, taps in window_taps(xs, p, kh, kw):
        acc += taps * filt[t, u]
    ya[yo:yo + acc.size] = requantized(acc, m, r, p).reshape(-1)
