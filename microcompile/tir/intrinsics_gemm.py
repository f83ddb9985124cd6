"""The GEMM micro-kernels of runtime_c/include/mc_gemm.h: their declarations, their Python
semantics, and the panel layout the packed variants read.

    mc_gemm_nt_<variant>_<dtype>(c, a, b, &{m, n, k, lda, ldb, ldc}):
        for j < n, i < m:  c[j*ldc + i] += sum_{p < k} a[i*lda + p] * b[j*ldb + p]

variant "c" (portable) or "dsp" (SMLAD/SXTB16), dtype s8 (both operands int8) or s16 (both
int16); variant "mve" (Helium, VMLADAV) takes s8 only. mc_gemm_p4_dsp_<dtype> compute the same
on an A packed in panels of four rows (`pack_panels4`).

The requantizing variants keep the accumulator in registers and write int8 (no int32 tile):

    mc_gemm_rq_c_<dtype>(y, a, b, bias, mult, rshift, &{m, n, k, lda, ldb, ldy, out_offset, act_min, act_max})
    mc_gemm_rq_mve_s8(y, a, b, bias, mult, rshift, &{... the same})          (Helium: int8 only)
    mc_gemm_p4_rq_mve_s8(y, a_packed, b, ...)  the same on panels of 4 rows in groups of 16 k
    mc_gemm_p4_rq_dsp_<dtype>(y, a_packed, b, bias, mult, rshift, &{... the same; lda ignored})
    mc_gemm_p4_rq_dsp_s16_cols(...)      the s16 one in another loop order (RQ_LOOP_ORDERS)
    mc_gemm_p4x2_rq_dsp_s16(...)         the s16 one on a pair-interleaved B (RQ_TILES)
        for j < n, i < m:
            acc = bias[i] + sum_{p < k} a[i*lda + p] * b[j*ldb + p]
            y[j*ldy + i] = clamp(MultiplyByQuantizedMultiplier(acc, mult[i], -rshift[i]) + out_offset,
                                 act_min, act_max)

(the int16 DSP ones, RQ_RECORD_KERNELS, take bias, mult and rshift as one records array made at
compile time: mc_gemm_p4_rq_dsp_s16(y, a_packed, b, rq, &{...}), rq_records)
in mc_requant.h's mc_mul_by_qm_pos_rshift domain (mult >= 0, rshift >= 1, |acc| < 2^30,
which the lowering proves from the weights). The tensor intrinsics that reach them are in
schedule/gemm_intrin.py.
"""

from __future__ import annotations

import numpy as np

from ..ir import budget
from ..ir import fixedpoint as fp
from .intrinsics import StructType, intrinsic, requantized, window_taps

GEMM_PARAMS = StructType("mc_gemm_params_t", ("m", "n", "k", "lda", "ldb", "ldc"))

GEMM_DTYPES = {"s8": "int8", "s16": "int16"}
GEMM_VARIANTS = ("c", "dsp", "mve")
# (variant, dtype) pairs that exist in runtime_c: Helium reads int8 as it is, so no mve_s16.
GEMM_KERNELS = tuple((v, d) for v in GEMM_VARIANTS for d in GEMM_DTYPES if (v, d) != ("mve", "s16"))


def gemm_kernel_name(variant: str, dtype: str) -> str:
    return f"mc_gemm_nt_{variant}_{dtype}"


def _gemm_impl(c_ptr, a_ptr, b_ptr, p: dict):
    """Python semantics of every variant (they differ only in speed); `p` as mc_gemm_params_t."""
    m, n, k, lda, ldb, ldc = (p[f] for f in GEMM_PARAMS.fields)
    (ca, co), (aa, ao), (ba, bo) = c_ptr, a_ptr, b_ptr
    ai = ao + np.arange(m)[:, None] * lda + np.arange(k)[None, :]
    bi = bo + np.arange(n)[:, None] * ldb + np.arange(k)[None, :]
    prod = ba[bi].astype(np.int64) @ aa[ai].astype(np.int64).T          # [n, m]
    ci = co + np.arange(n)[:, None] * ldc + np.arange(m)[None, :]
    ca[ci] = ((ca[ci].astype(np.int64) + prod + 2**31) % 2**32 - 2**31).astype(np.int32)


