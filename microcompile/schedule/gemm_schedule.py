"""Default schedules that turn int8 conv2d and fully_connected into GEMM micro-kernel calls.

conv2d (any kernel size, stride, dilation, padding; 1x1 included):

    fuse(oh, ow)                 one pixel loop p over the output plane
    split(p, cols)               blocks of `cols` pixels (the GEMM's columns)
    cache_write(acc, p_i)        int32 accumulator tile [cols, out_c] in scratch; the nest
                                 splits into init (folded bias), reduction and epilogue
                                 (requantize + clamp, fused into the int8 store)
    cache_read(xv, p_o, int16)   the padded input taps of the block as int16 columns in
                                 scratch (im2col; for 1x1 a plain widening copy)
    unswitch(<innermost copy loop>)  the padding test once per run of channels, not per tap
    tensorize(<copy loop>, mc_widen_dsp_s8_s16)  on DSP cores, runs of >= WIDEN_MIN_RUN channels
                                 are widened 4 at a time (SXTB16) instead of one by one
    pack_constant(w, int16)      weights widened in flash so SMLAD reads pairs directly
    tensorize(p_i_1, mc_gemm_nt_<variant>_s16)

fully_connected: cache_write(acc) (an int32 tile of `acc_rows` units: the layer's single
rounding is not the requantizing kernels'), then, on DSP cores with int16 weights (`wide`):

    pack_constant(w, int16)      weights widened in flash
    tensorize(<tile>_1, mc_gemm_p4_dsp_s16_s8)   (knob fc_input = "int8", the default)
                                 the int8 input row read in place, no scratch: the weights
                                 packed in panels of four rows with each group of four k
                                 permuted to (k0,k2),(k1,k3), so SXTB16 of one input word meets
                                 them (13 instructions per 16 MACs; tir/intrinsics_gemm_mixed.py,
                                 runtime_c/kernels/dsp/mc_gemm_mixed_dsp.c)
    or (fc_input = "int16") cache_read(xv, None, int16) and mc_gemm_p4_dsp_s16: an int16 copy
                                 of the input in scratch (as large as the input twice, which the
                                 compiler refuses where it would raise the arena)

with int8 weights (no flash to spare) mc_gemm_p4_dsp_s8 (SXTB16 on both operands: 21 per 16),
row-major mc_gemm_nt_dsp_s8 where panels would add padding; on other cores
mc_gemm_nt_<variant>_s8.

On Helium (MVE) cores nothing is widened: conv2d caches its im2col columns as int8
(cache_read(xv, p_o) keeps the dtype), keeps its int8 weights, and both conv2d and
fully_connected tensorize with mc_gemm_nt_mve_s8 (VMLADAV: 16 int8 MACs per instruction).

Where the requantization is mc_requant.h's rshift form (every int8 conv of our models), the
conv2d schedule has no accumulator tile at all: the whole block

    for p_i { for oc { acc = bias[oc]; acc += ...; y[...] = requant(acc) } }

becomes one mc_gemm_p4_rq_dsp_<dtype> (DSP), mc_gemm_rq_mve_s8 (Helium) or mc_gemm_rq_c_<dtype>
call (schedule/gemm_intrin.py),
which keeps the sums in registers and stores int8. int16 weights and columns (`wide`) are a
per-kernel choice (schedule/widening.py); int8 ones use the same kernels on int8 operands.

<variant> is the core's kernel set (schedule/variants.py): "mve", "dsp" or "c" (portable C).
Knobs (declared with their domains in schedule/knobs.py, recorded in the trace): `max_cols`
(COLS_DOMAIN), `col_bytes_max` (COL_BYTES_DOMAIN: the im2col buffer's size cap), `acc_rows`
(FC_ACC_ROWS_DOMAIN), `widen_min_run` (WIDEN_MIN_RUN_DOMAIN: the shortest copy run worth a call),
`wide_weights`, `fc_input` (FC_INPUT_DOMAIN), `gemm_loop_order` (GEMM_LOOP_ORDER_DOMAIN: the requantizing int16 DSP kernel's
order, chunks of 8 weight panels outermost or the columns; recorded when not the default),
`gemm_tile` (GEMM_TILE_DOMAIN: its register tile, 4x1 or 4x2 on pair-interleaved im2col columns).
Whether a kernel's weights are widened is decided per kernel against the board's
flash (and the arena) by schedule/widening.py and the compiler (compiler/plan.py), for every size of layer alike.
The conv2d placement knobs below are recorded only when they leave their
default (the first value), so the default trace is unchanged; a value that cannot be carried
out on a kernel raises KnobRefused with the reason (the tuner records it as InvalidConfig):

    pointwise (copy, direct)      direct: a 1x1, stride-1, unpadded conv's input already is the
                                  column matrix (pixel-major, channels contiguous); no cache_read,
                                  inline_let(ih), inline_let(iw) so the fuse makes the index
                                  pixel * C + ic, and the GEMM reads x in place with ldb = C: no
                                  scratch. int8 weights only (there is no int16 column to read).
                                  With the fused epilogue only on the dsp kernel, which finishes a
                                  column before reading the next: conv2d may write its output over
                                  its input (memory/inplace.py, "window"), and the c / Helium
                                  kernels' column pairs would read bytes already overwritten
                                  (measured wrong on the Cortex-M3); epilogue=tile is safe anywhere.
    pad_split (none, rows)        rows: after the GEMM call is in place, partition(<loop>, b0, b1)
                                  cuts the block loop (the copy's pixel loop when one block covers
                                  the plane) at the blocks that lie wholly in the interior output
                                  rows (found by range analysis of the padding test,
                                  interior_rows); each part's copy keeps only the tests its range
                                  does not decide, so the interior copies have no row test (the
                                  column test stays, hoisted by unswitch). Composes with `cols`
                                  when some block lies wholly inside; refused otherwise.
    cache_read_at (block, pixel, plane)  where the im2col columns are copied: per block of cols
                                  (cache_read at the block loop), per pixel just before its
                                  n = 1 GEMM call (one column of scratch), or the whole plane once
                                  (scratch: every column; against the scratch budget).
    cache_write_at (block, pixel) epilogue=tile only: the int32 tile per block [cols, out_c] or
                                  per pixel [out_c] (cache_write at oc; n = 1 GEMM calls).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..tir.nodes import Call, For, LetStmt, Load, PrimFunc, Select, Store, substitute, walk
from .conv_mve import CONV_KERNEL_DOMAIN, layer_refusal
from .copy_intrin import COPY_MVE_KERNEL, WIDEN_KERNEL
from .knobs import declare_knob
from ..tir.intrinsics_gemm import (PANEL_ROWS, RQ_AWAY_KERNEL, RQ_CHUNK, RQ_COLS_PANELS, RQ_LOOP_ORDERS,
                                   RQ_RECORD_KERNELS, RQ_TILES, gemm_kernel_name, rq_kernel_name)
from ..tir.intrinsics_gemm_mixed import MIXED_KERNEL
from .loop_xform import proven, unswitch, value_range
from .tensorize import affine
from .primitives import ScheduleError, find_loop
from .trace import Schedule
from .variants import kernel_set

COLS_DOMAIN = declare_knob("max_cols", (1, 2, 4, 8, 16, 32), "conv2d: most output pixels per GEMM block")
# The im2col buffer's cap, in bytes: the columns of a block are its largest pixel count that
# divides the output plane and fits (the tuner trades it against arena). The default is per
# kernel set: the DSP kernels walk one column at a time, so a small block costs only a few calls
# more; the portable C and Helium kernels work on pairs of columns, and a block of 5 (kws's
# 125-pixel plane under 1 KiB) leaves a fifth of them to the one-column path (measured on kws:
# +9% instructions on the Cortex-M3, +14% on the M55 against 2 KiB).
COL_BYTES_DOMAIN = declare_knob("col_bytes_max", (256, 512, 1024, 2048, 4096, 8192),
                                "conv2d: the im2col buffer's cap, bytes (scratch against calls)")
COL_BYTES_MAX = {"dsp": 1024, "c": 2048, "mve": 2048}
# Output units of a fully connected layer per int32 accumulator tile (the last: all of them).
FC_ACC_ROWS_DOMAIN = declare_knob("acc_rows", (4, 8, 16, 32, 64, 1 << 30),
                                  "fully_connected: output units per int32 accumulator tile (last: all)")
FC_ACC_ROWS = 64
# A fully connected layer with int16 weights on DSP: its int8 input row read in place by the
# mixed kernel (default: no scratch, so the arena never refuses it) or widened into scratch.
FC_INPUT_DOMAIN = declare_knob("fc_input", ("int8", "int16"),
                               "fully_connected with int16 weights (dsp): the input row read as int8 in place, "
                               "or widened to int16 in scratch")
FC_INPUT = "int8"
# A call costs about as much as copying 8 elements one by one (measured on mps2-an386).
WIDEN_MIN_RUN_DOMAIN = declare_knob("widen_min_run", (4, 8, 16, 1 << 30),
                                    "conv2d on DSP: shortest im2col copy run widened by a call (last: never)")
WIDE_WEIGHTS_DOMAIN = declare_knob("wide_weights", (0, 1), "int16 weights (twice the flash, SMLAD pairs) or int8")
WIDEN_MIN_RUN = 8
# The shortest int8 run the Helium im2col copy hands to mc_copy_mve_s8: the call and its loop
# cost about 12 instructions, the byte loop five per byte.
MVE_COPY_MIN_RUN = 4
# Helium's requantizing GEMM on row-major weights, where they cannot be packed in panels.
MVE_RQ_ROWS_KERNEL = "mc_gemm_rq_mve_s8"
# Where bias and requantization run: in the micro-kernel's epilogue, or in a separate pass
# over an int32 accumulator tile in scratch.
EPILOGUE_DOMAIN = ("fused", "tile")
# The knobs below are recorded in the trace only when they leave their default (the first value),
# so the default schedule's trace is the one it always was.
POINTWISE_DOMAIN = declare_knob("pointwise", ("copy", "direct"),
                                "conv2d 1x1, stride 1, unpadded: im2col copy (copy) or the GEMM reads the int8 "
                                "activations in place (direct: no scratch, int8 weights)")
# pad_split's default is "auto": rows wherever a block lies wholly in the interior rows, else none
# (issue 10's tuning: rows was faster on every padded conv of kws and ResNet it applied to, -0.1%
# to -2.3% per conv, at no scratch; it costs a copy of the GEMM call per part in flash).
PAD_SPLIT_DOMAIN = declare_knob("pad_split", ("auto", "none", "rows"),
                                "conv2d padded: one guarded im2col copy (none), or the blocks of interior output "
                                "rows copied with no row test (rows); auto: rows where it applies")
CACHE_READ_AT_DOMAIN = declare_knob("cache_read_at", ("block", "pixel", "plane"),
                                    "conv2d: im2col columns copied per block of columns (block), per output pixel "
                                    "just before its GEMM call (pixel), or for the whole plane at once (plane)")
CACHE_WRITE_AT_DOMAIN = declare_knob("cache_write_at", ("block", "pixel"),
                                     "conv2d epilogue=tile: the int32 accumulator tile per block of columns "
                                     "(block) or per output pixel (pixel)")

# The loop order of the requantizing int16 DSP kernel (RQ_LOOP_ORDERS): chunks of 8 weight panels
# outermost (the default) or the columns. They differ only where the rows fill more than one
# chunk, so "columns" is offered for 33..64 rows (RQ_COLS_PANELS panels per assembly call), k a
# multiple of 8 (the assembly path).
GEMM_LOOP_ORDER_DOMAIN = declare_knob("gemm_loop_order", tuple(RQ_LOOP_ORDERS),
                                      "conv2d on DSP (int16, fused): chunks of 8 weight panels outermost (panels) "
                                      "or the columns (one assembly call per column)")
# The register tile of the requantizing int16 DSP kernel (RQ_TILES): 4x1 (four weight rows times
# one column, the default) or 4x2 (two columns share each weight LDM; the im2col copy writes the
# columns pair-interleaved, interleave_columns). Offered where k % 8 == 0 and m % 4 == 0. A 2x2
# tile (CMSIS-NN's) is not offered: with LDR per row and column it takes 8 instructions per 8 MACs
# where the panel loops take 5.5, and it does not fit the four-row panels.
# Its default is "auto" (issue 10's tuning: 4x2 took kws's pointwise convs -2.4% each and ResNet's
# 16- and 32-channel convs up to -4.8%, and cost +0.5% only where the input has one channel, whose
# copies write the interleaved layout element by element, and +1.1% on ResNet's 16-channel 3x3
# convs, whose blocks are two columns): 4x2 where it is offered, the input channels are runs the
# im2col copy widens by a call (>= widen_min_run) and a block has 4 columns or more, else 4x1.
GEMM_TILE_DOMAIN = declare_knob("gemm_tile", ("auto",) + tuple(RQ_TILES),
                                "conv2d on DSP (int16, fused): register tile of the GEMM kernel, 4 weight rows times "
                                "1 or 2 columns (4x2: pair-interleaved im2col columns); auto: 4x2 where offered "
                                "and the input channels are widened by calls")

# How the im2col copies the input (schedule/window.py): one column per output pixel (columns), or
# per block of a row's pixels the window of input columns they share, read by the GEMM as
# overlapping columns (window: each input element copied up to KH times instead of KH*KW; the
# int16 DSP kernel with the 4x1 tile). auto: window where it applies and the columns would not
# take the 4x2 tile (fewer cycles there), else columns.
IM2COL_DOMAIN = declare_knob("im2col", ("auto", "columns", "window"),
                             "conv2d on DSP (int16, fused): the im2col copies a column per output pixel (columns) or a "
                             "row block's shared window of input columns, read as overlapping columns (window); "
                             "auto: window where it applies and the columns would run the 4x1 tile")


class KnobRefused(ScheduleError):
    """A knob value the conv2d schedule cannot carry out on this kernel (the message says why):
    passed on to the caller instead of falling back to another schedule."""


def _loops(f: PrimFunc) -> dict[str, For]:
    return {n.var.name: n for n in walk(f.body) if isinstance(n, For)}


def _variant(target) -> str:
    return kernel_set(target)


def unswitch_padding(sch: Schedule) -> None:
    """Hoist the padding test of the im2col copy out of its innermost loop when none of it
    changes there (a run of channels), so the loop is a plain widening copy. A partial hoist
    (only the row test, one channel) measured no faster on kws_ref_model's first conv."""
    for loop in copy_loops(sch):
        if not any(isinstance(n, Select) for n in walk(loop.body)):
            continue
        try:
            trial = unswitch(sch.func, loop.var.name)
        except ScheduleError:
            continue
        if not any(isinstance(n, Select) for n in walk(find_loop(trial, loop.var.name))):
            sch.unswitch(loop.var.name)


