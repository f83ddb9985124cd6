"""Knob spaces: every scheduled kernel family's tunable choices as named knobs with declared
domains (each knob declared once, in schedule/knobs.py's table), and `apply_config`, which
schedules a PrimFunc at one point of its space.

    space = knob_space(func, target)            # KnobSpace: the family and its knobs
    config = default_config(func, target, wide) # the point default_schedule() takes
    func2, trace = apply_config(func, target, config)    # or InvalidConfig(reason)

The default schedule is one point of each space: `apply_config` at `default_config(...)`
gives the same PrimFunc and the same trace as `default_schedule(func, target, wide=wide)`
(tested on every kernel of the test models). A choice that breaks an invariant (a tile larger
than the dimension or not dividing it, im2col columns over their byte cap, scratch over the
budget, a micro-kernel that does not apply) raises InvalidConfig with the reason before any
code is generated; the tuner records the reason.

Families (matched in this order, the first whose `applies` holds):

    conv2d            int8 GEMM (gemm_schedule.py): cols, col_bytes_max, widen_min_run, wide_weights,
                      epilogue, pointwise (copy/direct: the 1x1 fast path), pad_split (auto/none/rows: the
                      interior rows' im2col copy without a padding test), cache_read_at
                      (block/pixel/plane: where the im2col columns are copied), cache_write_at
                      (block/pixel: the int32 tile of epilogue=tile), gemm_loop_order
                      (panels | columns: the int16 DSP kernel's outer loop, chunks of 8 weight panels
                      or the columns), gemm_tile (auto | 4x1 | 4x2: its register tile, 4x2 on pair-interleaved
                      im2col columns), im2col (auto | columns | window: a column per output pixel, or a row
                      block's shared window of input columns read as overlapping columns), unroll_max_extent
    f32_fpu           float32 conv2d and fully_connected on FPU cores (gemm_f32.py): cols and col_bytes_max
                      (conv2d only), unroll_max_extent
    fully_connected   int8 GEMV/GEMM (gemm_schedule.py): acc_rows, wide_weights, fc_input, unroll_max_extent
    depthwise_conv2d  (depthwise_intrin.py): depthwise_kernel, depthwise_rows_block, wide_weights,
                      unroll_max_extent
    add               int8 ADD and SUB rescale tables (tabulate.py): tables, unroll_max_extent
    softmax           int8 softmax's exp table (tabulate.py): tables, unroll_max_extent
    sketch            everything else (pooling, mean, elementwise, float softmax, copies, float depthwise,
                      hybrid convolutions, any float kernel on cores without an FPU): a space derived from
                      the loop nest itself, not written by hand (schedule/sketch.py): sketch (the sketches
                      that apply: fuse, tile<T>[@scratch], unroll, tensorize and their combinations),
                      unroll_max_extent
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable

from ..tir.nodes import For, PrimFunc, walk
from .applies import add_applies, conv_applies, dw_applies, fc_applies, softmax_applies
from .unrolling import UNROLL_MAX_EXTENT_DOMAIN, default_unroll, unroll_short_loops
from .depthwise_intrin import default_layer_mve_block, default_rows_block, schedule_depthwise
from .gemm_f32 import F32_COL_BYTES_MAX, f32_gemm_applies, schedule_conv2d_f32, schedule_dense_f32
from .gemm_schedule import (COL_BYTES_MAX, EPILOGUE_DOMAIN, FC_ACC_ROWS, FC_ACC_ROWS_DOMAIN, FC_INPUT,
                            WIDEN_MIN_RUN, GemmKnobs, output_pixels, schedule_conv2d_gemm,
                            schedule_dense_gemm)
from .knobs import KNOBS, Knob, declare_knob
from .primitives import ScheduleError
from .sketch import apply_sketch, default_sketch, sketches
from .tabulate import schedule_add_tables, schedule_softmax_table
from .trace import Schedule, Trace
from .variants import kernel_set

# The knobs of the spaces that the default schedules do not record themselves, declared with
# theirs (schedule/knobs.py); a space is the declared knobs its family takes.
# conv2d's block of output pixels (GEMM columns): 0 = the default's choice (the largest divisor
# of the output plane within max_cols whose im2col columns fit col_bytes_max); otherwise exactly
# that many, which must divide the output plane (5 and 25 for the 25x5 maps of keyword spotting).
COLS_KNOB_DOMAIN = declare_knob("cols", (0, 1, 2, 4, 5, 8, 10, 16, 20, 25, 32),
                                "conv2d: output pixels per GEMM block exactly (0: the default's choice)")
declare_knob("epilogue", ("auto",) + EPILOGUE_DOMAIN,
             "conv2d: bias and requantization in the micro-kernel (fused) or a pass over an int32 tile (tile); "
             "auto: fused where a kernel exists")
declare_knob("unroll_max_extent", UNROLL_MAX_EXTENT_DOMAIN, "innermost loops this short or shorter unrolled")


class InvalidConfig(ScheduleError):
    """A knob choice that breaks an invariant: rejected before code generation, with the reason."""


@dataclass(frozen=True)
class KnobSpace:
    family: str
    knobs: tuple[Knob, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(k.name for k in self.knobs)

    @property
    def size(self) -> int:
        n = 1
        for k in self.knobs:
            n *= len(k.domain)
        return n

    def check(self, config: dict) -> None:
        """InvalidConfig unless `config` names every knob, no other, each within its domain."""
        unknown = sorted(set(config) - set(self.names))
        missing = [n for n in self.names if n not in config]
        if unknown or missing:
            raise InvalidConfig(f"{self.family}: " + "; ".join(
                ([f"unknown knob(s) {', '.join(unknown)}"] if unknown else [])
                + ([f"missing knob(s) {', '.join(missing)}"] if missing else [])))
        for k in self.knobs:
            if config[k.name] not in k.domain:
                raise InvalidConfig(f"{self.family}: knob {k.name}={config[k.name]!r} is outside its domain "
                                    f"{list(k.domain)}")

    def points(self):
        """Every point of the space, in a fixed order (valid or not)."""
        for values in itertools.product(*(k.domain for k in self.knobs)):
            yield dict(zip(self.names, values))

    def random(self, rng) -> dict:
        """A uniformly random point (`rng`: numpy Generator)."""
        return {k.name: k.domain[int(rng.integers(len(k.domain)))] for k in self.knobs}

    def neighbours(self, config: dict):
        """The points that differ from `config` in one knob."""
        for k in self.knobs:
            for v in k.domain:
                if v != config[k.name]:
                    yield {**config, k.name: v}


@dataclass(frozen=True)
class Family:
    name: str
    applies: Callable        # (func, target) -> bool
    knobs: Callable          # (func, target) -> tuple[Knob, ...]
    default: Callable        # (func, target, wide: bool) -> config
    schedule: Callable       # (func, target, config) -> Schedule | None (None: does not apply)


FAMILIES: dict[str, Family] = {}


def knob_family(name: str, applies, knobs, default):
    """Register the decorated schedule function (func, target, config) as knob family `name`."""
    def register(fn):
        assert name not in FAMILIES, f"knob family {name} registered twice"
        FAMILIES[name] = Family(name, applies, knobs, default, fn)
        return fn
    return register


def family_of(func: PrimFunc, target=None) -> Family:
    return next(f for f in FAMILIES.values() if f.applies(func, target))


def knob_space(func: PrimFunc, target=None) -> KnobSpace:
    fam = family_of(func, target)
    return KnobSpace(fam.name, fam.knobs(func, target))


def default_config(func: PrimFunc, target=None, wide: bool = True) -> dict:
    """The point of the space default_schedule(func, target, wide=wide) takes."""
    return dict(family_of(func, target).default(func, target, wide))


def apply_config(func: PrimFunc, target=None, config: dict | None = None,
                 scratch_budget: int | None = None) -> tuple[PrimFunc, Trace]:
    """Schedule `func` at `config` (default: the default point, int16 weights where offered).
    InvalidConfig (a ScheduleError) names what is wrong; `scratch_budget` (bytes) rejects a
    schedule whose scratch buffers exceed it."""
    fam = family_of(func, target)
    space = KnobSpace(fam.name, fam.knobs(func, target))
    config = dict(config) if config is not None else default_config(func, target)
    space.check(config)
    default = any(config == fam.default(func, target, w) for w in (True, False))
    try:
        sch = fam.schedule(func, target, config)
    except InvalidConfig:
        raise
    except ScheduleError as e:
        raise InvalidConfig(f"{fam.name}: {e}") from None
    if sch is None:
        if not default:
            raise InvalidConfig(f"{fam.name}: the schedule for {_show(config)} does not apply to {func.name}")
        sch = Schedule(func)      # as default_schedule: the lowered loops as they are
    unroll_short_loops(sch, config["unroll_max_extent"])
    if scratch_budget is not None and sch.func.scratch_bytes > scratch_budget:
        raise InvalidConfig(f"{fam.name}: scratch of {sch.func.scratch_bytes} bytes exceeds the budget of "
                            f"{scratch_budget} bytes")
    return sch.func, sch.trace


def _show(config: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in config.items())


def _loops(f: PrimFunc) -> dict[str, For]:
    return {n.var.name: n for n in walk(f.body) if isinstance(n, For)}


def _knobs(*names: str) -> tuple[Knob, ...]:
    """Declared knobs (schedule/knobs.py) as the knobs of a space."""
    return tuple(KNOBS[n] for n in names)


# ---------------------------------------------------------------- conv2d (int8 GEMM)

def _conv_knobs(func, target):
    return _knobs("cols", "col_bytes_max", "widen_min_run", "wide_weights", "epilogue", "pointwise", "pad_split",
                  "cache_read_at", "cache_write_at", "gemm_loop_order", "gemm_tile", "conv_kernel",
                  "im2col", "unroll_max_extent")


def _conv_default(func, target, wide):
    return {"cols": 0, "col_bytes_max": COL_BYTES_MAX[kernel_set(target)], "widen_min_run": WIDEN_MIN_RUN,
            "wide_weights": int(bool(wide)),
            "epilogue": "auto", "pointwise": "copy", "pad_split": "auto", "cache_read_at": "block",
            "cache_write_at": "block", "gemm_loop_order": "panels", "gemm_tile": "auto", "conv_kernel": "auto",
            "im2col": "auto", "unroll_max_extent": default_unroll(func)}


@knob_family("conv2d", conv_applies, _conv_knobs, _conv_default)
def _conv_schedule(func, target, config):
    wide = bool(config["wide_weights"])
    if wide and kernel_set(target) != "dsp":
        raise InvalidConfig(f"conv2d: wide_weights=1 (int16 weights) has no effect on the {kernel_set(target)} "
                            "kernels")
    cols = config["cols"] or None
    if cols is not None:
        pixels = output_pixels(func)
        w = next(b for b in func.buffers if b.name == "w")
        depth = w.size // w.shape[0]
        col_bytes = cols * depth * (2 if wide else 1)
        if cols > pixels:
            raise InvalidConfig(f"conv2d: a block of {cols} columns is larger than the {pixels} output pixels")
        if pixels % cols:
            raise InvalidConfig(f"conv2d: a block of {cols} columns does not divide the {pixels} output pixels")
        # (pointwise=direct copies no columns: no cap; im2col=window checks its smaller window)
        if cols > 1 and col_bytes > config["col_bytes_max"] and config["pointwise"] != "direct" \
                and config["im2col"] != "window":
            raise InvalidConfig(f"conv2d: {cols} im2col columns take {col_bytes} bytes, over col_bytes_max "
                                f"{config['col_bytes_max']}")
    epilogue = None if config["epilogue"] == "auto" else config["epilogue"]
    return schedule_conv2d_gemm(func, target, wide, GemmKnobs(
        col_bytes_max=config["col_bytes_max"], widen_min_run=config["widen_min_run"], cols=cols, epilogue=epilogue,
        pointwise=config["pointwise"], pad_split=config["pad_split"], cache_read_at=config["cache_read_at"],
        cache_write_at=config["cache_write_at"], loop_order=config["gemm_loop_order"], tile=config["gemm_tile"],
        conv_kernel=config["conv_kernel"], im2col=config["im2col"]))


# ---------------------------------------------------------------- float32 conv2d / fully_connected (FPU)

def _f32_knobs(func, target):
    if func.attrs.get("op") == "conv2d":
        return _knobs("cols", "col_bytes_max", "unroll_max_extent")
    return _knobs("unroll_max_extent")


def _f32_default(func, target, wide):
    if func.attrs.get("op") == "conv2d":
        return {"cols": 0, "col_bytes_max": F32_COL_BYTES_MAX, "unroll_max_extent": default_unroll(func)}
    return {"unroll_max_extent": default_unroll(func)}


@knob_family("f32_fpu", f32_gemm_applies, _f32_knobs, _f32_default)
def _f32_schedule(func, target, config):
    if func.attrs.get("op") != "conv2d":
        return schedule_dense_f32(func, target)
    cols = config["cols"] or None
    if cols is not None and output_pixels(func) % cols:
        raise InvalidConfig(f"f32_fpu: a block of {cols} columns does not divide the {output_pixels(func)} "
                            "output pixels")
    return schedule_conv2d_f32(func, target, cols, config["col_bytes_max"])


# ---------------------------------------------------------------- fully_connected

def _fc_knobs(func, target):
    return _knobs("acc_rows", "wide_weights", "fc_input", "unroll_max_extent")


def _fc_default(func, target, wide):
    return {"acc_rows": FC_ACC_ROWS, "wide_weights": int(bool(wide)), "fc_input": FC_INPUT,
            "unroll_max_extent": default_unroll(func)}


@knob_family("fully_connected", fc_applies, _fc_knobs, _fc_default)
def _fc_schedule(func, target, config):
    loops = _loops(func)
    units = loops["u"].extent if "u" in loops else 1
    rows = config["acc_rows"]
    # A cap at or above the units is one tile for all of them: only the default and "all" say so.
    if rows not in (FC_ACC_ROWS_DOMAIN[-1], FC_ACC_ROWS) and rows > units:
        raise InvalidConfig(f"fully_connected: an accumulator tile of {rows} rows is larger than the {units} units")
    if config["wide_weights"] and kernel_set(target) != "dsp":
        raise InvalidConfig(f"fully_connected: wide_weights=1 (int16 weights) has no effect on the "
                            f"{kernel_set(target)} kernels")
    if config["fc_input"] != FC_INPUT and not config["wide_weights"]:
        raise InvalidConfig(f"fully_connected: fc_input={config['fc_input']} (an int16 copy of the input) needs "
                            "wide_weights=1 (int16 weights)")
    return schedule_dense_gemm(func, target, wide=bool(config["wide_weights"]), acc_rows=rows,
                               fc_input=config["fc_input"])


# ---------------------------------------------------------------- depthwise_conv2d

def _dw_knobs(func, target):
    return _knobs("depthwise_kernel", "depthwise_rows_block", "wide_weights", "unroll_max_extent")


def _dw_default(func, target, wide):
    if kernel_set(target) == "mve":        # Helium's whole-layer kernel (mc_depthwise_layer_mve_s8)
        block = default_layer_mve_block(func)
    else:
        block = default_rows_block(func)
    whole_layer = block is not None
    # (on Helium the whole-layer kernel reads int8 weights: it is the choice with or without wide)
    kernel = ("rows" if whole_layer else "kernel") if wide or (whole_layer and kernel_set(target) == "mve") \
        else "loops"
    return {"depthwise_kernel": kernel, "wide_weights": int(bool(wide)),
            "depthwise_rows_block": 0 if block is None else block, "unroll_max_extent": default_unroll(func)}


@knob_family("depthwise_conv2d", dw_applies, _dw_knobs, _dw_default)
def _dw_schedule(func, target, config):
    int8_rows = config["depthwise_kernel"] == "rows" and kernel_set(target) == "mve"
    if config["depthwise_kernel"] in ("rows", "kernel") and not config["wide_weights"] and not int8_rows:
        raise InvalidConfig(f"depthwise_conv2d: the micro-kernels read int16 weights (depthwise_kernel="
                            f"{config['depthwise_kernel']} needs wide_weights=1)")
    return schedule_depthwise(func, target, kernel=config["depthwise_kernel"], wide=bool(config["wide_weights"]),
                              rows_block=config["depthwise_rows_block"])


# ---------------------------------------------------------------- add (rescale tables)

def _add_default(func, target, wide):
    return {"tables": int(bool(wide)), "unroll_max_extent": default_unroll(func)}


@knob_family("add", add_applies, lambda f, t: _knobs("tables", "unroll_max_extent"), _add_default)
def _add_schedule(func, target, config):
    return schedule_add_tables(func, target, wide=bool(config["tables"]))


# ---------------------------------------------------------------- int8 softmax (exp table)

@knob_family("softmax", softmax_applies, lambda f, t: _knobs("tables", "unroll_max_extent"),
             lambda func, target, wide: {"tables": int(bool(wide)), "unroll_max_extent": default_unroll(func)})
def _softmax_schedule(func, target, config):
    return schedule_softmax_table(func, target, wide=bool(config["tables"])) or Schedule(func)


# ---------------------------------------------------------------- everything else: sketches

def _sketch_knobs(func, target):
    """The space derived from the loop nest (schedule/sketch.py): its sketches, and unroll_max_extent."""
    return (Knob("sketch", sketches(func, target), KNOBS["sketch"].doc), KNOBS["unroll_max_extent"])


@knob_family("sketch", lambda f, t: True, _sketch_knobs,
             lambda func, target, wide: {"sketch": default_sketch(func, target),
                                         "unroll_max_extent": default_unroll(func)})
def _sketch_schedule(func, target, config):
    return apply_sketch(func, target, config["sketch"], config["unroll_max_extent"])
