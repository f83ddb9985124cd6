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

fully_connected: cache_write(acc), then on DSP cores cache_read(xv, None, int16) and
pack_constant(w, int16) and tensorize with mc_gemm_nt_dsp_s16 (SMLAD on pairs: 11
instructions per 8 MACs, weights twice the flash); elsewhere, or when that does not apply
(asymmetric weights), tensorize with mc_gemm_nt_<variant>_s8 (SXTB16 on both operands).

On Helium (MVE) cores nothing is widened: conv2d caches its im2col columns as int8
(cache_read(xv, p_o) keeps the dtype), keeps its int8 weights, and both conv2d and
fully_connected tensorize with mc_gemm_nt_mve_s8 (VMLADAV: 16 int8 MACs per instruction).

<variant> is the core's kernel set (schedule/variants.py): "mve", "dsp" or "c" (portable C).
Knobs: `max_cols` (COLS_DOMAIN), `col_bytes_max` (the im2col buffer's size cap),
`fc_wide_bytes_max` (the largest int16 weight copy a fully connected layer may make),
`widen_min_run` (WIDEN_MIN_RUN_DOMAIN: the shortest copy run worth a call).
"""

from __future__ import annotations

from ..tir.nodes import For, PrimFunc, Select, Store, walk
from .copy_intrin import WIDEN_KERNEL
from ..tir.intrinsics_gemm import gemm_kernel_name
from .loop_xform import unswitch
from .primitives import ScheduleError, find_loop
from .trace import Schedule
from .variants import kernel_set

COLS_DOMAIN = (1, 2, 4, 8, 16, 32)
COL_BYTES_MAX = 8192
# Largest int16 copy of a fully-connected weight matrix the schedule makes: widening doubles
# flash, and a large layer must still fit a 512 KiB part (ad01_int8 on nucleo-f446re).
FC_WIDE_BYTES_MAX = 32768
# A call costs about as much as copying 8 elements one by one (measured on mps2-an386).
WIDEN_MIN_RUN_DOMAIN = (4, 8, 16, 1 << 30)      # the last: never
WIDEN_MIN_RUN = 8


def _loops(f: PrimFunc) -> dict[str, For]:
    return {n.var.name: n for n in walk(f.body) if isinstance(n, For)}


def _variant(target) -> str:
    return kernel_set(target)


def _unswitch_padding(sch: Schedule) -> None:
    """Hoist the padding test of the im2col copy out of its innermost loop when none of it
    changes there (a run of channels), so the loop is a plain widening copy. A partial hoist
    (only the row test, one channel) measured no faster on kws_ref_model's first conv."""
    for loop in _copy_loops(sch):
        if not any(isinstance(n, Select) for n in walk(loop.body)):
            continue
        try:
            trial = unswitch(sch.func, loop.var.name)
        except ScheduleError:
            continue
        if not any(isinstance(n, Select) for n in walk(find_loop(trial, loop.var.name))):
            sch.unswitch(loop.var.name)


def _copy_loops(sch: Schedule) -> list[For]:
    """Innermost loops that store into scratch (the im2col copy)."""
    return [n for n in walk(sch.func.body) if isinstance(n, For)
            and not any(isinstance(c, For) for c in walk(n.body))
            and any(isinstance(c, Store) and c.buffer.scope == "scratch" for c in walk(n.body))]


def _widen_runs(sch: Schedule, min_run: int) -> None:
    for loop in _copy_loops(sch):
        if loop.extent >= min_run:
            try:
                sch.tensorize(loop.var.name, WIDEN_KERNEL)
            except ScheduleError:
                pass


def _tensorize(sch: Schedule, loop: str, target, dtype: str) -> None:
    """On DSP cores the weights are repacked in panels of four rows when the nest allows it
    (one LDM feeds four rows); otherwise, and on other cores, the row-major kernel."""
    if _variant(target) == "dsp":
        try:
            sch.tensorize(loop, f"mc_gemm_p4_dsp_{dtype}")
            return
        except ScheduleError:
            pass
    sch.tensorize(loop, gemm_kernel_name(_variant(target), dtype))


def _pick_cols(pixels: int, depth: int, max_cols: int, col_bytes_max: int) -> int:
    """The largest divisor of `pixels` within max_cols whose int16 columns fit the cap."""
    for t in range(min(max_cols, pixels), 0, -1):
        if pixels % t == 0 and (t * depth * 2 <= col_bytes_max or t == 1):
            return t
    return 1


def schedule_conv2d_gemm(func: PrimFunc, target=None, max_cols: int = 32, col_bytes_max: int = COL_BYTES_MAX,
                         widen_min_run: int = WIDEN_MIN_RUN) -> Schedule | None:
    """The GEMM schedule of an int8 conv2d, or None when it does not apply (float, hybrid)."""
    if func.attrs.get("op") != "conv2d" or func.attrs.get("hybrid"):
        return None
    assert max_cols in COLS_DOMAIN, max_cols
    assert widen_min_run in WIDEN_MIN_RUN_DOMAIN, widen_min_run
    w = next((b for b in func.buffers if b.name == "w"), None)
    if w is None or w.dtype != "int8":
        return None
    depth = w.size // w.shape[0]
    sch = Schedule(func)
    try:
        loops = _loops(func)
        pix = [n for n in ("oh", "ow") if n in loops]
        if len(pix) == 2:
            sch.fuse("oh", "ow")
            pix = ["oh_ow"]
        at_cache, inner = None, None
        if pix:
            pixels = _loops(sch.func)[pix[0]].extent
            cols = _pick_cols(pixels, depth, max_cols, col_bytes_max)
            if cols < pixels:
                sch.split(pix[0], cols)
                at_cache, inner = f"{pix[0]}_o", f"{pix[0]}_i"
            else:
                inner = pix[0]
        at_acc = inner or ("oc" if "oc" in loops else None)
        if at_acc is None:
            return None
        sch.cache_write("acc", at_acc)
        if _variant(target) == "mve":   # Helium multiplies int8 as it is: no widened copies
            sch.cache_read("xv", at_cache)
            _unswitch_padding(sch)
            _tensorize(sch, f"{at_acc}_1", target, "s8")
            return sch
        sch.cache_read("xv", at_cache, "int16")
        _unswitch_padding(sch)
        if _variant(target) == "dsp":
            _widen_runs(sch, widen_min_run)
        sch.pack_constant("w", "int16")
        _tensorize(sch, f"{at_acc}_1", target, "s16")
    except ScheduleError:
        return None
    return sch


def schedule_dense_gemm(func: PrimFunc, target=None, fc_wide_bytes_max: int = FC_WIDE_BYTES_MAX) -> Schedule | None:
    """The GEMV/GEMM schedule of an int8 fully_connected, or None when it does not apply."""
    if func.attrs.get("op") != "fully_connected":
        return None
    loops = _loops(func)
    at = next((n for n in ("r", "u") if n in loops), None)
    if at is None:
        return None
    variant = _variant(target)
    w = next((b for b in func.buffers if b.name == "w"), None)
    widen = w is not None and w.size * 2 <= fc_wide_bytes_max
    # On a DSP core int16 operands feed SMLAD with no extraction (1.4 instead of 2 instructions
    # per MAC) at the price of int16 weights in flash; plain-C cores gain nothing from that.
    for dtype in (("s16", "s8") if variant == "dsp" and widen else ("s8",)):
        sch = Schedule(func)
        try:
            sch.cache_write("acc", at)
            if dtype == "s16":
                sch.cache_read("xv", None, "int16")
                sch.pack_constant("w", "int16")
            _tensorize(sch, f"{at}_1", target, dtype)
        except ScheduleError:
            continue
        return sch
    return None


GEMM_SCHEDULES = (schedule_conv2d_gemm, schedule_dense_gemm)