def copy_loops(sch: Schedule) -> list[For]:
    """Innermost loops that store into scratch (the im2col copy)."""
    return [n for n in walk(sch.func.body) if isinstance(n, For)
            and not any(isinstance(c, For) for c in walk(n.body))
            and any(isinstance(c, Store) and c.buffer.scope == "scratch" for c in walk(n.body))]


def tensorize_runs(sch: Schedule, min_run: int, kernel: str) -> None:
    """Each copy loop (copy_loops) of min_run elements or more that `kernel`'s tensor intrinsic
    matches: one call of it."""
    for loop in copy_loops(sch):
        if loop.extent >= min_run:
            try:
                sch.tensorize(loop.var.name, kernel)
            except ScheduleError:
                pass


def _p4_pads(m: int, k: int, dtype: str) -> bool:
    """Whether packing an m x k weight matrix in panels adds zeros (rows to a multiple of 4,
    k to a multiple of the kernel's group): bytes a board with no flash to spare should not pay."""
    return m % PANEL_ROWS != 0 or k % {"s16": 2, "s8": 4}[dtype] != 0


def _tensorize(sch: Schedule, loop: str, target, dtype: str, packed: bool = True) -> None:
    """On DSP cores the weights are repacked in panels of four rows when the nest allows it
    (one LDM feeds four rows) and `packed`; otherwise, and on other cores, the row-major kernel."""
    if _variant(target) == "dsp" and packed:
        try:
            sch.tensorize(loop, f"mc_gemm_p4_dsp_{dtype}")
            return
        except ScheduleError:
            pass
    sch.tensorize(loop, gemm_kernel_name(_variant(target), dtype))


