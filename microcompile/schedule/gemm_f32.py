"""float32 conv2d and fully_connected as calls of the register-blocked FPU GEMM micro-kernel
(mc_gemm_p4_[min_|minmax_]fpu_f32, runtime_c/kernels/mc_gemm_f32.c; declared in tir/intrinsics_gemm_f32.py),
on cores with a hardware FPU only (`target.fpu`); on Helium cores its vector twin
(mc_gemm_p4_[min_|minmax_]mve_f32, runtime_c/kernels/mve/mc_gemm_f32_mve.c: a panel's four rows in
one vector, one VFMA by scalar per column and k) and the copy by vectors (mc_copy_mve_f32); elsewhere the lowered loops stay as they are
(soft float: a library call per operation, where the kernel's fmaf would be one too).

conv2d, as the int8 GEMM schedule (gemm_schedule.py) with nothing to widen or requantize:

    fuse(oh, ow)                   one pixel loop over the output plane
    split(oh_ow, cols)             blocks of `cols` output pixels (the GEMM's columns)
    cache_read(xv, oh_ow_o)        the block's padded input taps as float32 columns in scratch
                                   (im2col; a padded tap reads 0.0, as the lowering's select)
    unswitch(<copy loop>)          the padding test once per run of channels where it can
    tensorize(<copy loop>, mc_copy_f32)  runs of >= COPY_MIN_RUN channels copied eight at a time
    tensorize(oh_ow_i, mc_gemm_p4_<clamp>fpu_f32)
                                   the whole block, bias, sums and activation clamp, in one call;
                                   the weights repacked in panels of four rows

fully_connected: tensorize(r or u, mc_gemm_p4_<clamp>fpu_f32) on the lowered nest, the input rows
read in place as the columns (no scratch).

The sums keep the lowering's order (bias first, then the taps in (kh, kw, ic) order), each
product fused into the sum with one rounding (VFMA) where the loops round the product and the
sum: results differ from the reference by float32 roundings only (ir/compare's tolerance).

Knobs (spaces.py, family "f32_fpu"): `cols` (COLS_KNOB_DOMAIN, 0: the default's choice) and
`col_bytes_max` (COL_BYTES_DOMAIN): the largest divisor of the output plane within MAX_COLS
whose columns fit the cap, but at least the smallest divisor >= TILE_COLS where one exists (the
4x4 register tile needs four columns; a block of fewer runs the 4x1 tile, about 40% more
instructions per MAC), so the cap is soft for deep kernels.
"""

from __future__ import annotations

import numpy as np

from ..tir.intrinsics_gemm import pack_panels4
from ..tir.intrinsics_gemm_f32 import (ACT_MAX, ACT_MIN, COPY_F32_KERNEL, COPY_F32_MVE_KERNEL, GEMM_F32_KERNELS,
                                       GEMM_F32_MVE_KERNELS, GEMM_F32_PARAMS, TILE_COLS)
from ..tir.nodes import (Address, BinOp, Buffer, Call, Evaluate, FloatImm, For, IntImm, LetStmt, Load, PrimFunc,
                         substitute, walk)
from .epilogue import eval_int, unit_load
from .copy_intrin import copy_emitter, copy_run
from .gemm_schedule import tensorize_runs, unswitch_padding
from .primitives import ScheduleError, weights_name
from .tensorize import accumulated_product, accumulation_nest, affine, perfect_nest, tensor_intrin
from .trace import Schedule
from .variants import kernel_set

# The shortest run of channels the im2col copy hands to mc_copy_f32 (2.5 instructions per
# element against about 5 in the copy loop; a call costs about as much as 8 elements).
COPY_MIN_RUN = 8
# The im2col block's byte cap by default: kws's 25-pixel blocks of 64-deep columns (6.4 KiB).
F32_COL_BYTES_MAX = 8192
MAX_COLS = 32


def f32_gemm_applies(func: PrimFunc, target) -> bool:
    """A float32 conv2d or fully_connected (float weights: not the hybrid int8-weight conv) on
    a core with a hardware FPU."""
    w = next((b for b in func.buffers if b.name == "w"), None)
    return (func.attrs.get("op") in ("conv2d", "fully_connected") and not func.attrs.get("hybrid")
            and w is not None and w.dtype == "float32" and bool(getattr(target, "fpu", False)))


# ---------------------------------------------------------------- the tensor intrinsic

def clamp_bits(e, acc: Buffer) -> tuple[int, float, float] | None:
    """(act bits, lo, hi) of min(max(acc, lo), hi) with either bound left out (lower/common.clamp)."""
    act, lo, hi = 0, 0.0, 0.0
    if isinstance(e, BinOp) and e.op == "min" and isinstance(e.b, FloatImm):
        act, hi, e = act | ACT_MAX, e.b.value, e.a
    if isinstance(e, BinOp) and e.op == "max" and isinstance(e.b, FloatImm):
        act, lo, e = act | ACT_MIN, e.b.value, e.a
    if not (isinstance(e, Load) and e.buffer is acc):
        return None
    return act, lo, hi