def _gemm_call(c_ptr, a_ptr, b_ptr, p: dict):
    _gemm_impl(c_ptr, a_ptr, b_ptr, p)


_GEMM_ARGS = ("handle", "handle", "handle", GEMM_PARAMS)
for _v, _d in GEMM_KERNELS:
    intrinsic(gemm_kernel_name(_v, _d), _GEMM_ARGS, "void", "mc_gemm.h", extern=True, writes=(0,))(_gemm_call)


PANEL_ROWS = 4
# kernel -> (operand dtype, k elements per row group in the packed layout)
P4_KERNELS = {"mc_gemm_p4_dsp_s16": ("int16", 2), "mc_gemm_p4_dsp_s8": ("int8", 4)}


def _rup(v: int, q: int) -> int:
    return -(-v // q) * q


def pack_panels4(a: np.ndarray, group: int = 2, what: str = "a weight") -> np.ndarray:
    """[m, k] -> the flat panel layout of mc_gemm_p4_dsp_* (mc_gemm.h): panels of four rows,
    inside a panel groups of `group` k of each row in turn; zeros pad m to a multiple of 4
    and k to a multiple of `group`. The padded copy (4x a one-row weight) is checked against
    the budget first; `what` names the weight in that message."""
    m, k = a.shape
    mp, kp = _rup(m, PANEL_ROWS), _rup(k, group)
    budget.check_tensor(f"{what}, packed in panels of {PANEL_ROWS} rows", (mp, kp), a.itemsize)
    pad = np.zeros((mp, kp), a.dtype)
    pad[:m, :k] = a
    # [panel, row, group, g] -> [panel, group, row, g]
    return pad.reshape(mp // PANEL_ROWS, PANEL_ROWS, kp // group, group).transpose(0, 2, 1, 3).reshape(-1)


def unpack_panels4(flat: np.ndarray, m: int, k: int, group: int = 2) -> np.ndarray:
    mp, kp = _rup(m, PANEL_ROWS), _rup(k, group)
    return flat[:mp * kp].reshape(mp // PANEL_ROWS, kp // group, PANEL_ROWS, group) \
        .transpose(0, 2, 1, 3).reshape(mp, kp)[:m, :k]


def _gemm_p4_impl(group: int):
    def impl(c_ptr, a_ptr, b_ptr, p: dict):
        m, k = p["m"], p["k"]
        (aa, ao) = a_ptr
        a = np.ascontiguousarray(unpack_panels4(aa[ao:], m, k, group)).reshape(-1)
        _gemm_impl(c_ptr, (a, 0), b_ptr, dict(p, lda=k))      # unpacked: rows of k
    return impl


for _name, (_dt, _group) in P4_KERNELS.items():
    intrinsic(_name, _GEMM_ARGS, "void", "mc_gemm.h", extern=True, writes=(0,))(_gemm_p4_impl(_group))


# mc_gemm_p4_dsp_s4 reads mc_gemm_p4_dsp_s8's panels as packed int4 (weights left in flash,
# schedule primitive store_int4 in place): each group of four k of a panel, 16 values
# (row-major: r0 k0..k3, r1 ..., r3 ...), is stored in this order, two values per byte, low
# nibble first, each with its sign bit flipped (the kernel reads w + 8 as an unsigned nibble;
# runtime_c/kernels/dsp/mc_gemm_s4_dsp.c says why).
S4_KERNEL = "mc_gemm_p4_dsp_s4"
S4_FROM = "mc_gemm_p4_dsp_s8"
S4_GROUP_ORDER = np.array([0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15])


def _flip_sign_bit(v: np.ndarray) -> np.ndarray:
    """The int4 value whose bits are v's with the sign bit flipped (its own inverse)."""
    return np.where(v >= 0, v - 8, v + 8).astype(np.int8)


def s4_panel_order(panels: np.ndarray) -> np.ndarray:
    """mc_gemm_p4_dsp_s8's panel values (a multiple of 16) as mc_gemm_p4_dsp_s4 stores them."""
    return _flip_sign_bit(panels.reshape(-1, 16)[:, S4_GROUP_ORDER].reshape(-1))


def _s4_panels(a_ptr) -> tuple:
    """The int8 panels (as a pointer) that s4-ordered panel values stand for."""
    (aa, ao) = a_ptr
    groups = aa[ao:ao + (aa.size - ao) // 16 * 16].reshape(-1, 16)
    panels = np.empty_like(groups)
    panels[:, S4_GROUP_ORDER] = _flip_sign_bit(groups)
    return panels.reshape(-1), 0


def _gemm_p4_s4_impl(c_ptr, a_ptr, b_ptr, p: dict):
    _gemm_p4_impl(4)(c_ptr, _s4_panels(a_ptr), b_ptr, p)


intrinsic(S4_KERNEL, _GEMM_ARGS, "void", "mc_gemm_s4.h", extern=True, writes=(0,))(_gemm_p4_s4_impl)


GEMM_RQ_PARAMS = StructType("mc_gemm_rq_params_t", ("m", "n", "k", "lda", "ldb", "ldy", "out_offset", "act_min",
                                                     "act_max"))
# kernel -> (operand dtype, k group of the packed A; 0: A row-major with lda)
RQ_KERNELS = {"mc_gemm_rq_c_s8": ("int8", 0), "mc_gemm_rq_c_s16": ("int16", 0),
              "mc_gemm_p4_rq_dsp_s16": ("int16", 2), "mc_gemm_p4_rq_dsp_s16_cols": ("int16", 2),
              "mc_gemm_p4_rq_dsp_s8": ("int8", 4), "mc_gemm_rq_mve_s8": ("int8", 0),
              "mc_gemm_p4_rq_mve_s8": ("int8", 16)}
# The kernels that read their output stage as one records array made at compile time
# (mc_gemm.h, MC_GEMM_RQREC_ARGS; rq_records): (y, a, b, rq, params), not (y, a, b, bias, mult,
# rshift, params). Building the records per call cost kws 90,700 instructions on the Cortex-M4.
RQ_RECORD_KERNELS = ("mc_gemm_p4_rq_dsp_s16", "mc_gemm_p4_rq_dsp_s16_cols", "mc_gemm_p4x2_rq_dsp_s16")


def rq_records(bias, mult, rshift) -> np.ndarray:
    """The records of RQ_RECORD_KERNELS: per panel of four rows bias[4], mult[4], rshift[4] - 1
    (12 int32; zeros for the rows past the last)."""
    m = len(bias)
    rows = -(-m // PANEL_ROWS) * PANEL_ROWS
    fields = np.zeros((3, rows), np.int64)
    fields[0, :m], fields[1, :m], fields[2, :m] = bias, mult, np.asarray(rshift, np.int64) - 1
    return fields.reshape(3, rows // PANEL_ROWS, PANEL_ROWS).transpose(1, 0, 2).reshape(-1).astype(np.int32)


def records_fields(rq_ptr, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(bias, mult, rshift) of m rows from a records pointer (flat array, offset)."""
    ra, ro = rq_ptr
    rows = -(-m // PANEL_ROWS) * PANEL_ROWS
    rec = np.asarray(ra[ro:ro + 3 * rows], np.int64).reshape(rows // PANEL_ROWS, 3, PANEL_ROWS)
    return rec[:, 0].reshape(-1)[:m], rec[:, 1].reshape(-1)[:m], rec[:, 2].reshape(-1)[:m] + 1
# The loop orders of the requantizing s16 DSP kernel (schedule knob gemm_loop_order), same
# result: "panels" runs chunks of RQ_CHUNK panels outermost and the columns inside (records
# and a chunk's weights stay near), "columns" the columns outermost with every panel of a column
# in one assembly call (at most RQ_COLS_PANELS panels a call).
RQ_LOOP_ORDERS = {"panels": "mc_gemm_p4_rq_dsp_s16", "columns": "mc_gemm_p4_rq_dsp_s16_cols"}
RQ_CHUNK, RQ_COLS_PANELS = 8, 16


def rq_kernel_name(variant: str, dtype: str) -> str:
    if variant == "dsp":
        return f"mc_gemm_p4_rq_dsp_{dtype}"
    return f"mc_gemm_p4_rq_mve_{dtype}" if variant == "mve" else f"mc_gemm_rq_c_{dtype}"


def pair_interleaved_index(j, p, n: int, ldb: int):
    """Where column j's element p of a block of n columns is in the pair-interleaved layout of
    the 4x2 kernels (mc_gemm.h): columns 2q and 2q+1 alternate by pairs of k, so one LDM fetches
    both columns' pair; an odd last column stays row-major after the pairs."""
    j, p = np.asarray(j), np.asarray(p)
    paired = (j // 2) * 2 * ldb + (p // 2) * 4 + (j % 2) * 2 + p % 2
    return np.where(j < n - n % 2, paired, j * ldb + p)


def _gemm_rq_impl(group: int, interleaved: bool = False):
    def impl(y_ptr, a_ptr, b_ptr, bias_ptr, mult_ptr, rshift_ptr, p: dict):
        m, n, k, lda, ldb, ldy = (p[f] for f in ("m", "n", "k", "lda", "ldb", "ldy"))
        (ya, yo), (aa, ao), (ba, bo) = y_ptr, a_ptr, b_ptr
        a = (unpack_panels4(aa[ao:], m, k, group) if group else
             aa[ao + np.arange(m)[:, None] * lda + np.arange(k)[None, :]]).astype(np.int64)
        jj, pp = np.arange(n)[:, None], np.arange(k)[None, :]
        b = ba[bo + (pair_interleaved_index(jj, pp, n, ldb) if interleaved else jj * ldb + pp)].astype(np.int64)
        i = np.arange(m)
        acc = b @ a.T + bias_ptr[0][bias_ptr[1] + i].astype(np.int64)              # [n, m]
        yi = yo + np.arange(n)[:, None] * ldy + i[None, :]
        ya[yi] = requantized(acc, mult_ptr[0][mult_ptr[1] + i], rshift_ptr[0][rshift_ptr[1] + i], p)
    return impl


def _gemm_rq_records_impl(group: int, interleaved: bool = False):
    inner = _gemm_rq_impl(group, interleaved)

    def impl(y_ptr, a_ptr, b_ptr, rq_ptr, p: dict):
        bias, mult, rshift = records_fields(rq_ptr, p["m"])
        inner(y_ptr, a_ptr, b_ptr, (bias, 0), (mult, 0), (rshift, 0), p)
    return impl


for _name, (_dt, _group) in RQ_KERNELS.items():
    if _name in RQ_RECORD_KERNELS:
        intrinsic(_name, ("handle",) * 4 + (GEMM_RQ_PARAMS,), "void", "mc_gemm.h", extern=True,
                  writes=(0,))(_gemm_rq_records_impl(_group))
    else:
        intrinsic(_name, ("handle",) * 6 + (GEMM_RQ_PARAMS,), "void", "mc_gemm.h", extern=True,
                  writes=(0,))(_gemm_rq_impl(_group))

# The requantizing int16 DSP kernel with the single rounding, ties away from zero, of LiteRT's
# int8 fully connected layers (mc_gemm.h): records of 16 words per panel, bias[4], mult[4], then
# per row H' = 2^(t-33) + out_offset * 2^(t-32) and sh = t - 32 (t = 31 - shift, t >= 33).
RQ_AWAY_KERNEL = "mc_gemm_p4_rq_away_dsp_s16"


def _rounding_terms(shift, off: int) -> tuple[np.ndarray, np.ndarray]:
    """(H', sh) per row: H' = 2^(t-33) + off * 2^(t-32) and sh = t - 32 for t = 31 - shift
    (t clipped to 33 .. 62, the kernel's range, so that the shifts stay defined)."""
    t = np.clip(31 - np.asarray(shift, np.int64), 33, 62)
    return (1 << (t - 33)) + off * (1 << (t - 32)), t - 32


def rq_away_refusal(mult, shift, off: int) -> str | None:
    """Why RQ_AWAY_KERNEL's records cannot hold these multipliers and shifts (None: they can)."""
    mult, t = np.asarray(mult, np.int64), 31 - np.asarray(shift, np.int64)
    if np.any(mult < 0) or np.any(mult >= 2**31):
        return "a multiplier outside 0 .. 2^31 - 1"
    if np.any(t < 33):
        return f"a shift of {int(31 - t.min())} (the kernel keeps the high word: 31 - shift >= 33)"
    # |x * M| < 2^62 and |H' * 2^32| < 2^62: their sum cannot wrap the 64-bit SMLAL
    if np.any(t > 62) or np.any(np.abs(_rounding_terms(shift, off)[0]) >= 2**30):
        return "a shift so small that the rounding term and the offset could overflow the 64-bit sum"
    return None


def rq_away_records(bias, mult, shift, off: int) -> np.ndarray:
    """RQ_AWAY_KERNEL's records (rq_away_refusal must hold): zeros for the rows past the last."""
    m = len(bias)
    rows = -(-m // PANEL_ROWS) * PANEL_ROWS
    fields = np.zeros((4, rows), np.int64)
    fields[0, :m], fields[1, :m] = bias, mult
    fields[2, :m], fields[3, :m] = _rounding_terms(np.broadcast_to(shift, (m,)), off)
    panels = fields.reshape(4, rows // PANEL_ROWS, PANEL_ROWS)
    pairs = panels[2:].transpose(1, 2, 0).reshape(rows // PANEL_ROWS, 2 * PANEL_ROWS)       # (H', sh) per row
    return np.concatenate([panels[0], panels[1], pairs], axis=1).reshape(-1).astype(np.int32)


def _gemm_rq_away_impl(y_ptr, a_ptr, b_ptr, rq_ptr, p: dict):
    """The reference arithmetic (fp.multiply_by_quantized_multiplier_single_round_away) on the
    records' multipliers and shifts: the kernel's algebra is checked against it on the device."""
    m, n, k, ldb, ldy = (p[f] for f in ("m", "n", "k", "ldb", "ldy"))
    (ya, yo), (aa, ao), (ba, bo), (ra, ro) = y_ptr, a_ptr, b_ptr, rq_ptr
    rows = -(-m // PANEL_ROWS) * PANEL_ROWS
    rec = np.asarray(ra[ro:ro + 4 * rows], np.int64).reshape(rows // PANEL_ROWS, 16)
    bias, mult = rec[:, 0:4].reshape(-1)[:m], rec[:, 4:8].reshape(-1)[:m]
    shift = 31 - (rec[:, 9:16:2].reshape(-1)[:m] + 32)
    a = unpack_panels4(aa[ao:], m, k, 2).astype(np.int64)
    b = ba[bo + np.arange(n)[:, None] * ldb + np.arange(k)[None, :]].astype(np.int64)
    acc = b @ a.T + bias                                                         # [n, m]
    v = np.asarray(fp.multiply_by_quantized_multiplier_single_round_away(acc, mult, shift), np.int64)
    v = np.clip(np.clip(v + p["out_offset"], -128, 127), p["act_min"], p["act_max"])
    ya[yo + np.arange(n)[:, None] * ldy + np.arange(m)[None, :]] = v.astype(np.int8)


intrinsic(RQ_AWAY_KERNEL, ("handle",) * 4 + (GEMM_RQ_PARAMS,), "void", "mc_gemm.h", extern=True,
          writes=(0,))(_gemm_rq_away_impl)

# The requantizing twin of mc_gemm_p4_dsp_s4: a convolution's int4 weights read in place.
S4_RQ_KERNEL, S4_RQ_FROM = "mc_gemm_p4_rq_dsp_s4", "mc_gemm_p4_rq_dsp_s8"
S4_KERNELS = {S4_FROM: S4_KERNEL, S4_RQ_FROM: S4_RQ_KERNEL}     # the int8 kernel -> its int4 twin


def _gemm_rq_s4_impl(y_ptr, a_ptr, *rest):
    _gemm_rq_impl(4)(y_ptr, _s4_panels(a_ptr), *rest)


intrinsic(S4_RQ_KERNEL, ("handle",) * 6 + (GEMM_RQ_PARAMS,), "void", "mc_gemm_s4.h", extern=True,
          writes=(0,))(_gemm_rq_s4_impl)

# The register tiles of the requantizing s16 DSP kernel (schedule knob gemm_tile): 4x1 (four
# weight rows times one column, the default) reads B row-major; 4x2 (two columns share each
# weight LDM) reads it pair-interleaved (`pair_interleaved_index`), which the schedule's
# interleave_columns primitive makes the im2col copy write, widening runs with
# mc_widen_pairs_dsp_s8_s16.
RQ_TILES = {"4x1": "mc_gemm_p4_rq_dsp_s16", "4x2": "mc_gemm_p4x2_rq_dsp_s16"}
P4X2_KERNELS = {"mc_gemm_p4x2_rq_dsp_s16": ("int16", 2)}
for _name, (_dt, _group) in P4X2_KERNELS.items():
    intrinsic(_name, ("handle",) * 4 + (GEMM_RQ_PARAMS,), "void", "mc_gemm.h", extern=True,
              writes=(0,))(_gemm_rq_records_impl(_group, interleaved=True))

WIDEN_PAIRS_KERNEL = "mc_widen_pairs_dsp_s8_s16"


@intrinsic(WIDEN_PAIRS_KERNEL, ("handle", "handle", "int32"), "void", "mc_gemm.h", extern=True, writes=(0,))
def _widen_pairs_impl(dst_ptr, src_ptr, n):
    """dst[(i/2)*4 + i%2] = i16(src[i]) for i < n: a run of one column into its pair-interleaved place."""
    (da, do), (sa, so) = dst_ptr, src_ptr
    i = np.arange(n)
    da[do + (i // 2) * 4 + i % 2] = sa[so:so + n].astype(np.int16)

# mc_conv_rq_mve_s8 (Helium): a whole int8 convolution, each block of output pixels' windows
# copied into dense columns of k_p bytes (mc_gemm.h; schedule/conv_mve.py). Weights: [out_c, k_p]
# packed by pack_panels4 with groups of 16 (zeros past kh * kw * in_c).
CONV_MVE_KERNEL = "mc_conv_rq_mve_s8"
CONV_GROUP = 16
CONV_PARAMS = StructType("mc_conv_params_t",
                         ("batch", "in_h", "in_w", "in_c", "out_h", "out_w", "out_c", "kh", "kw", "stride_h",
                          "stride_w", "dil_h", "pad_top", "pad_left", "k_p", "cols", "zp_in", "out_offset", "act_min",
                          "act_max"))


@intrinsic(CONV_MVE_KERNEL, ("handle",) * 7 + (CONV_PARAMS,), "void", "mc_gemm.h", extern=True, writes=(0, 6))
def _impl_conv_mve(y, x, w, bias, mult, rshift, col, p: dict):
    """Python semantics: TFLite's ConvPerChannel with the zero point folded into the bias (a
    padded tap reads zp_in); `col` is the kernel's own scratch."""
    (ya, yo), (xa, xo), (wa, wo) = y, x, w
    n, ih, iw, ic, oh, ow, oc = (p[f] for f in ("batch", "in_h", "in_w", "in_c", "out_h", "out_w", "out_c"))
    kh, kw = p["kh"], p["kw"]
    filt = unpack_panels4(wa[wo:], oc, p["k_p"], CONV_GROUP)[:, :kh * kw * ic]
    filt = filt.reshape(oc, kh, kw, ic).astype(np.int64)
    xs = np.asarray(xa[xo:xo + n * ih * iw * ic], np.int64).reshape(n, ih, iw, ic)
    i = np.arange(oc)
    acc = np.broadcast_to(bias[0][bias[1] + i].astype(np.int64), (n, oh, ow, oc)).copy()
    for t, u, taps in window_taps(xs, p, kh, kw):            # dilation 1 across: no dil_w in p
        acc += taps @ filt[:, t, u, :].T
    ya[yo:yo + acc.size] = requantized(acc, mult[0][mult[1] + i], rshift[0][rshift[1] + i], p).reshape(-1)
