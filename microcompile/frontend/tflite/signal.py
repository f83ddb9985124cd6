"""TFLite Micro's signal-library CUSTOM ops (ops_signal) and CAST: one converter each.

TFLM's kernels read their options from a flexbuffer map (the reader decodes it for these
ops only); each option becomes the attribute of the same name, checked to be an int32 (or a
bool where TFLM reads one). SignalFilterBankSpectralSubtraction keeps its noise estimate
inside the kernel; here it becomes a variable tensor `<output>/noise_state` (the state
buffer, zero at reset, as TFLM's Reset leaves it). SignalRfft is read for int16 frames
(option T = INT16), the type TFLM's audio front ends use; its float32 and int32 forms are
refused by name. TFLM's other signal ops (delay, framer, overlap-add, stacker, irfft) are
unsupported ops.
"""

from __future__ import annotations

from ...errors import ModelFormatError
from ...ir.graph import Tensor
from ...ir.ops_signal import CAST_DTYPES, SPECTRAL_SUBTRACTION_OPTIONS
from .reader import NOT_A_SCALAR, TENSOR_TYPE_NAMES, RAW_DTYPES, converter, op_inputs
from .writer import no_options, writer

_INT32 = (-2**31, 2**31 - 1)
_TFL_INT16 = 7


def _options(op, names: tuple[str, ...], flags: tuple[str, ...] = ()) -> dict:
    """The ops' flexbuffer options `names` as int32 attributes (`flags` as bools)."""
    o = op.options or {}
    out = {}
    for name in (*names, *flags):
        v = o.get(name)
        ok = isinstance(v, bool) if name in flags else (isinstance(v, int) and not isinstance(v, bool)
                                                        and _INT32[0] <= v <= _INT32[1])
        if not ok:
            got = "missing" if v is None else "not a number" if v is NOT_A_SCALAR else repr(v)
            raise ModelFormatError(f"op {op.opname} at layer {op.index}: option {name!r} is {got}, TFLM needs "
                                   f"{'a bool' if name in flags else 'an int32'}")
        out[name] = v
    return out


def _signal(our_op: str, n_inputs: int, names: tuple[str, ...] = (), flags: tuple[str, ...] = ()):
    def convert(ctx, op):
        return our_op, op_inputs(ctx, op, n_inputs, n_inputs), _options(op, names, flags)
    return convert


converter("CUSTOM(SignalWindow)")(_signal("signal_window", 2, ("shift",)))
converter("CUSTOM(SignalFftAutoScale)")(_signal("signal_fft_auto_scale", 1))
converter("CUSTOM(SignalEnergy)")(_signal("signal_energy", 1, ("start_index", "end_index")))
converter("CUSTOM(SignalFilterBank)")(_signal("signal_filter_bank", 6, ("num_channels",)))
converter("CUSTOM(SignalFilterBankSquareRoot)")(_signal("signal_filter_bank_square_root", 2))
converter("CUSTOM(SignalPCAN)")(_signal("signal_pcan", 3, ("snr_shift",)))
converter("CUSTOM(SignalFilterBankLog)")(_signal("signal_filter_bank_log", 1,
                                                 ("input_correction_bits", "output_scale")))


def _rfft_problem(raw, op) -> str | None:
    t = (op.options or {}).get("T", _TFL_INT16)
    if t == _TFL_INT16 and not isinstance(t, bool):
        return None
    kind = RAW_DTYPES[t][0] if isinstance(t, int) and t in RAW_DTYPES else f"type {t if isinstance(t, int) else '?'}"
    return f"CUSTOM(SignalRfft) of {kind} frames (int16 only)"


@converter("CUSTOM(SignalRfft)", problem=_rfft_problem)
def _rfft(ctx, op):
    return "signal_rfft", op_inputs(ctx, op, 1, 1), _options(op, ("fft_length",))


@converter("CUSTOM(SignalFilterBankSpectralSubtraction)")
def _spectral_subtraction(ctx, op):
    attrs = _options(op, tuple(k for k in SPECTRAL_SUBTRACTION_OPTIONS if k != "clamping") + ("num_channels",),
                     ("clamping",))
    (x,) = op_inputs(ctx, op, 1, 1)
    shape = ctx.shape(op.inputs[0])
    if attrs.pop("num_channels") != (shape[-1] if shape else 0):
        raise ModelFormatError(f"op {op.opname} at layer {op.index}: num_channels does not match its input {shape}")
    if len(op.outputs) != 2:
        raise ModelFormatError(f"op {op.opname} at layer {op.index} has {len(op.outputs)} outputs, TFLM's has 2")
    out = ctx.name(op.outputs[0])
    state = ctx.new_tensor(Tensor(f"{out}/noise_state", tuple(shape), "uint32", variable=True))
    return "signal_spectral_subtraction", (x, state), attrs


def _cast_problem(raw, op) -> str | None:
    types = [raw.tensors[i].type for i in (*op.inputs[:1], *op.outputs[:1]) if i >= 0]
    if len(op.outputs) != 1 or len(types) != 2:
        return None     # the converter names the malformed op
    names = [RAW_DTYPES[t][0] if t in RAW_DTYPES else TENSOR_TYPE_NAMES.get(t, str(t)) for t in types]
    return None if all(n in CAST_DTYPES for n in names) else f"CAST from {names[0]} to {names[1]}"


@converter("CAST", problem=_cast_problem)
def _cast(ctx, op):
    if len(op.outputs) != 1:
        raise ModelFormatError(f"op CAST at layer {op.index} has {len(op.outputs)} outputs, needs 1")
    return "cast", op_inputs(ctx, op, 1, 1), {"to": RAW_DTYPES[ctx.raw.tensors[op.outputs[0]].type][0]}


writer("cast", "CAST")(no_options)


# --- writers: the custom code and the flexbuffer options TFLM's kernels read -------------

def _attrs(*names: str):
    return lambda b, g, n: {k: n.attrs[k] for k in names}


_WRITE = {"signal_window": ("SignalWindow", ("shift",)), "signal_fft_auto_scale": ("SignalFftAutoScale", ()),
          "signal_energy": ("SignalEnergy", ("start_index", "end_index")),
          "signal_filter_bank": ("SignalFilterBank", ("num_channels",)),
          "signal_filter_bank_square_root": ("SignalFilterBankSquareRoot", ()),
          "signal_pcan": ("SignalPCAN", ("snr_shift",)),
          "signal_filter_bank_log": ("SignalFilterBankLog", ("input_correction_bits", "output_scale"))}
for _op, (_code, _names) in _WRITE.items():
    writer(_op, "CUSTOM", custom=_code)(_attrs(*_names))


@writer("signal_rfft", "CUSTOM", custom="SignalRfft")
def _rfft_options(b, g, n):
    return {"T": _TFL_INT16, "fft_length": n.attrs["fft_length"]}


def _without_state(g, n, tensors):
    return [n.inputs[0]]     # TFLM keeps the noise estimate inside the kernel


@writer("signal_spectral_subtraction", "CUSTOM", inputs=_without_state, custom="SignalFilterBankSpectralSubtraction")
def _spectral_subtraction_options(b, g, n):
    return {**{k: n.attrs[k] for k in SPECTRAL_SUBTRACTION_OPTIONS}, "clamping": bool(n.attrs["clamping"]),
            "num_channels": g.tensors[n.inputs[0]].shape[-1]}
