"""How each kernel stores its weights (int16 "wide", int8, or packed int4): a per-kernel choice
against the board's flash.

On a DSP core a convolution, depthwise convolution or fully connected layer runs faster on
weights widened to int16 at compile time (SMLAD takes int16 pairs with no extraction), at
the price of twice their flash. By default every kernel keeps the model's int8 weights;
then, fastest first, kernels are widened while the weights still fit the budget: the board's
flash less an estimate of the code, or --flash-budget.

The same holds for the rescale tables of an int8 ADD or SUB and the exp table of an int8 softmax
(schedule/tabulate.py): flash that buys speed, so they take part in the same choice.

Weights whose values all lie in -8..7 (a model with TFLite INT4 weights, or `quantize
--weights int4`) have a third, smallest form: packed int4, two per byte in flash, expanded into
scratch when the kernel starts (the store_int4 primitive, schedule/cache.py), at about
UNPACK_COST_PER_WEIGHT instructions per weight per inference and the unpacked weights' bytes of
arena (unpacked to int16 for the wide kernels where that scratch does not raise the arena: then
the next step is straight to int16 weights in flash), or read packed by the panel kernels
themselves on DSP cores (no scratch: fully connected layers always, convolutions where
unpacking would raise the arena). Such kernels start packed and are unpacked, then
widened, by the same rule while the weights fit; without a flash limit (the host) every kernel
takes its fastest form.

"Fastest first" is the estimated instructions saved per extra byte of flash: about
GAIN_PER_MAC instructions per multiply-accumulate (measured on mps2-an386: the GEMM panel
kernel takes 26 instructions per 32 MACs on int16 against 21 per 16 on int8, and a fully
connected layer's mixed kernel, int16 weights on its int8 input, 53 per 64; the depthwise
kernel 4.7 instructions per MAC against 5.3 for its int8 loops), so a layer whose weights
are reused over many pixels goes first. Ties go to the larger layer, then to graph order.
"""

from __future__ import annotations

from dataclasses import dataclass

GAIN_PER_MAC = 0.5
# mc_unpack_s4_s8 (runtime_c/kernels/mc_copy.c) on mps2-an386: LDRB, two SBFX, two STRB and the
# loop per pair of weights (tests/lower/test_int4_weights.py measures it).
UNPACK_COST_PER_WEIGHT = 3.5
# mc_gemm_p4_dsp_s4 / mc_gemm_p4_rq_dsp_s4, which read packed int4 weights in place: 29
# instructions per 16 MACs in the inner loop against 21 for int8 weights, plus each column's sum
# (runtime_c/kernels/dsp/mc_gemm_s4_dsp.c); kws's convolutions all in place measured 0.62 more
# per MAC (benchmarks/int4_weights.py). The estimate was set for the first, 33-instruction loop.
IN_PLACE_COST_PER_MAC = 0.75
# An int8 ADD's two rescale tables save two multiplies and roundings per element (about 20
# instructions), at 2 KiB of flash (schedule/tabulate.py).
GAIN_PER_TABLE_ELEMENT = 20
# An int8 softmax's exp table saves gemmlowp's fixed-point exp twice per element, at 1 KiB.
GAIN_PER_SOFTMAX_ELEMENT = 400
GAIN_PER_ELEMENT = {"add": GAIN_PER_TABLE_ELEMENT, "sub": GAIN_PER_TABLE_ELEMENT, "softmax": GAIN_PER_SOFTMAX_ELEMENT}
# Flash the firmware needs besides the weights, estimated before it is built: the runtime,
# startup and platform code, plus per kernel its code and parameter structs (our models:
# 7-21 KiB of code for 10-16 kernels; the most where some layers keep int8 weights and the
# int8 and int16 GEMM kernels are both linked: kws under a 64 KiB budget, 21,554 bytes),
# plus the embedded test input.
CODE_BASE_BYTES = 10240
CODE_PER_KERNEL_BYTES = 1024


@dataclass(frozen=True)
class Candidate:
    """A kernel that can store its weights in more than one form."""

    name: str            # the node's name
    gain: float          # estimated instructions saved by the wide variant (estimate_gain)
    narrow_bytes: int    # its constants with int8 weights (no tables)
    wide_bytes: int      # with int16 weights (tables); narrow_bytes when there is no wide variant
    packed_bytes: int | None = None   # with packed int4 weights; None when they are not int4 values
    unpack_cost: float = 0.0          # instructions the packed variant's unpacking adds per inference
    packed_wide: bool = False         # the packed variant unpacks into int16 for the wide kernels

    @property
    def extra(self) -> int:
        return self.wide_bytes - self.narrow_bytes

    def levels(self) -> list[tuple[str, int, float]]:
        """(storage, constant bytes, instructions saved over the previous level), smallest first."""
        out = [("int4", self.packed_bytes, 0.0)] if self.packed_bytes is not None else []
        if self.packed_wide:     # int8 would be slower than int4 unpacked to int16: straight to int16
            return out + [("int16", self.wide_bytes, self.unpack_cost)]
        out.append(("int8", self.narrow_bytes, self.unpack_cost))
        if self.extra > 0:
            out.append(("int16", self.wide_bytes, self.gain))
        return out


def estimate_gain(op: str, macs: int, out_elements: int) -> float:
    if op in GAIN_PER_ELEMENT:
        return GAIN_PER_ELEMENT[op] * out_elements
    return GAIN_PER_MAC * macs


def code_estimate(kernels: int, input_bytes: int = 0) -> int:
    return CODE_BASE_BYTES + CODE_PER_KERNEL_BYTES * kernels + input_bytes


def choose_wide(candidates: list[Candidate], fixed_bytes: int, budget: int | None) -> set[str]:
    """The kernels to widen (choose_storage's int16 ones)."""
    return {name for name, form in choose_storage(candidates, fixed_bytes, budget).items() if form == "int16"}


def choose_storage(candidates: list[Candidate], fixed_bytes: int, budget: int | None) -> dict[str, str]:
    """Each candidate's weights, "int4", "int8" or "int16": every kernel starts at its smallest
    form, then steps up, the step that saves the most instructions per extra byte first (ties:
    the larger saving, then graph order), while every constant still fits `budget` bytes
    (None: no limit, each takes its fastest form). `fixed_bytes` are the other kernels' constants."""
    levels = [c.levels() for c in candidates]
    if budget is None:
        return {c.name: lv[-1][0] for c, lv in zip(candidates, levels)}
    at = [0] * len(candidates)
    total = fixed_bytes + sum(lv[0][1] for lv in levels)
    while True:
        steps = []
        for i, lv in enumerate(levels):
            if at[i] + 1 < len(lv):
                extra, gain = lv[at[i] + 1][1] - lv[at[i]][1], lv[at[i] + 1][2]
                steps.append((-gain / max(extra, 1), -gain, i, extra))
        fitting = [s for s in sorted(steps) if total + s[3] <= budget]
        if not fitting:
            break
        i, extra = fitting[0][2], fitting[0][3]
        at[i] += 1
        total += extra
    return {c.name: lv[k][0] for c, lv, k in zip(candidates, levels, at)}