def output_pixels(func: PrimFunc) -> int:
    """The output plane of a lowered conv2d (its oh and ow loops): the GEMM's columns."""
    loops = _loops(func)
    return (loops["oh"].extent if "oh" in loops else 1) * (loops["ow"].extent if "ow" in loops else 1)


def _pick_cols(pixels: int, depth: int, max_cols: int, col_bytes_max: int, elem: int = 2) -> int:
    """The largest divisor of `pixels` within max_cols whose im2col columns fit the cap."""
    for t in range(min(max_cols, pixels), 0, -1):
        if pixels % t == 0 and (t * depth * elem <= col_bytes_max or t == 1):
            return t
    return 1


def _tap(func: PrimFunc) -> tuple[list[LetStmt], object] | None:
    """The lets of the conv's input tap (ih, iw, ..., xv) and xv's value with the others
    substituted (an expression of the loop vars), or None when there is no let xv."""
    lets = [n for n in walk(func.body) if isinstance(n, LetStmt)]
    mapping, chain = {}, []
    for let in lets:
        chain.append(let)
        value = substitute(let.value, mapping)
        if let.var.name == "xv":
            return chain, value
        mapping[let.var] = value
    return None


def pointwise_refusal(func: PrimFunc) -> str | None:
    """Why `pointwise=direct` does not apply to this conv2d (None: it does): the input must
    already be the column matrix, x[pixel * C + ic] (1x1, stride 1, no padding)."""
    tap = _tap(func)
    if tap is None:
        return "no input tap to read in place"
    value = tap[1]
    loops = _loops(func)
    if any(isinstance(n, Select) for n in walk(value)):
        return "the conv is padded (its taps have a padding test)"
    if not isinstance(value, Load):
        return "the input tap is not a plain load"
    coeffs = affine(value.index, set(loops))
    if coeffs is None:
        return "the input index is not affine in the loops"
    c = coeffs[0]
    ic = next((v for v in c if v not in ("oh", "ow")), None)
    others = set(c) - {"oh", "ow", ic}
    chans = loops[ic].extent if ic else 1
    ow = loops["ow"].extent if "ow" in loops else 1
    want = {"ow": chans, "oh": ow * chans}
    if others or (ic and c[ic] != 1) or any(c.get(n, want[n]) != want[n] for n in ("oh", "ow") if n in loops):
        return "the kernel is not 1x1 with stride 1 (the input is not its own column matrix)"
    return None


