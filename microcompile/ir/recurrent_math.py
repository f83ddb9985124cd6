"""The arithmetic of the recurrent ops (ops_recurrent.py), in numpy: what the interpreter
(reference/recurrent.py) and the micro-kernel declarations (tir/intrinsics_recurrent.py)
both run.

  lstm_float    TFLite's LstmStepFloat: four gates (input, forget, cell, output), each
                bias + W x + R h, sigmoid / tanh, cell = f c + i g (clipped), h = o tanh(c)
  lstm_int8     LiteRT's EvalInteger8x8_16 for the standard LSTM (no CIFG, peephole,
                projection or layer norm): int8 gate matmuls requantized to int16 Q3.12
                (MatrixBatchVectorMultiplyAccumulate), gemmlowp int16 sigmoid / tanh, an
                int16 power-of-two cell state, the hidden state requantized to int8
  gru_float     ONNX GRU (gates z, r, h; linear_before_reset either way)
  svdf_float    TFLite EvalFloatSVDF; svdf_int8 EvalIntegerSVDF (int16 state)

The gemmlowp int16 fixed point here (logistic16_gemmlowp, tanh16_gemmlowp) mirrors
gemmlowp's FixedPoint<int16_t, IntegerBits> bit for bit: SaturatingRoundingDoublingHighMul
on int16, constants rescaled from their int32 raw values by RoundingDivideByPOT(x, 16), and
the saturating add at the end of exp on [-1/4, 0) that gemmlowp uses for 16-bit types.
States are updated in place (the arrays the caller passes), as the kernels do.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import fixedpoint as fp

_f32 = np.float32


# --- gemmlowp FixedPoint<int16_t, IntegerBits> ---------------------------------------------

def w16(x) -> np.ndarray:
    """Wrap to int16 (C's conversion of an out-of-range int)."""
    return ((np.asarray(x, np.int64) + 32768) & 0xFFFF) - 32768


def sat16(x) -> np.ndarray:
    return np.clip(np.asarray(x, np.int64), -32768, 32767)


def srdhm16(a, b) -> np.ndarray:
    """gemmlowp SaturatingRoundingDoublingHighMul on int16: round(a*b / 2^15), half away."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    ab = a * b
    nudge = np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    num = ab + nudge
    high = np.where(num >= 0, num >> 15, -((-num) >> 15))
    return np.where((a == -32768) & (b == -32768), 32767, w16(high))


def sat_mul_pot16(x, exponent: int) -> np.ndarray:
    """gemmlowp SaturatingRoundingMultiplyByPOT<exponent> on int16."""
    x = np.asarray(x, np.int64)
    if exponent == 0:
        return x
    if exponent < 0:
        return fp.rounding_divide_by_pot(x, -exponent)
    threshold = (1 << (15 - exponent)) - 1
    return np.where(x > threshold, 32767, np.where(x < -threshold, -32768, w16(x << exponent)))


def _const16(raw32: int) -> int:
    """GEMMLOWP_CHECKED_FIXEDPOINT_CONSTANT for int16: the int32 raw value / 2^16, rounded."""
    return int(fp.rounding_divide_by_pot(raw32, 16))


def _exp_quarter16(a) -> np.ndarray:
    """exp(a) for a in [-1/4, 0), Q0.15 in and out."""
    ct, c13 = _const16(1895147668), _const16(715827883)
    x = w16(a + (1 << 12))                       # a + 1/8
    x2 = srdhm16(x, x)
    x3 = srdhm16(x2, x)
    x4 = srdhm16(x2, x2)
    poly = sat_mul_pot16(w16(srdhm16(w16(sat_mul_pot16(x4, -2) + x3), c13) + x2), -1)
    return sat16(ct + srdhm16(ct, w16(x + poly)))   # AddSaturatingIf16Bit


_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
               (2, 39332535), (3, 720401), (4, 242))


def exp_on_negative16(a, integer_bits: int) -> np.ndarray:
    """gemmlowp exp_on_negative_values on FixedPoint<int16, integer_bits>, result Q0.15."""
    a = np.asarray(a, np.int64)
    frac = 15 - integer_bits
    quarter = 1 << (frac - 2)
    amq = w16((a & (quarter - 1)) - quarter)
    result = _exp_quarter16(sat_mul_pot16(amq, integer_bits))
    remainder = w16(amq - a)
    for exponent, mult in _EXP_BARREL:
        if integer_bits > exponent:
            result = np.where(remainder & (1 << (frac + exponent)), srdhm16(result, _const16(mult)), result)
    if integer_bits > 5:
        result = np.where(a < _const16(-(1 << (36 - integer_bits))), 0, result)
    return np.where(a == 0, 32767, result)


def _newton_reciprocal16(a):
    """The three Newton-Raphson steps of gemmlowp's 1/(1+a), a in [0, 1): x in Q2.13."""
    s = np.asarray(a, np.int64) + 32767
    half_den = np.where(s >= 0, (s + 1) // 2, -((-(s - 1)) // 2))     # RoundingHalfSum
    x = w16(_const16(1515870810) + srdhm16(half_den, _const16(-1010580540)))
    for _ in range(3):
        one_minus = w16((1 << 13) - srdhm16(half_den, x))
        x = w16(x + sat_mul_pot16(srdhm16(x, one_minus), 2))            # Rescale<2> of a Q4 product
    return x


def logistic16_gemmlowp(a, integer_bits: int) -> np.ndarray:
    """gemmlowp logistic: FixedPoint<int16, integer_bits> in, Q0.15 out."""
    a = np.asarray(a, np.int64)
    pos = a > 0
    abs_in = np.where(pos, a, w16(-a))
    r_pos = sat_mul_pot16(_newton_reciprocal16(exp_on_negative16(w16(-abs_in), integer_bits)), 1)
    return np.where(a == 0, 16384, np.where(pos, r_pos, w16(32767 - r_pos)))


def tanh16_gemmlowp(a, integer_bits: int) -> np.ndarray:
    """gemmlowp tanh: FixedPoint<int16, integer_bits> in, Q0.15 out."""
    a = np.asarray(a, np.int64)
    neg = a < 0
    n = np.where(neg, a, w16(-a))
    t = sat_mul_pot16(w16(_newton_reciprocal16(exp_on_negative16(n, integer_bits + 1)) - (1 << 13)), 2)
    return np.where(a == 0, 0, np.where(neg, w16(-t), t))


# --- LSTM ------------------------------------------------------------------------------------

def _sequence(x, time_major: bool):
    """(time steps, batch, features) view of the op's input."""
    return x if time_major else np.swapaxes(x, 0, 1)


def lstm_float(x, w, r, b, h, c, time_major: bool, cell_clip: float) -> np.ndarray:
    """w, r, b: the four gates' input weights, recurrent weights and biases in the order
    input, forget, cell, output. h [B, H] and c [B, H] float32 are updated in place;
    returns the outputs in the input's layout."""
    seq = _sequence(np.asarray(x, _f32), time_major)
    out = np.zeros(seq.shape[:2] + (h.shape[-1],), _f32)
    hs, cs = h.reshape(seq.shape[1], -1), c.reshape(seq.shape[1], -1)

    def sigmoid(v):
        return (_f32(1) / (_f32(1) + np.exp(-v).astype(_f32))).astype(_f32)

    for t in range(seq.shape[0]):
        gates = [(bk.astype(_f32) + seq[t] @ wk.T.astype(_f32) + hs @ rk.T.astype(_f32)).astype(_f32)
                 for wk, rk, bk in zip(w, r, b)]
        i, f, o = sigmoid(gates[0]), sigmoid(gates[1]), sigmoid(gates[3])
        g = np.tanh(gates[2]).astype(_f32)
        new_c = (f * cs + i * g).astype(_f32)
        if cell_clip > 0:
            new_c = np.clip(new_c, -_f32(cell_clip), _f32(cell_clip))
        cs[...] = new_c
        hs[...] = (o * np.tanh(new_c)).astype(_f32)
        out[t] = hs
    return out if time_major else np.swapaxes(out, 0, 1)


@dataclass(frozen=True)
class LstmInt8Params:
    """Everything LiteRT's PopulateQuantizedLstmParams8x8_16 / PrecomputeZeroPointTimes-
    WeightWithBias derive, per gate in the order input, forget, cell, output: the effective
    input and recurrent multipliers (to Q3.12), the input bias with the input zero point
    folded in, and the recurrent row sums times the hidden zero point."""

    input_mult: tuple[int, ...]
    input_shift: tuple[int, ...]
    recurrent_mult: tuple[int, ...]
    recurrent_shift: tuple[int, ...]
    input_bias: tuple          # 4 x [H] int32 arrays
    recurrent_bias: tuple      # 4 x [H] int32 arrays
    cell_scale_log2: int       # the cell state's scale is 2^cell_scale_log2
    hidden_mult: int
    hidden_shift: int
    hidden_zero_point: int
    cell_clip: int             # quantized; 0: none


def _mbvma(x, bias, wk, mult: int, shift: int, acc) -> np.ndarray:
    """MatrixBatchVectorMultiplyAccumulate (int8 -> int16): acc + MBQM(bias + x W^T), saturated."""
    dot = np.asarray(x, np.int64) @ np.asarray(wk, np.int64).T + np.asarray(bias, np.int64)
    return sat16(fp.multiply_by_quantized_multiplier(dot, mult, shift) + acc)


def lstm_int8(x, w, r, p: LstmInt8Params, h, c, time_major: bool) -> np.ndarray:
    """LiteRT's LstmStepInteger8x8_16, step by step; h (int8) and c (int16) in place."""
    seq = _sequence(np.asarray(x, np.int64), time_major)
    out = np.zeros(seq.shape[:2] + (h.shape[-1],), np.int8)
    hs, cs = h.reshape(seq.shape[1], -1), c.reshape(seq.shape[1], -1)
    for t in range(seq.shape[0]):
        hprev = hs.astype(np.int64)
        gates = []
        for k in range(4):
            gate = _mbvma(seq[t], p.input_bias[k], w[k], p.input_mult[k], p.input_shift[k], 0)
            gate = _mbvma(hprev, p.recurrent_bias[k], r[k], p.recurrent_mult[k], p.recurrent_shift[k], gate)
            gates.append(gate)
        i, f = logistic16_gemmlowp(gates[0], 3), logistic16_gemmlowp(gates[1], 3)
        g = tanh16_gemmlowp(gates[2], 3)
        # UpdateLstmCellInteger: f * c >> 15, i * g >> (30 + cell scale), a saturating sum.
        kept = w16(fp.rounding_divide_by_pot(f * cs.astype(np.int64), 15))
        new = w16(fp.rounding_divide_by_pot(i * g, 30 + p.cell_scale_log2))
        cell = sat16(kept + new)
        if p.cell_clip > 0:
            cell = np.clip(cell, -p.cell_clip, p.cell_clip)
        cs[...] = cell
        o = logistic16_gemmlowp(gates[3], 3)
        th = tanh16_gemmlowp(cell, 15 + p.cell_scale_log2)
        hv = fp.multiply_by_quantized_multiplier(o * th, p.hidden_mult, p.hidden_shift) + p.hidden_zero_point
        hs[...] = np.clip(hv, -128, 127)
        out[t] = hs
    return out if time_major else np.swapaxes(out, 0, 1)


# --- GRU (ONNX) ----------------------------------------------------------------------------

def gru_float(x, w, r, b, h, time_major: bool, linear_before_reset: bool) -> np.ndarray:
    """ONNX GRU, one direction: w [3H, I] and r [3H, H] in gate order z, r, h; b [6H] the input
    then the recurrent biases. h [B, H] float32 is updated in place."""
    seq = _sequence(np.asarray(x, _f32), time_major)
    hs = h.reshape(seq.shape[1], -1)
    hidden = hs.shape[1]
    wz, wr, wh = (np.asarray(w[k * hidden:(k + 1) * hidden], _f32) for k in range(3))
    rz, rr, rh = (np.asarray(r[k * hidden:(k + 1) * hidden], _f32) for k in range(3))
    bw = [np.asarray(b[k * hidden:(k + 1) * hidden], _f32) for k in range(3)]
    br = [np.asarray(b[(3 + k) * hidden:(4 + k) * hidden], _f32) for k in range(3)]
    out = np.zeros(seq.shape[:2] + (hidden,), _f32)

    def sigmoid(v):
        return (_f32(1) / (_f32(1) + np.exp(-v).astype(_f32))).astype(_f32)

    for t in range(seq.shape[0]):
        xt, hp = seq[t], hs.copy()
        z = sigmoid(xt @ wz.T + bw[0] + hp @ rz.T + br[0])
        rg = sigmoid(xt @ wr.T + bw[1] + hp @ rr.T + br[1])
        if linear_before_reset:
            hh = np.tanh(xt @ wh.T + bw[2] + rg * (hp @ rh.T + br[2])).astype(_f32)
        else:
            hh = np.tanh(xt @ wh.T + bw[2] + (rg * hp) @ rh.T + br[2]).astype(_f32)
        hs[...] = ((_f32(1) - z) * hh + z * hp).astype(_f32)
        out[t] = hs
    return out if time_major else np.swapaxes(out, 0, 1)


# --- SVDF ----------------------------------------------------------------------------------

def _shift_state(state: np.ndarray, memory: int, filters: int) -> np.ndarray:
    """The state [B, F, M] with its oldest entry dropped and a free last slot (TFLite shifts
    the whole flat state left by one; each filter's last slot is overwritten next)."""
    s = state.reshape(-1, filters, memory)
    s[:, :, :-1] = s[:, :, 1:].copy()
    return s


def svdf_float(x, wf, wt, bias, state, rank: int, activation: str) -> np.ndarray:
    """TFLite EvalFloatSVDF: state [B, F*M] float32, updated in place."""
    filters, memory = wt.shape
    s = _shift_state(state, memory, filters)
    s[:, :, -1] = (np.asarray(x, _f32) @ np.asarray(wf, _f32).T).astype(_f32)
    per_filter = (s * np.asarray(wt, _f32)[None]).sum(axis=2, dtype=_f32)          # [B, F]
    out = per_filter.reshape(per_filter.shape[0], -1, rank).sum(axis=2, dtype=_f32)  # [B, U]
    if bias is not None:
        out = (out + np.asarray(bias, _f32)).astype(_f32)
    lo, hi = fp.activation_range(activation, dtype="float32")
    return np.clip(out, _f32(lo), _f32(hi)).astype(_f32)


@dataclass(frozen=True)
class SvdfInt8Params:
    """EvalIntegerSVDF: feature = MBQM(sum (x - zp_in) * wf, scale_1) clamped to int16 into
    the state; out = MBQM(sum_rank sum_memory state * wt + bias, scale_2) + zp_out."""

    input_zero_point: int
    output_zero_point: int
    scale_1_mult: int
    scale_1_shift: int
    scale_2_mult: int
    scale_2_shift: int


def svdf_int8(x, wf, wt, bias, state, rank: int, p: SvdfInt8Params) -> np.ndarray:
    """TFLite EvalIntegerSVDF: int8 input, int8 weights_feature, int16 weights_time, int32 bias,
    int16 state [B, F*M] updated in place; int8 out. TFLM's int8 variant (int8 weights_time
    and state, EvalIntegerSvdfReference<int8_t>) is the same with the new state entry
    saturated to int8."""
    filters, memory = wt.shape
    s = _shift_state(state, memory, filters)
    dot = (np.asarray(x, np.int64) - p.input_zero_point) @ np.asarray(wf, np.int64).T
    lo, hi = np.iinfo(state.dtype).min, np.iinfo(state.dtype).max
    s[:, :, -1] = np.clip(fp.multiply_by_quantized_multiplier(dot, p.scale_1_mult, p.scale_1_shift), lo, hi)
    per_filter = fp.wrap32((s.astype(np.int64) * np.asarray(wt, np.int64)[None]).sum(axis=2))
    out = fp.wrap32(per_filter.reshape(per_filter.shape[0], -1, rank).sum(axis=2))
    if bias is not None:
        out = fp.wrap32(out + np.asarray(bias, np.int64))
    v = fp.multiply_by_quantized_multiplier(out, p.scale_2_mult, p.scale_2_shift) + p.output_zero_point
    return np.clip(v, -128, 127).astype(np.int8)