def _match(loop: For) -> dict | None:
    """The float block as conv2d and fully_connected lower it (after cache_read for conv2d):

        for j? { for oc? { acc = bias[oc]; for k1 { .. for kr { acc = acc + B[..] * A[..] } }
                           y[Y + j*ldy + oc] = clamp(acc) } }

    A a whole constant [m, k] (row oc at oc*k; no oc loop: one row), its k loops one contiguous
    run in both A and B; j (the columns) indexes B and y only."""
    nest = accumulation_nest(loop, "float32")
    if nest is None:
        return None
    chain, acc, init, taps, out = nest
    kloops, tap = perfect_nest(taps)
    while isinstance(tap, LetStmt):
        tap = substitute(tap.body, {tap.var: tap.value})
    loads = accumulated_product(tap, acc)
    if loads is None or not all(isinstance(x, Load) and x.buffer.dtype == "float32" for x in loads):
        return None
    outer = {f.var.name for f in chain}
    kvars = {f.var.name for f in kloops}
    a = next((x for x in loads if x.buffer.scope == "const"), None)
    b = next((x for x in loads if x is not a), None)
    if a is None or b is None:
        return None
    fa, fb, fy = affine(a.index, outer | kvars), affine(b.index, outer | kvars), affine(out.index, outer)
    if fa is None or fb is None or fy is None:
        return None
    stride = 1                    # the k loops: one contiguous run in both operands
    for f in reversed(kloops):
        if fa[0].get(f.var.name) != stride or fb[0].get(f.var.name) != stride:
            return None
        stride *= f.extent
    k = stride
    # the rows (oc): the chain loop A's index walks; the columns (j): the other one
    oc = next((f for f in chain if f.var.name in fa[0]), None)
    col = next((f for f in chain if f is not oc), None)
    if len(chain) == 2 and (oc is None or chain[-1] is not oc):
        return None
    m = oc.extent if oc else 1
    if {n: c for n, c in fa[0].items() if n not in kvars} != ({oc.var.name: k} if oc else {}) \
            or eval_int(fa[1], {}) != 0 or a.buffer.size != m * k:
        return None                              # A: the whole weight matrix, rows of k
    b_outer = {n: c for n, c in fb[0].items() if n not in kvars}
    if set(b_outer) - ({col.var.name} if col else set()):
        return None
    bias = unit_load(init.value, oc.var.name) if oc else (
        (init.value.buffer, init.value.index) if isinstance(init.value, Load) else None)
    if bias is None or bias[0].scope != "const" or bias[0].dtype != "float32" or eval_int(bias[1], {}) != 0:
        return None
    if (oc and fy[0].get(oc.var.name) != 1) or set(fy[0]) - outer:
        return None
    if col is not None and not (col.var.name in b_outer and col.var.name in fy[0]):
        return None
    ldb = b_outer[col.var.name] if col else k
    ldy = fy[0][col.var.name] if col else m
    clamp = clamp_bits(out.value, acc)
    if clamp is None or out.buffer.dtype != "float32" or (col is not None and (ldy < m or ldb < k)):
        return None
    packed = pack_panels4(np.asarray(a.buffer.data).reshape(m, k), 1, weights_name(a.buffer))
    new = Buffer(a.buffer.name, "float32", (packed.size,), "const", data=packed,
                 comment=f"{a.buffer.comment} (panels of 4 rows)")
    return {"y": out.buffer, "ybase": fy[1], "a": new, "b": b.buffer, "bbase": fb[1], "bias": bias[0],
            "m": m, "n": col.extent if col else 1, "k": k, "ldb": ldb, "ldy": ldy, "clamp": clamp,
            "rebind": {a.buffer: new}}


def _emitter(kernel: str):
    def emit(bind: dict):
        _, lo, hi = bind["clamp"]
        params = GEMM_F32_PARAMS(m=bind["m"], n=bind["n"], k=bind["k"], ldb=bind["ldb"], ldy=bind["ldy"])
        args = (Address(bind["y"], bind["ybase"]), Address(bind["a"], IntImm(0)), Address(bind["b"], bind["bbase"]),
                Address(bind["bias"], IntImm(0)), FloatImm(lo), FloatImm(hi), params)
        return Evaluate(Call(kernel, args, "void"))
    return emit


def _matcher(act: int):
    def match(loop: For) -> dict | None:
        bind = _match(loop)
        return bind if bind is not None and bind["clamp"][0] == act else None
    return match


for _kernels, _core in ((GEMM_F32_KERNELS, "fpu"), (GEMM_F32_MVE_KERNELS, "Helium")):
    for _act, _name in _kernels.items():
        tensor_intrin(_name, _emitter(_name),
                      doc=f"float32 y = clamp(bias + A * B^T), A in panels of 4 rows ({_core})")(_matcher(_act))