def interior_rows(func: PrimFunc) -> tuple[int, int] | str:
    """The output rows [r0, r1) whose taps all lie inside the input rows (their im2col copy
    needs no row test), or why there are none: found by range analysis of the padding test
    with one output row fixed and every other loop over its range."""
    tap = _tap(func)
    loops = _loops(func)
    if tap is None or not any(isinstance(n, Select) for n in walk(tap[0][-1].value)):
        return "the conv is not padded"
    if "oh" not in loops:
        return "the output has one row"
    sel = next(n for n in walk(tap[0][-1].value) if isinstance(n, Select))
    terms = []
    stack = [sel.cond]
    while stack:
        t = stack.pop()
        if getattr(t, "op", None) == "land":
            stack += [t.b, t.a]
        else:
            terms.append(t)
    lets = {let.var: let.value for let in tap[0][:-1]}
    rows = loops["oh"].extent
    settled = []
    for r in range(rows):
        env = {n: (0, lp.extent - 1) for n, lp in loops.items()}
        env["oh"] = (r, r)
        for var, value in lets.items():
            got = value_range(value, env)
            if got is not None:
                env[var.name] = got
        settled.append(sum(proven(t, env) is True for t in terms))
    best = max(settled)
    inside = [r for r in range(rows) if settled[r] == best]
    if best == 0 or len(inside) == rows:
        return "no output row has all its taps inside the input rows and another not (the padding is in columns only)"
    r0, r1 = inside[0], inside[-1] + 1
    if inside != list(range(r0, r1)):
        return "the interior rows are not one run"
    return r0, r1


@dataclass(frozen=True)
class GemmKnobs:
    """The knobs of an int8 conv2d's GEMM schedule, at their defaults (the tuner's space sets
    them from a config, schedule/spaces.py).
    `cols`: the block of output pixels exactly (the tuner's choice; default: the largest divisor
    of the output plane within max_cols whose im2col columns fit col_bytes_max, None: the
    core's COL_BYTES_MAX). `epilogue` (EPILOGUE_DOMAIN): "fused" requantizes in the
    micro-kernel, "tile" keeps an int32 accumulator tile and a separate epilogue pass; default:
    fused where a kernel exists. `pointwise`, `pad_split`, `cache_read_at`, `cache_write_at`:
    see the module docstring. `loop_order` (GEMM_LOOP_ORDER_DOMAIN), `tile` (GEMM_TILE_DOMAIN)."""

    max_cols: int = 32
    col_bytes_max: int | None = None
    widen_min_run: int = WIDEN_MIN_RUN
    cols: int | None = None
    epilogue: str | None = None
    pointwise: str = "copy"
    pad_split: str = "auto"
    cache_read_at: str = "block"
    cache_write_at: str = "block"
    loop_order: str = "panels"
    tile: str = "auto"
    conv_kernel: str = "auto"
    im2col: str = "auto"