def gemm_f32_kernels(target) -> dict[int, str]:
    """The float GEMM kernels of `target`'s core, by clamp: Helium's float vectors where the
    core has them (MVE-F, `target.mve_float`: the Cortex-M55), else the FPU's."""
    mve = kernel_set(target) == "mve" and bool(getattr(target, "mve_float", False))
    return GEMM_F32_MVE_KERNELS if mve else GEMM_F32_KERNELS


def _tensorize(sch: Schedule, loop: str, target) -> None:
    """tensorize(loop, <the kernel of the block's clamp>); ScheduleError where none matches."""
    for name in gemm_f32_kernels(target).values():
        try:
            sch.tensorize(loop, name)
            return
        except ScheduleError:
            continue
    raise ScheduleError(f"{sch.func.name}: loop {loop} matches no float32 GEMM kernel")


for _name in (COPY_F32_KERNEL, COPY_F32_MVE_KERNEL):
    tensor_intrin(_name, copy_emitter(_name), doc="float32 dst = src, a run (the im2col copy)")(
        lambda loop: copy_run(loop, "float32", "float32"))


# ---------------------------------------------------------------- the schedules

def _loops(f: PrimFunc) -> dict[str, For]:
    return {n.var.name: n for n in walk(f.body) if isinstance(n, For)}


def pick_cols_f32(pixels: int, depth: int, col_bytes_max: int, max_cols: int = MAX_COLS) -> int:
    """The block of output pixels: the largest divisor of `pixels` within max_cols whose float
    columns fit col_bytes_max, raised to the smallest divisor >= TILE_COLS (within max_cols)
    when that is below it."""
    divisors = [d for d in range(1, min(pixels, max_cols) + 1) if pixels % d == 0]
    best = max(d for d in divisors if d == 1 or d * depth * 4 <= col_bytes_max)
    if best < TILE_COLS:
        best = next((d for d in divisors if d >= TILE_COLS), best)
    return best


def schedule_conv2d_f32(func: PrimFunc, target=None, cols: int | None = None,
                        col_bytes_max: int = F32_COL_BYTES_MAX) -> Schedule | None:
    """The GEMM schedule of a float32 conv2d on an FPU core, or None where it does not apply
    (not such a conv, no FPU, a nest the kernel does not match: e.g. one output channel).
    `cols` (None: pick_cols_f32) must divide the output plane."""
    if func.attrs.get("op") != "conv2d" or not f32_gemm_applies(func, target):
        return None
    loops = _loops(func)
    w = next(b for b in func.buffers if b.name == "w")
    depth = w.size // w.shape[0]
    pix = [n for n in ("oh", "ow") if n in loops]
    pixels = 1
    for n in pix:
        pixels *= loops[n].extent
    sch, explicit = Schedule(func), cols is not None
    try:
        sch.knob("col_bytes_max", col_bytes_max)
        if cols is not None:
            sch.knob("cols", cols)
        if len(pix) == 2:
            sch.fuse("oh", "ow")
        if not pix:
            at_cache, block = None, "oc"
        else:
            p = "oh_ow" if len(pix) == 2 else pix[0]
            cols = cols or pick_cols_f32(pixels, depth, col_bytes_max)
            if pixels % cols:
                raise ScheduleError(f"{func.name}: a block of {cols} columns does not divide the {pixels} pixels")
            at_cache, block = (f"{p}_o", f"{p}_i") if cols < pixels else (None, p)
            if cols < pixels:
                sch.split(p, cols)
        sch.cache_read("xv", at_cache)
        unswitch_padding(sch)
        _tensorize(sch, block, target)
        mve = gemm_f32_kernels(target) is GEMM_F32_MVE_KERNELS   # one copy call per run
        tensorize_runs(sch, COPY_MIN_RUN, COPY_F32_MVE_KERNEL if mve else COPY_F32_KERNEL)
    except ScheduleError:
        if explicit:
            raise                  # the tuner's choice: say why it does not apply
        return None
    return sch


def schedule_dense_f32(func: PrimFunc, target=None) -> Schedule | None:
    """The float32 fully_connected on an FPU core: the whole layer one call, its input rows
    read in place as the GEMM's columns; None where it does not apply."""
    if func.attrs.get("op") != "fully_connected" or not f32_gemm_applies(func, target):
        return None
    loops = _loops(func)
    at = next((n for n in ("r", "u") if n in loops), None)
    if at is None:
        return None
    sch = Schedule(func)
    try:
        _tensorize(sch, at, target)
    except ScheduleError:
        return None
    return sch


def _default_conv(func: PrimFunc, target=None, **_options) -> Schedule | None:
    return schedule_conv2d_f32(func, target)


def _default_dense(func: PrimFunc, target=None, **_options) -> Schedule | None:
    return schedule_dense_f32(func, target)


# default_schedule's entries (schedule/default.py): (func, target, **options) -> Schedule | None
F32_GEMM_SCHEDULES = (_default_conv, _default_dense)