def schedule_conv2d_gemm(func: PrimFunc, target=None, wide: bool | None = None,
                         knobs: GemmKnobs | None = None) -> Schedule | None:
    """The GEMM schedule of an int8 conv2d, or None when it does not apply (float, hybrid).
    `wide` (None: True): int16 weights and columns (SMLAD pairs, twice the weight flash) or
    int8 ones; only DSP cores take int16 (elsewhere it costs flash and gains nothing).
    `knobs` (GemmKnobs) a value of which cannot be carried out on this kernel raises
    KnobRefused with the reason; `loop_order` and `tile` raise ScheduleError, with the reason,
    where a value other than the default does not apply."""
    k = knobs or GemmKnobs()
    max_cols, widen_min_run, cols, epilogue = k.max_cols, k.widen_min_run, k.cols, k.epilogue
    pointwise, pad_split, loop_order, tile = k.pointwise, k.pad_split, k.loop_order, k.tile
    if func.attrs.get("op") != "conv2d" or func.attrs.get("hybrid"):
        return None
    assert loop_order in GEMM_LOOP_ORDER_DOMAIN and tile in GEMM_TILE_DOMAIN, (loop_order, tile)
    assert max_cols in COLS_DOMAIN, max_cols
    col_bytes_max = COL_BYTES_MAX[_variant(target)] if k.col_bytes_max is None else k.col_bytes_max
    assert col_bytes_max in COL_BYTES_DOMAIN, col_bytes_max
    assert widen_min_run in WIDEN_MIN_RUN_DOMAIN, widen_min_run
    w = next((b for b in func.buffers if b.name == "w"), None)
    if w is None or w.dtype != "int8":
        return None
    # plain-C and Helium cores multiply int8 as they are
    wide = (wide is None or wide) and _variant(target) == "dsp"
    if k.conv_kernel != "gemm":
        sch = _layer_kernel(func, target, k)
        if sch is not None:
            return sch
    k = replace(k, col_bytes_max=col_bytes_max)
    assert k.im2col in IM2COL_DOMAIN, k.im2col
    if k.im2col == "auto":
        # window where the columns would run the 4x1 tile: where they take the 4x2 one, its
        # halved weight loads cost fewer cycles than the window saves copying (ResNet-8's 16x16
        # and 8x8 convs: 4.5% fewer instructions with the window, 5% more estimated cycles)
        columns, refused = None, None
        try:
            columns = schedule_conv2d_gemm(func, target, wide, replace(k, im2col="columns"))
        except ScheduleError as e:
            refused = e
        if columns is not None and ("knob", "gemm_tile", "4x2") in [(d.primitive, *d.args)
                                                                   for d in columns.trace.decisions]:
            return columns
        if wide:
            try:
                window = schedule_conv2d_gemm(func, target, wide, replace(k, im2col="window"))
                if window is not None:
                    return window
            except ScheduleError:
                pass
        if refused is not None:
            raise refused
        return columns
    if k.im2col == "window":
        return _conv2d_window(func, target, k, wide)
    if tile == "auto":
        x = next((b for b in func.buffers if b.name == "x"), None)
        block = cols or _pick_cols(output_pixels(func), w.size // w.shape[0], max_cols, col_bytes_max, 2)
        # blocks of 2-3 columns measured slower with 4x2 (ResNet's 16-channel 3x3 convs: +1.1%)
        try_first = (wide and epilogue != "tile" and loop_order == "panels" and pointwise == "copy"
                     and k.cache_read_at == "block" and x is not None and x.shape and x.shape[-1] >= widen_min_run
                     and block >= 4)
        return _first_that_applies(func, target, wide, k, "tile", "4x2" if try_first else None, "4x1")
    if pad_split == "auto":
        # rows where the kernel allows it (a padded conv with a block inside the interior rows)
        return _first_that_applies(func, target, wide, k, "pad_split", "rows" if pointwise != "direct" else None,
                                   "none")
    places = _Places(pointwise, pad_split, k.cache_read_at, k.cache_write_at)
    places.check(func, wide, epilogue)
    choices = (True, False)
    if epilogue is not None:
        assert epilogue in EPILOGUE_DOMAIN, epilogue
        choices = tuple(c for c in choices if c == (epilogue == "fused"))
    knobs = (loop_order, tile) != ("panels", "4x1")
    if tile != "4x1" and (places.direct or places.read_at != "block"):
        raise KnobRefused(f"gemm_tile={tile} reads pair-interleaved im2col blocks: it needs pointwise=copy and "
                          f"cache_read_at=block")
    if knobs:
        why = _knob_refusal(w, target, wide, epilogue, loop_order, tile)
        if why:
            raise ScheduleError(why)
        choices = (True,)
    for fused in choices:
        sch = _conv2d_gemm(func, target, k, wide, fused, places)
        if sch is not None:
            return sch
    if knobs:
        raise ScheduleError(f"gemm_loop_order={loop_order}, gemm_tile={tile}: the requantizing kernel does not apply "
                            f"to {func.name}")
    return None


def _layer_kernel(func: PrimFunc, target, k: GemmKnobs) -> Schedule | None:
    """conv_kernel "auto" or "layer": Helium's whole-layer kernel (conv_mve.py) where it applies
    and the GEMM's knobs are at their defaults; None (auto) to take the im2col GEMM instead.
    "layer" where it cannot apply raises KnobRefused with the reason."""
    assert k.conv_kernel in CONV_KERNEL_DOMAIN, k.conv_kernel
    why = layer_refusal(func)
    if _variant(target) != "mve":
        why = f"it is Helium's kernel (this core's kernels are {_variant(target)})"
    elif why is None and replace(k, conv_kernel="auto", col_bytes_max=None) != GemmKnobs():
        why = "the im2col GEMM's knobs are set (they choose the GEMM)"
    if why is not None:
        if k.conv_kernel == "layer":
            raise KnobRefused(f"conv_kernel=layer: {why}")
        return None
    sch = Schedule(func)
    sch.knob("conv_kernel", "layer")
    try:
        if not any(b.name in ("mult", "shift") for b in func.buffers):
            # (raises on one output channel, or a requantization other than the cheap form)
            sch.apply("requant_arrays", "oc")
        sch.apply("conv2d_layer_mve")
    except ScheduleError as e:
        if k.conv_kernel == "layer":
            raise KnobRefused(f"conv_kernel=layer: {e}") from None
        return None
    return sch


def _first_that_applies(func, target, wide: bool, knobs: GemmKnobs, knob: str, first: str | None,
                        fallback: str) -> Schedule | None:
    """An "auto" knob: the schedule with `knob` = `first` where it applies (no ScheduleError, not
    None), else with `fallback`."""
    if first is not None:
        try:
            sch = schedule_conv2d_gemm(func, target, wide, replace(knobs, **{knob: first}))
            if sch is not None:
                return sch
        except ScheduleError:
            pass
    return schedule_conv2d_gemm(func, target, wide, replace(knobs, **{knob: fallback}))


def _knob_refusal(w, target, wide: bool, epilogue: str | None, loop_order: str, tile: str) -> str | None:
    """Why the GEMM kernel knobs (not both the default) do not apply, or None."""
    m, depth = w.shape[0], w.size // w.shape[0]
    what = f"gemm_tile={tile}" if tile != "4x1" else f"gemm_loop_order={loop_order}"
    if tile != "4x1" and loop_order != "panels":
        return f"{what} runs chunks of panels outermost (gemm_loop_order=columns is a 4x1 kernel)"
    # Both are choices of the requantizing int16 DSP kernel's assembly path.
    if _variant(target) != "dsp" or not wide:
        return f"{what} is a choice of the int16 DSP kernel (needs a DSP core and wide_weights=1)"
    if epilogue == "tile":
        return f"{what} is a choice of the requantizing kernel (needs epilogue fused or auto)"
    if depth % 8:
        return f"{what} is a choice of the assembly loop, which needs k a multiple of 8 (k = {depth})"
    rows = m - m % PANEL_ROWS
    if tile != "4x1" and m % PANEL_ROWS:
        return f"{what} needs whole panels of {PANEL_ROWS} rows ({m} rows)"
    if tile == "4x1" and rows <= PANEL_ROWS * RQ_CHUNK:
        return f"{what}: the {m} rows fill one chunk of {RQ_CHUNK} panels, where both orders are the same loop"
    if tile == "4x1" and rows > PANEL_ROWS * RQ_COLS_PANELS:
        return f"{what} runs at most {PANEL_ROWS * RQ_COLS_PANELS} rows per assembly call ({m} rows)"
    return None


class _Places:
    """The placement knobs of one conv2d schedule (defaults: today's schedule)."""

    def __init__(self, pointwise: str, pad_split: str, cache_read_at: str, cache_write_at: str):
        for name, value, domain in (("pointwise", pointwise, POINTWISE_DOMAIN), ("pad_split", pad_split, PAD_SPLIT_DOMAIN),
                                    ("cache_read_at", cache_read_at, CACHE_READ_AT_DOMAIN),
                                    ("cache_write_at", cache_write_at, CACHE_WRITE_AT_DOMAIN)):
            assert value in domain, (name, value)
        self.direct = pointwise == "direct"
        self.pad_split, self.read_at, self.write_at = pad_split, cache_read_at, cache_write_at
        self.knobs = [(n, v) for n, v, d in (("pointwise", pointwise, "copy"), ("pad_split", pad_split, "none"),
                                              ("cache_read_at", cache_read_at, "block"),
                                              ("cache_write_at", cache_write_at, "block")) if v != d]
        self.rows: tuple[int, int] | None = None

    def check(self, func: PrimFunc, wide: bool, epilogue: str | None) -> None:
        """KnobRefused for the combinations that cannot be carried out, with the reason."""
        if self.direct:
            if wide:
                raise KnobRefused("pointwise=direct reads the int8 activations in place: there is no int16 "
                                  "column to read (set wide_weights=0)")
            why = pointwise_refusal(func)
            if why:
                raise KnobRefused(f"pointwise=direct needs a 1x1, stride-1, unpadded conv: {why}")
            if self.read_at != "block" or self.pad_split != "none":
                raise KnobRefused("pointwise=direct makes no im2col copy: cache_read_at and pad_split have nothing "
                                  "to place")
        if self.write_at != "block" and epilogue != "tile":
            raise KnobRefused(f"cache_write_at={self.write_at} places the int32 tile of epilogue=tile; the fused "
                              "epilogue keeps no tile")
        if self.pad_split != "none":
            rows = interior_rows(func)
            if isinstance(rows, str):
                raise KnobRefused(f"pad_split={self.pad_split}: {rows}")
            self.rows = rows


def _partition_interior(sch: Schedule, places: _Places, loop: str, unit: int, row: int) -> None:
    """pad_split=rows: cut `loop` (each iteration `unit` output pixels; `row` pixels per output
    row) at the bounds of the iterations that lie wholly in the interior rows."""
    r0, r1 = places.rows
    if loop not in _loops(sch.func):
        # e.g. a copy whose pixel loop was unrolled away (a plane of a few pixels)
        raise KnobRefused(f"pad_split=rows: the im2col copy has no loop {loop} to cut")
    n = _loops(sch.func)[loop].extent
    b0, b1 = -(-r0 * row // unit), (r1 * row) // unit
    if b0 >= b1:
        raise KnobRefused(f"pad_split=rows: no block of {unit} output pixels lies wholly in the interior rows "
                          f"{r0}..{r1 - 1}")
    cuts = [b for b in (b0, b1) if 0 < b < n]
    sch.apply("partition", loop, *cuts)


def _conv2d_gemm(func: PrimFunc, target, knobs: GemmKnobs, wide: bool, fused: bool,
                 places: _Places) -> Schedule | None:
    """`fused`: one requantizing micro-kernel call per block of columns (bias, requantization
    and clamp in its epilogue, no int32 tile); otherwise an accumulator tile in scratch and a
    separate epilogue loop (requantizations the micro-kernels do not implement). `knobs` has
    col_bytes_max set, and its pad_split and tile decided."""
    max_cols, col_bytes_max, widen_min_run = knobs.max_cols, knobs.col_bytes_max, knobs.widen_min_run
    cols, loop_order, tile = knobs.cols, knobs.loop_order, knobs.tile
    w = next(b for b in func.buffers if b.name == "w")
    depth = w.size // w.shape[0]
    dtype = "s16" if wide else "s8"
    sch = Schedule(func)
    try:
        sch.knob("max_cols", max_cols)
        sch.knob("col_bytes_max", col_bytes_max)
        if _variant(target) == "dsp" and wide:
            sch.knob("widen_min_run", widen_min_run)
        sch.knob("wide_weights", int(wide))
        for name, value in places.knobs:
            sch.knob(name, value)
        loops = _loops(func)
        pix = [n for n in ("oh", "ow") if n in loops]
        row = loops["ow"].extent if "ow" in loops else 1
        if places.direct:
            # the input index as an expression of the loops, so fusing makes it pixel * C + ic
            for let in _tap(func)[0][:-1]:
                sch.apply("inline_let", let.var.name)
        if len(pix) == 2:
            sch.fuse("oh", "ow")
            pix = ["oh_ow"]
        at_cache, inner = None, None
        if pix:
            pixels = _loops(sch.func)[pix[0]].extent
            if cols is None:
                # read in place (direct) with the fused epilogue, a block takes no scratch: only
                # max_cols bounds it (with a tile: the copy's block, so only the columns go away)
                cap = COL_BYTES_DOMAIN[-1] * depth if places.direct and fused else col_bytes_max
                cols = _pick_cols(pixels, depth, max_cols, cap, 2 if wide else 1)
            if cols < pixels:
                sch.split(pix[0], cols)
                at_cache, inner = f"{pix[0]}_o", f"{pix[0]}_i"
            else:
                inner = pix[0]
        at_acc = inner or ("oc" if "oc" in loops else None)
        if at_acc is None:
            return None
        if places.read_at == "pixel" and inner is None:
            raise KnobRefused("cache_read_at=pixel: the output has one pixel (the block is the pixel)")
        if places.read_at == "plane" and at_cache is None:
            raise KnobRefused("cache_read_at=plane: one block covers the plane (plane is the block)")
        if places.write_at == "pixel" and inner is None:
            raise KnobRefused("cache_write_at=pixel: the output has one pixel (the block is the pixel)")
        if (places.read_at == "pixel" or places.write_at == "pixel") and cols == 1:
            raise KnobRefused("a per-pixel placement with blocks of one column (cols=1) is the block placement")
        if not fused:
            sch.cache_write("acc", at_acc if places.write_at == "block" else "oc")
        # the reduction nest tensorized: the block (today), or one pixel's (n = 1) when the copy or
        # the tile sits inside the pixel loop
        per_pixel = places.read_at == "pixel" or (not fused and places.write_at == "pixel")
        if per_pixel and "oc" not in loops:
            raise KnobRefused("a per-pixel placement (cache_read_at/cache_write_at=pixel) needs an output channel "
                              "loop; this conv has one output channel")
        gemm_at = ("oc" if per_pixel else at_acc) if fused else ("oc_1" if per_pixel else f"{at_acc}_1")
        # an odd depth's int16 columns an even number apart: the DSP kernel reads them by words
        # (ResNet-8's first convolution, k = 27: the C loop before, 819,872 instructions)
        even = inner if wide and _variant(target) == "dsp" and depth % 2 == 1 and depth >= 8 else None
        if places.direct:
            pass                                  # the GEMM reads x[pixel * C + ic] in place
        elif places.read_at == "block":
            sch.cache_read("xv", at_cache, "int16" if wide else None, even)
        elif places.read_at == "plane":           # (its first loop is not the pixel loop: no spacing)
            sch.cache_read("xv", None, "int16" if wide else None)
        else:                                     # one pixel's column: no rows to space
            sch.cache_read("xv", inner if fused or places.write_at == "pixel" else f"{inner}_1",
                           "int16" if wide else None)
        if places.pad_split == "none":
            _finish_copies(sch, target, widen_min_run, wide)
        if wide:
            sch.pack_constant("w", "int16")
        if fused:
            if not any(b.name in ("mult", "shift") for b in sch.func.buffers):
                sch.apply("requant_arrays", "oc")
            # int8 weights on a board with no flash to spare: no zero padding of the panels.
            variant = _variant(target)
            if variant == "dsp" and not wide and _p4_pads(w.shape[0], depth, dtype):
                variant = "c"
            if places.direct and variant != "dsp":
                # conv2d may write its output over its input (memory/inplace.py, "window": each
                # pixel's output after reading its own taps); read in place, the c and Helium
                # kernels write a column's outputs while still reading the next column's input
                raise KnobRefused(f"pointwise=direct with the fused epilogue needs the dsp kernel that finishes one "
                                  f"column before the next (this one is the {variant} kernel, whose column pairs "
                                  f"the in-place output may overwrite); use epilogue=tile")
            if loop_order != "panels":       # recorded only off the default: default traces stay as they were
                sch.knob("gemm_loop_order", loop_order)
                sch.tensorize(gemm_at, RQ_LOOP_ORDERS[loop_order])
            elif tile != "4x1":
                sch.knob("gemm_tile", tile)
                sch.tensorize(gemm_at, RQ_TILES[tile])
            elif variant == "mve":
                # the weights in panels where the nest allows it (one pointer feeds four rows, so a
                # 4x2 tile stays in registers); otherwise the row-major kernel
                try:
                    sch.tensorize(gemm_at, rq_kernel_name(variant, dtype))
                except ScheduleError:
                    sch.tensorize(gemm_at, MVE_RQ_ROWS_KERNEL)
            else:
                sch.tensorize(gemm_at, rq_kernel_name(variant, dtype))
        else:
            _tensorize(sch, gemm_at, target, dtype, packed=wide or not _p4_pads(w.shape[0], depth, dtype))
        if places.pad_split != "none":
            # after the GEMM call is in place (it is copied into each part as it is)
            if at_cache is None:          # one block: the copy's own pixel loop is cut
                _partition_interior(sch, places, f"{inner}_c" if places.read_at == "block" else inner, 1, row)
            elif places.read_at == "plane":
                _partition_interior(sch, places, f"{at_cache}_c", cols, row)
            else:
                _partition_interior(sch, places, at_cache, cols, row)
            _finish_copies(sch, target, widen_min_run, wide)
        if fused and tile != "4x1":
            # last: the copies (partitioned, widened by calls) write the pair-interleaved layout
            sch.apply("interleave_columns", RQ_TILES[tile])
        if fused and any(isinstance(n, Call) and n.name in RQ_RECORD_KERNELS for n in walk(sch.func.body)):
            sch.apply("drop_unused_constants")      # bias, mult and rshift live on in the records
    except KnobRefused:
        raise
    except ScheduleError:
        if (loop_order, tile) != ("panels", "4x1"):
            raise              # the tuner's choice: say why it does not apply
        return None
    return sch


@dataclass(frozen=True)
class _Window:
    """The geometry im2col=window works with: the output row, the kernel, channels, stride."""

    ow: int
    kh: int
    kw: int
    c: int
    stride: int

    def bytes(self, cols: int) -> int:
        """The int16 window of `cols` pixels: their (cols - 1) * stride + kw input columns."""
        return ((cols - 1) * self.stride + self.kw) * self.kh * self.c * 2


def _window(func: PrimFunc) -> _Window | str:
    loops = _loops(func)
    if not all(n in loops for n in ("oh", "ow", "kh", "kw")):
        return "it needs a 2-D kernel over output rows and columns (loops oh, ow, kh, kw)"
    win = func.attrs.get("window") or {}
    return _Window(*(loops[n].extent for n in ("ow", "kh", "kw")), loops["ic"].extent if "ic" in loops else 1,
                   (win.get("stride") or [1, 1])[1])


def window_cols(func: PrimFunc, max_cols: int, col_bytes_max: int) -> int | str:
    """im2col=window's block: the largest divisor of the output row within max_cols whose window
    of input columns (int16) fits col_bytes_max, or why there is none."""
    g = _window(func)
    if isinstance(g, str):
        return g
    ow, kh, kw, c, stride = g.ow, g.kh, g.kw, g.c, g.stride
    win = func.attrs.get("window") or {}
    if stride >= kw:
        return f"output pixels {stride} apart share no input columns of a kernel {kw} wide"
    if (win.get("dilation") or [1, 1])[1] != 1:
        return "the kernel is dilated (its taps are not one window)"
    if (stride * kh * c) % 2:
        return (f"the overlapping columns start stride*KH*C = {stride * kh * c} elements apart: odd, and the int16 "
                "kernel reads them by words")
    # no more scratch than the int8 columns under the same cap (the compiler keeps a kernel's
    # int16 form only where its scratch does not lift the int8 plan's peak, compiler/plan.py)
    depth = kh * kw * c
    cap = min(col_bytes_max, _pick_cols(output_pixels(func), depth, max_cols, col_bytes_max, 1) * depth)
    for t in range(min(max_cols, ow), 0, -1):
        if ow % t == 0 and g.bytes(t) <= cap:
            return t
    return f"the window of one pixel ({kw * kh * c * 2} bytes) is over col_bytes_max {col_bytes_max}"


def _conv2d_window(func: PrimFunc, target, k: GemmKnobs, wide: bool) -> Schedule:
    """im2col=window (schedule/window.py): per block of `cols` pixels of one output row, the
    input columns they share cached once as int16 ([u][kh][ic]), read by the requantizing 4x1
    DSP kernel as overlapping columns (ldb = stride*KH*C) against weights laid out (oc, kw, kh,
    ic). KnobRefused, with the reason, where it does not apply."""
    why = None
    if not wide or _variant(target) != "dsp":
        why = "it is a layout of the int16 DSP kernel's columns (needs a DSP core and wide_weights=1)"
    elif k.epilogue == "tile" or k.tile == "4x2" or k.pointwise != "copy" or k.cache_read_at != "block" \
            or k.cache_write_at != "block":
        why = ("it feeds the fused 4x1 kernel from a per-block copy (epilogue fused, gemm_tile 4x1, pointwise copy, "
               "cache_read_at and cache_write_at block)")
    cols = window_cols(func, k.max_cols, k.col_bytes_max) if why is None else why
    if isinstance(cols, str):
        raise KnobRefused(f"im2col=window: {cols}")
    g = _window(func)        # (a _Window: window_cols has refused every other case)
    ow = g.ow
    if k.cols is not None:
        if ow % k.cols:
            raise KnobRefused(f"im2col=window: a block of {k.cols} pixels does not divide the output row of {ow}")
        if k.cols > 1 and g.bytes(k.cols) > k.col_bytes_max:
            raise KnobRefused(f"im2col=window: the window of {k.cols} pixels is over col_bytes_max {k.col_bytes_max}")
        cols = k.cols
    if k.loop_order != "panels":
        w = next(b for b in func.buffers if b.name == "w")
        why = _knob_refusal(w, target, wide, "fused", k.loop_order, "4x1")
        if why:
            raise KnobRefused(f"im2col=window: {why}")
    pad_split = k.pad_split
    if pad_split == "auto":
        pad_split = "rows" if isinstance(interior_rows(func), tuple) else "none"
    places = _Places("copy", pad_split, "block", "block")
    places.check(func, wide, "fused")
    sch = Schedule(func)
    try:
        sch.knob("max_cols", k.max_cols)
        sch.knob("col_bytes_max", k.col_bytes_max)
        sch.knob("widen_min_run", k.widen_min_run)
        sch.knob("wide_weights", 1)
        for name, value in places.knobs:
            sch.knob(name, value)
        sch.knob("im2col", "window")
        block, pixel = ("ow_o", "ow_i") if cols < ow else ("oh", "ow")
        if cols < ow:
            sch.split("ow", cols)
        sch.reorder("kw", "kh")
        sch.apply("transpose_constant", "w", 0, 2, 1, 3)
        sch.apply("cache_window", "xv", block, pixel, "kw", "int16")
        if pad_split == "none":
            _finish_copies(sch, target, k.widen_min_run, True)
        sch.pack_constant("w", "int16")
        if not any(b.name in ("mult", "shift") for b in sch.func.buffers):
            sch.apply("requant_arrays", "oc")
        if k.loop_order != "panels":
            sch.knob("gemm_loop_order", k.loop_order)
        sch.tensorize(pixel, RQ_LOOP_ORDERS[k.loop_order] if k.loop_order != "panels" else rq_kernel_name("dsp", "s16"))
        if pad_split != "none":
            _partition_interior(sch, places, "oh", 1, 1)
            _finish_copies(sch, target, k.widen_min_run, True)
        sch.apply("drop_unused_constants")
    except KnobRefused:
        raise
    except ScheduleError as e:
        raise KnobRefused(f"im2col=window: {e}") from None
    return sch


def _finish_copies(sch: Schedule, target, widen_min_run: int, wide: bool) -> None:
    """The padding test out of the innermost copy loops; on DSP cores int16 runs widened by a
    call, on Helium cores int8 runs copied by a call (mc_copy_mve_s8, 16 bytes per vector)."""
    unswitch_padding(sch)
    if _variant(target) == "dsp" and wide:
        tensorize_runs(sch, widen_min_run, WIDEN_KERNEL)
    elif _variant(target) == "mve" and not wide:
        tensorize_runs(sch, MVE_COPY_MIN_RUN, COPY_MVE_KERNEL)


def schedule_dense_gemm(func: PrimFunc, target=None, wide: bool | None = None,
                        acc_rows: int = FC_ACC_ROWS, fc_input: str = FC_INPUT) -> Schedule | None:
    """The GEMV/GEMM schedule of an int8 fully_connected, or None when it does not apply.
    `wide`: int16 weights (on DSP cores; None: as True; the compiler chooses per kernel against
    the flash budget, schedule/widening.py).
    `acc_rows` (FC_ACC_ROWS_DOMAIN): output units per accumulator tile, for one input row.
    `fc_input` (FC_INPUT_DOMAIN), with int16 weights: "int8" reads the input row in place
    (mc_gemm_p4_dsp_s16_s8, no scratch), "int16" widens it into scratch first (mc_gemm_p4_dsp_s16)."""
    if func.attrs.get("op") != "fully_connected":
        return None
    assert acc_rows in FC_ACC_ROWS_DOMAIN, acc_rows
    assert fc_input in FC_INPUT_DOMAIN, fc_input
    loops = _loops(func)
    at = next((n for n in ("r", "u") if n in loops), None)
    if at is None:
        return None
    variant = _variant(target)
    w = next((b for b in func.buffers if b.name == "w"), None)
    tight = wide is False           # chosen for a board with no flash to spare: no padded panels
    if wide is None:
        wide = w is not None
    # On a DSP core int16 weights feed SMLAD with no extraction at the price of their flash
    # (plain-C cores gain nothing from that): with the input read in place as int8 ("s16_s8",
    # 13 instructions per 16 MACs, no scratch) or widened into scratch ("s16", 13 per 16 plus
    # the copy); int8 weights take 21 per 16.
    dtypes = ("s8",)
    if variant == "dsp" and wide:
        dtypes = ("s16_s8", "s16", "s8") if fc_input == "int8" else ("s16", "s8")
    for dtype in dtypes:
        if dtype == "s16":
            fused = _dense_rq_away(func, at, acc_rows)
            if fused is not None:
                return fused
        sch = Schedule(func)
        try:
            sch.knob("wide_weights", int(dtype != "s8"))
            sch.knob("acc_rows", acc_rows)
            if dtype == "s16":          # recorded only when not the default, as conv2d's placements
                sch.knob("fc_input", "int16")
            tile_at = at
            units = loops["u"].extent if "u" in loops else 1
            if at == "u" and acc_rows < units:
                # One input row: the accumulator tile covers `chunk` units at a time, a divisor
                # of the units that is whole panels of four rows (else one tile for them all).
                chunk = max((t for t in range(PANEL_ROWS, acc_rows + 1, PANEL_ROWS) if units % t == 0), default=units)
                if chunk < units:
                    sch.split("u", chunk)
                    tile_at = "u_i"
            sch.cache_write("acc", tile_at)
            if dtype == "s16":
                sch.cache_read("xv", None, "int16")
            if dtype != "s8":
                sch.pack_constant("w", "int16")
            if dtype == "s16_s8":
                sch.tensorize(f"{tile_at}_1", MIXED_KERNEL)
            else:
                rows = units if tile_at == at else chunk
                _tensorize(sch, f"{tile_at}_1", target, dtype, packed=not (tight and _p4_pads(rows, w.shape[1], dtype)))
        except ScheduleError:
            continue
        return sch
    return None


def _dense_rq_away(func: PrimFunc, at: str, acc_rows: int) -> Schedule | None:
    """fc_input=int16 on DSP cores where the output stage is LiteRT's single rounding away from
    zero with 31 - shift >= 33 (every int8 fully connected layer of our models): no accumulator
    tile, the input row widened into scratch by mc_widen_dsp_s8_s16, and the whole layer one call
    of mc_gemm_p4_rq_away_dsp_s16 (the 4x1 assembly with the rounding in its epilogue: six
    instructions an output where the tile's separate pass took about fifteen). None where the
    kernel does not match."""
    w = next(b for b in func.buffers if b.name == "w")
    units, depth = w.shape[0], w.size // w.shape[0]
    if depth < 8 or depth % 8 or units < 4:
        return None          # its assembly needs k a multiple of 8 and a whole panel (its C loop is slow)
    sch = Schedule(func)
    try:
        sch.knob("wide_weights", 1)
        sch.knob("acc_rows", acc_rows)
        sch.knob("fc_input", "int16")
        sch.cache_read("xv", None, "int16")
        tensorize_runs(sch, WIDEN_MIN_RUN, WIDEN_KERNEL)
        sch.pack_constant("w", "int16")
        sch.tensorize(at, RQ_AWAY_KERNEL)
        sch.apply("drop_unused_constants")
    except ScheduleError:
        return None
    return sch


GEMM_SCHEDULES = (schedule_conv2d_gemm, schedule_dense_gemm)
