"""The depthwise micro-kernels of runtime_c/include/mc_depthwise.h: their intrinsics, the
weight packing they consume, the tensor intrinsic that reaches them, and the default
depthwise schedule.

The lowering (lower/depthwise.py) gives every output region (pixels with one sub-window of
in-bounds taps) a channel loop

    for ic in 0..C {                                         # tensorized: one call per pixel
      acc = bias_r[ic]
      for kh in 0..KH' { for kw in 0..KW' { acc += i32(x[X + kh*x_row + kw*x_col + ic]) * i32(w[...]) } }
      y[Y + ic] = int8(clamp(mc_mul_by_qm_pos_rshift(acc, mult[ic], rshift[ic]) + zp_out, lo, hi))
    }
    --pack_depthwise_s16(w); tensorize(ic, mc_depthwise_<variant>_s8)-->
    mc_depthwise_3x3_dsp_s8(&y[Y], &x[X], &w[W], bias_r, mult, rshift, C, 3, 3, x_row, x_col, ...);

Knob: `depthwise_kernel` in DEPTHWISE_KERNEL_DOMAIN ("kernel": the micro-kernel for the core, the
default; "loops": unrolled tap loops in C); what it does is recorded in the trace.
"""

from __future__ import annotations

import itertools

import numpy as np

from ..ir import budget
from ..tir.intrinsics_depthwise import (DEPTHWISE_LAYER_PARAMS, DEPTHWISE_PARAMS, DEPTHWISE_ROWS_PARAMS,
                                         DEPTHWISE_VARIANTS, LAYER_MVE_KERNEL, ORDER, ROWS_KERNEL, RQ_WINDOWS,
                                         kernel_name, layer_mve_records, pack_layer_mve, requant_records,
                                         rows_pairs, rows_records, rows_scratch_words, rq_kernel_name)
from ..tir.nodes import (Address, Allocate, BinOp, Buffer, Call, Cast, Evaluate, For, IntImm, Load, PrimFunc, Var,
                         SeqStmt, Store, rewrite, walk)
from ..tir.interp import compile_expr
from ..tir.verify import verify_primfunc
from .epilogue import eval_int, requant_epilogue, unit_load
from .knobs import declare_knob
from .primitives import primitive, ScheduleError, weights_name
from .tensorize import accumulated_product, affine, perfect_nest, tensor_intrin
from .trace import Schedule
from .variants import kernel_set

DEPTHWISE_KERNEL_DOMAIN = declare_knob("depthwise_kernel", ("rows", "kernel", "loops"),
                                       "depthwise: a whole-layer kernel, the core's per-pixel micro-kernel, "
                                       "or unrolled loops")
ROWS_BLOCK_DOMAIN = declare_knob("depthwise_rows_block", (0, 64, 32, 16, 8),
                                 "depthwise rows kernel: channels per pass, 0 = all (its scratch grows with it)")


# ---------------------------------------------------------------- pack_depthwise_s16

@primitive("pack_depthwise_s16")
def pack_depthwise_s16(f: PrimFunc, buffer: str) -> PrimFunc:
    """Re-lay the depthwise filter `buffer` (int8 [1, KH, KW, C]) as the int16 groups of four
    channels that mc_depthwise.h's kernels read (zero-padded to a multiple of four). Every
    read is rewritten to the packed position, so values are unchanged.

        w: int8[1,3,3,8];  i32(w[t*8 + c])   --pack_depthwise_s16(w)-->
        w: int16[72];      i32(w[(c/4)*36 + t*4 + (c%2)*2 + (c%4)/2])"""
    old = next((b for b in f.buffers if b.name == buffer and b.scope == "const"), None)
    if old is None or old.dtype != "int8" or len(old.shape) != 4 or old.shape[0] != 1:
        raise ScheduleError(f"{f.name}: {buffer} is not an int8 [1, KH, KW, C] constant")
    _, kh, kw, ch = old.shape
    taps, groups = kh * kw, -(-ch // 4)
    budget.check_tensor(f"{weights_name(old)}, as int16 groups of four channels", (taps, groups * 4), 2)
    data = np.zeros((taps, groups * 4), np.int16)
    data[:, :ch] = np.asarray(old.data).reshape(taps, ch)
    packed = data.reshape(taps, groups, 4)[:, :, ORDER].transpose(1, 0, 2).reshape(-1)
    new = Buffer(old.name, "int16", (packed.size,), "const", data=packed,
                 comment=f"{old.comment} (int16, groups of 4 channels c,c+2,c+1,c+3 per tap)")

    def index(i):
        tap, c = BinOp("div", i, IntImm(ch)), BinOp("mod", i, IntImm(ch))
        lane = BinOp("add", BinOp("mul", BinOp("mod", c, IntImm(2)), IntImm(2)),
                     BinOp("div", BinOp("mod", c, IntImm(4)), IntImm(2)))
        return BinOp("add", BinOp("add", BinOp("mul", BinOp("div", c, IntImm(4)), IntImm(taps * 4)),
                                  BinOp("mul", tap, IntImm(4))), lane)

    def fn(n):
        if isinstance(n, Cast) and n.dtype == "int32" and isinstance(n.value, Cast) \
                and isinstance(n.value.value, Load) and n.value.value.buffer is new:
            return Cast("int32", n.value.value)      # int32(int8(int16 w)) reads the same value
        if isinstance(n, Load) and n.buffer is old:
            return Cast("int8", Load(new, index(n.index)))
        return None
    body = rewrite(f.body, fn)
    return verify_primfunc(PrimFunc(f.name, tuple(new if b is old else b for b in f.buffers), body, dict(f.attrs)))


REQUANT_CALLS = ("mc_mul_by_qm_pos_rshift",)


@primitive("requant_arrays")
def requant_arrays(f: PrimFunc, loop_prefix: str = "ic_") -> PrimFunc:
    """Turn a per-tensor requantization's immediates into per-channel constant arrays, so one
    micro-kernel signature serves both: inside every loop named `loop_prefix`*, the
    multiplier and shift arguments become loads indexed by that loop's variable.

        mc_mul_by_qm_pos_rshift(acc, 1153545039, 8)   --requant_arrays-->
        mc_mul_by_qm_pos_rshift(acc, mult[ic], rshift[ic])      (mult, rshift: int32[C] const)"""
    calls = [(lp, n) for lp in walk(f.body) if isinstance(lp, For) and lp.var.name.startswith(loop_prefix)
             for n in walk(lp.body) if isinstance(n, Call) and n.name in REQUANT_CALLS]
    imms = {(c.args[1].value, c.args[2].value) for _, c in calls
            if isinstance(c.args[1], IntImm) and isinstance(c.args[2], IntImm)}
    if not calls or len(imms) != 1 or any(b.name in ("mult", "rshift") for b in f.buffers):
        raise ScheduleError(f"{f.name}: no single immediate requantization to turn into arrays")
    (m, r), = imms
    n = max(lp.extent for lp, _ in calls)
    mult = Buffer("mult", "int32", (n,), "const", data=np.full(n, m, np.int32),
                  comment="requant multiplier per channel")
    rshift = Buffer("rshift", "int32", (n,), "const", data=np.full(n, r, np.int32),
                    comment="requant right shift per channel")

    def in_loop(lp: For):
        def fn(c):
            if isinstance(c, Call) and c.name in REQUANT_CALLS and isinstance(c.args[1], IntImm):
                return Call(c.name, (c.args[0], mult.load(lp.var), rshift.load(lp.var)), c.dtype)
            return None
        return fn
    body = rewrite(f.body, lambda lp: For(lp.var, lp.extent, rewrite(lp.body, in_loop(lp)), lp.kind)
                   if isinstance(lp, For) and lp.var.name.startswith(loop_prefix) else None)
    return verify_primfunc(PrimFunc(f.name, (*f.buffers, mult, rshift), body, dict(f.attrs)))




@primitive("region_bias_at_runtime")
def region_bias_at_runtime(f: PrimFunc) -> PrimFunc:
    """Compute each border region's bias (the folded bias plus zp_in times the weights of the
    taps the region leaves out: lower/depthwise.py) into scratch when the kernel starts, instead
    of keeping one more bias array per region in flash.

        bias_0_0: int32[C] const = {...}          --region_bias_at_runtime-->
        for c_0_0 { bias_0_0[c] = bias[c] + zp_in * (i32(w[0,0,0,c]) + ...) }    bias_0_0: scratch"""
    taps = f.attrs.get("region_taps")
    w = next((b for b in f.buffers if b.name == "w" and b.scope == "const"), None)
    bias = next((b for b in f.buffers if b.name == "bias" and b.scope == "const"), None)
    if not taps or w is None or bias is None or w.dtype != "int8" or len(w.shape) != 4:
        raise ScheduleError(f"{f.name}: no int8 depthwise filter with region biases")
    zp = int(f.attrs["zp_in"])
    swap, inits = {}, []
    for b in f.buffers:
        tag = b.name[len("bias_"):]
        if b.scope != "const" or not b.name.startswith("bias_") or tag not in taps:
            continue
        new = Buffer(b.name, "int32", b.shape, "scratch", comment=f"{b.comment} (computed at run time)")
        c = Var(f"c_{tag}")
        total = None
        for i, j in taps[tag]:
            term = Cast("int32", w.load(0, i, j, c))
            total = term if total is None else BinOp("add", total, term)
        value = bias.load(c) if total is None else BinOp("add", bias.load(c), BinOp("mul", IntImm(zp), total))
        inits.append(For(c, b.shape[0], new.store(value, c)))
        swap[b] = new
    if not swap:
        raise ScheduleError(f"{f.name}: no region bias to compute")
    body = rewrite(f.body, lambda n: Load(swap[n.buffer], n.index) if isinstance(n, Load) and n.buffer in swap
                   else None)
    return verify_primfunc(PrimFunc(f.name, tuple(swap.get(b, b) for b in f.buffers), SeqStmt((*inits, body)),
                                    dict(f.attrs)))


# ---------------------------------------------------------------- depthwise_rows

def _region_epilogue(f: PrimFunc) -> dict | None:
    """The output arithmetic of the first region's channel loop (every region shares it):
    requant_epilogue's mult/rshift buffers, offset and clamp."""
    for lp in walk(f.body):
        if not (isinstance(lp, For) and lp.var.name.startswith("ic_")):
            continue
        chain, body = perfect_nest(lp)
        if len(chain) != 1 or not isinstance(body, Allocate) or not isinstance(body.body, SeqStmt):
            return None
        out = body.body.stmts[-1]
        return requant_epilogue(out.value, body.buffer, lp.var.name) if isinstance(out, Store) else None
    return None


def rows_geometry(f: PrimFunc) -> dict | None:
    """The layer's geometry when the whole-layer kernel can take it (int8 3x3, depth multiplier
    1, dilation 1, stride 1 or 2 across), else None."""
    geo = f.attrs.get("window")
    if not geo or geo["kernel"] != [3, 3] or geo["dilation"] != [1, 1] or geo["multiplier"] != 1 \
            or geo["stride"][1] not in (1, 2):
        return None
    return geo


def rows_ring_bytes(f: PrimFunc, block: int) -> int:
    """The kernel's scratch for `block` channels per pass (0: all)."""
    y = next(b for b in f.buffers if b.name == "y")
    channels = y.shape[3]
    pairs = rows_pairs(y.shape[2], f.attrs["window"]["stride"][1])
    return 4 * rows_scratch_words(min(block or channels, channels), pairs)


# The ring's default cap, as conv2d's im2col block (gemm_schedule.COL_BYTES_MAX): small enough
# to leave kws's arena as it was; schedule/blocks.py grows it where the arena has slack.
ROWS_BYTES_MAX = 1024


def default_rows_block(f: PrimFunc) -> int | None:
    """The most channels per pass (ROWS_BLOCK_DOMAIN) whose ring fits ROWS_BYTES_MAX, or None
    when none does (the per-pixel kernels then): kws's 25x5x64 layers take 16."""
    if rows_geometry(f) is None:
        return None
    return next((b for b in ROWS_BLOCK_DOMAIN if rows_ring_bytes(f, b) <= ROWS_BYTES_MAX), None)


@primitive("depthwise_rows")
def depthwise_rows(f: PrimFunc, block: int = 0) -> PrimFunc:
    """Replace a whole int8 3x3 depthwise layer (depth multiplier 1, stride 1 or 2 across,
    dilation 1, per-channel arrays from requant_arrays) by one call of the whole-layer kernel,
    with one record of weights and output arithmetic per channel in flash and its ring of input
    pair rows for `block` channels at a time (0: all) in scratch (intrinsics_depthwise.py).

        for n { for oh_0 { ...regions... } }     --depthwise_rows(32)-->
        mc_depthwise_3x3_rows_dsp_s8(y, x, rq_rows, dw_ring, &{batch, channels, ..., block=32});
        rq_rows: int32[C*10] const;  dw_ring: int32[3*32*pairs + 8] scratch (+ 32 zp_in bytes)"""
    geo = rows_geometry(f)
    bufs = {b.name: b for b in f.buffers}
    if geo is None or block not in ROWS_BLOCK_DOMAIN or not {"x", "y", "w", "bias"} <= set(bufs):
        raise ScheduleError(f"{f.name}: not an int8 3x3 depthwise layer of depth multiplier 1, stride 1 or 2 across")
    x, y, w, bias = (bufs[k] for k in ("x", "y", "w", "bias"))
    ep = _region_epilogue(f)
    if ep is None or w.dtype != "int8" or w.data is None or x.dtype != "int8" or y.dtype != "int8" \
            or any(b.scope != "const" or b.data is None for b in (bias, ep["mult"], ep["rshift"])):
        raise ScheduleError(f"{f.name}: no per-channel int8 requantization to fold into records")
    batch, in_h, in_w, channels = x.shape
    _, out_h, out_w, _ = y.shape
    rec = rows_records(np.asarray(w.data).reshape(3, 3, channels), np.asarray(bias.data)[:channels],
                       np.asarray(ep["mult"].data)[:channels], np.asarray(ep["rshift"].data)[:channels], ep["off"])
    if rec is None:
        raise ScheduleError(f"{f.name}: the output arithmetic leaves the kernel's int32 range")
    (sh, sw), (pt, pl) = geo["stride"], geo["padding"]
    pairs, block = rows_pairs(out_w, sw), min(block or channels, channels)
    budget.check_tensor(f"{weights_name(w)}, as whole-layer records", (rec.size,), 4)
    records = Buffer("rq_rows", "int32", (rec.size,), "const", data=rec,
                     comment=f"{w.comment}: per channel 2*filter pairs, 2*bias, mult, K, rshift")
    ring = Buffer("dw_ring", "int32", (rows_scratch_words(block, pairs),), "scratch",
                  comment=f"three input rows as int16 column pairs, {block} channels")
    params = DEPTHWISE_ROWS_PARAMS(batch=batch, channels=channels, in_h=in_h, in_w=in_w, out_h=out_h, out_w=out_w,
                                   stride_h=sh, stride_w=sw, pad_top=pt, pad_left=pl, pairs=pairs,
                                   zp_in=geo["zp_in"], act_min=ep["lo"], act_max=ep["hi"], block=block)
    call = Call(ROWS_KERNEL, (Address(y, IntImm(0)), Address(x, IntImm(0)), Address(records, IntImm(0)),
                              Address(ring, IntImm(0)), params), "void")
    keep = tuple(b for b in f.buffers if b.scope != "const")
    return verify_primfunc(PrimFunc(f.name, (*keep, records, ring), Evaluate(call), dict(f.attrs)))


# ---------------------------------------------------------------- depthwise_layer_mve

# The most scratch the Helium whole-layer kernel's copied rows may take by default (as conv2d's
# im2col block on Helium, gemm_schedule.COL_BYTES_MAX): kws's 25x5x64 layers take 3 * 7 * 64 =
# 1,344 bytes for every channel; a layer whose rows of every channel take more runs in passes of
# fewer channels (ROWS_BLOCK_DOMAIN, the knob depthwise_rows_block), and schedule/blocks.py
# gives it more where the arena has slack.
LAYER_MVE_BYTES_MAX = 2048


def layer_mve_rows(f: PrimFunc, block: int = 0) -> tuple[int, int] | None:
    """(padded_w, scratch bytes) of the Helium whole-layer kernel for depthwise `f` in passes of
    `block` channels (0: all), or None when the layer is not one it takes (int8 3x3, depth
    multiplier 1, dilation 1, stride 1 or 2 across)."""
    geo = f.attrs.get("window")
    bufs = {b.name: b for b in f.buffers}
    if not geo or geo["multiplier"] != 1 or geo["kernel"] != [3, 3] or geo["dilation"] != [1, 1] \
            or geo["stride"][1] not in (1, 2) or not {"x", "y", "w", "bias"} <= set(bufs):
        return None
    x, y = bufs["x"], bufs["y"]
    _, in_h, in_w, channels = x.shape
    _, _, out_w, _ = y.shape
    padded_w = max(in_w + geo["padding"][1], (out_w - 1) * geo["stride"][1] + 3)
    held = channels if block == 0 else min(block, channels)
    return padded_w, (held + 3) // 4 * 3 * padded_w * 4


def default_layer_mve_block(f: PrimFunc) -> int | None:
    """The most channels per pass (ROWS_BLOCK_DOMAIN, 0 = all) whose rows fit
    LAYER_MVE_BYTES_MAX for the Helium whole-layer kernel, or None when it does not take `f`
    or no block fits (the per-pixel kernel then). A block of all the channels is 0."""
    if layer_mve_rows(f) is None:
        return None
    channels = next(b for b in f.buffers if b.name == "x").shape[3]
    for block in ROWS_BLOCK_DOMAIN:
        if block >= channels:
            continue            # 0 (all) was tried first and holds at most these rows
        if layer_mve_rows(f, block)[1] <= LAYER_MVE_BYTES_MAX:
            return block
    return None


@primitive("depthwise_layer_mve")
def depthwise_layer_mve(f: PrimFunc, block: int = 0) -> PrimFunc:
    """Replace a whole int8 3x3 depthwise layer (depth multiplier 1, dilation 1, stride 1 or 2
    across; per-channel arrays from requant_arrays) by one call of the Helium whole-layer
    kernel, on the folded bias and the int8 weights packed in groups of four channels, with 3
    rows of the padded input for `block` channels at a time (0: every channel) in scratch.

        for n { for oh_0 { ...regions... } }     --depthwise_layer_mve(16)-->
        mc_depthwise_layer_mve_s8(y, x, w, bias, mult, rshift, dw_rows, &{batch, channels, ...});"""
    if block not in ROWS_BLOCK_DOMAIN:
        raise ScheduleError(f"{f.name}: {block} channels per pass is outside {ROWS_BLOCK_DOMAIN}")
    shape = layer_mve_rows(f, block)
    bufs = {b.name: b for b in f.buffers}
    if shape is None:
        raise ScheduleError(f"{f.name}: not an int8 3x3 depthwise layer of depth multiplier 1, dilation 1, "
                            f"stride 1 or 2 across")
    padded_w, scratch = shape
    x, y, w, bias = (bufs[k] for k in ("x", "y", "w", "bias"))
    ep = _region_epilogue(f)
    if ep is None or w.dtype != "int8" or w.data is None or x.dtype != "int8" or y.dtype != "int8" \
            or bias.dtype != "int32" or bias.data is None:
        raise ScheduleError(f"{f.name}: no per-channel int8 requantization in mc_mul_by_qm_pos_rshift's form")
    geo = f.attrs["window"]
    batch, in_h, in_w, channels = x.shape
    _, out_h, out_w, _ = y.shape
    (kh, kw), (sh, sw), (dh, dw), (pt, pl) = geo["kernel"], geo["stride"], geo["dilation"], geo["padding"]
    held = channels if block == 0 else min(block, channels)
    rows = Buffer("dw_rows", "int8", (scratch,), "scratch",
                  comment=f"{kh} input rows of {padded_w} columns (padding included), {held} channels "
                          f"in groups of 4")
    packed = pack_layer_mve(np.asarray(w.data).reshape(w.shape))
    wp = Buffer(w.name, "int8", (packed.size,), "const", data=packed,
                comment=f"{w.comment} (groups of 4 channels)")
    params = DEPTHWISE_LAYER_PARAMS(batch=batch, channels=channels, in_h=in_h, in_w=in_w, out_h=out_h, out_w=out_w,
                                    kh=kh, kw=kw, stride_h=sh, stride_w=sw, dil_h=dh, dil_w=dw, pad_top=pt,
                                    pad_left=pl, padded_w=padded_w, zp_in=geo["zp_in"], out_offset=ep["off"],
                                    act_min=ep["lo"], act_max=ep["hi"], block=held)
    if ep["mult"].data is None or ep["rshift"].data is None:
        raise ScheduleError(f"{f.name}: the multipliers and shifts are not constants")
    rec = layer_mve_records(np.asarray(bias.data)[:channels], np.asarray(ep["mult"].data)[:channels],
                            np.asarray(ep["rshift"].data)[:channels])
    records = Buffer("dw_rq", "int32", (rec.size,), "const", data=rec,
                     comment=f"{f.attrs.get('layer', f.name)}: per group of 4 channels bias, multiplier, -shift")
    call = Call(LAYER_MVE_KERNEL, (Address(y, IntImm(0)), Address(x, IntImm(0)), Address(wp, IntImm(0)),
                                   Address(records, IntImm(0)), Address(rows, IntImm(0)), params), "void")
    keep = tuple(b for b in f.buffers if b.scope != "const")
    return verify_primfunc(PrimFunc(f.name, (*keep, wp, records, rows), Evaluate(call), dict(f.attrs)))


# ---------------------------------------------------------------- the tensor intrinsic

def _match(loop: For) -> dict | None:
    chain, body = perfect_nest(loop)
    if len(chain) != 1 or not isinstance(body, Allocate) or not isinstance(body.body, SeqStmt):
        return None
    ic, channels, acc = loop.var.name, loop.extent, body.buffer
    stmts = body.body.stmts
    if len(stmts) != 3 or not isinstance(stmts[0], Store) or not isinstance(stmts[2], Store):
        return None
    init, taps, out = stmts
    bias = unit_load(init.value, ic)
    if init.buffer is not acc or bias is None or bias[0].dtype != "int32" or eval_int(bias[1], {}) != 0:
        return None
    tloops, tap = perfect_nest(taps)
    product = accumulated_product(tap, acc)
    if len(tloops) > 2 or product is None:
        return None
    xs, ws = product
    if not all(isinstance(t, Cast) and t.dtype == "int32" and isinstance(t.value, Load) for t in (xs, ws)):
        return None
    xl, wl = xs.value, ws.value
    if xl.buffer.dtype != "int8" or wl.buffer.dtype != "int16" or wl.buffer.scope != "const":
        return None
    names = [f.var.name for f in tloops]
    xa = affine(xl.index, {ic, *names})
    if xa is None or xa[0].get(ic) != 1:
        return None
    # The weight index (packed: div/mod) is checked at every point of the nest.
    w_index = compile_expr(wl.index)      # compiled once: it is evaluated at every point below

    def eval_w(env):
        return int(w_index(env, {}))
    w0 = eval_w({ic: 0, **{n: 0 for n in names}})
    steps = {n: eval_w({ic: 0, **{m: int(m == n) for m in names}}) - w0 for n in names}
    kw_loop = next((f for f in tloops if steps[f.var.name] == 4), None) if tloops else None
    kh_loop = next((f for f in tloops if f is not kw_loop), None)
    kh, kw = (kh_loop.extent if kh_loop else 1), (kw_loop.extent if kw_loop else 1)
    w_row = steps[kh_loop.var.name] if kh_loop else 0
    w_group = (eval_w({ic: 4, **{n: 0 for n in names}}) - w0) if channels > 4 else 0
    for c, *pt in itertools.product(range(channels), *(range(f.extent) for f in tloops)):
        env = {ic: c, **dict(zip(names, pt))}
        i, j = (env[kh_loop.var.name] if kh_loop else 0), (env[kw_loop.var.name] if kw_loop else 0)
        if eval_w(env) != w0 + (c // 4) * w_group + i * w_row + j * 4 + ORDER[c % 4]:
            return None
    ya = affine(out.index, {ic})
    ep = requant_epilogue(out.value, acc, ic)
    if out.buffer.dtype != "int8" or ya is None or ya[0] != {ic: 1} or ep is None:
        return None
    return {"y": out.buffer, "ybase": ya[1], "x": xl.buffer, "xbase": xa[1], "w": wl.buffer, "wbase": IntImm(w0),
            "bias": bias[0], "channels": channels, "kh": kh, "kw": kw,
            "x_row": xa[0].get(kh_loop.var.name, 0) if kh_loop else 0,
            "x_col": xa[0].get(kw_loop.var.name, 0) if kw_loop else 0,
            "w_row": w_row, "w_group": w_group, **ep}


def _emit(variant: str):
    def emit(b: dict):
        params = DEPTHWISE_PARAMS(channels=b["channels"], kh=b["kh"], kw=b["kw"], x_row=b["x_row"], x_col=b["x_col"],
                                  w_row=b["w_row"], w_group=b["w_group"], out_offset=b["off"], act_min=b["lo"],
                                  act_max=b["hi"])
        args = (Address(b["y"], b["ybase"]), Address(b["x"], b["xbase"]), Address(b["w"], b["wbase"]),
                Address(b["bias"], IntImm(0)), Address(b["mult"], IntImm(0)), Address(b["rshift"], IntImm(0)),
                params)
        return Evaluate(Call(kernel_name(variant, b["kh"], b["kw"], b["w_row"]), args, "void"))
    return emit


for _v in DEPTHWISE_VARIANTS:
    tensor_intrin(f"mc_depthwise_{_v}_s8", _emit(_v),
                  doc=f"one int8 depthwise output pixel, requantized ({_v})")(_match)


def _emit_rq(b: dict):
    params = DEPTHWISE_PARAMS(channels=b["channels"], kh=b["kh"], kw=b["kw"], x_row=b["x_row"], x_col=b["x_col"],
                              w_row=b["w_row"], w_group=b["w_group"], out_offset=b["off"], act_min=b["lo"],
                              act_max=b["hi"])
    args = (Address(b["y"], b["ybase"]), Address(b["x"], b["xbase"]), Address(b["w"], b["wbase"]),
            Address(b["rq"], IntImm(0)), params)
    return Evaluate(Call(rq_kernel_name(b["kh"], b["kw"]), args, "void"))


@tensor_intrin("mc_depthwise_dsp_rq_s8", _emit_rq,
               doc="one int8 depthwise output pixel of a fixed window, bias and requantization from records (dsp)")
def _match_rq(loop: For) -> dict | None:
    """As mc_depthwise_dsp_s8, for the fixed windows of a 3-wide filter, with the region's bias,
    multipliers and shifts copied into one records constant (intrinsics_depthwise.py) that the
    call reads instead; drop_unused_constants removes what no other region reads."""
    b = _match(loop)
    if b is None or (b["kh"], b["kw"]) not in RQ_WINDOWS or b["w_row"] != 12:
        return None
    if any(b[k].scope != "const" or b[k].data is None for k in ("bias", "mult", "rshift")):
        return None
    n = b["channels"]
    data = requant_records(np.asarray(b["bias"].data)[:n], np.asarray(b["mult"].data)[:n],
                           np.asarray(b["rshift"].data)[:n])
    tag = b["bias"].name[len("bias"):]
    rq = Buffer(f"rq{tag}", "int32", (data.size,), "const", data=data,
                comment=f"{b['bias'].name}, mult, rshift - 1 per group of four channels")
    return {**b, "rq": rq, "add_buffers": (rq,)}


# ---------------------------------------------------------------- the default schedule

def schedule_depthwise(func: PrimFunc, target=None, kernel: str = "rows", wide: bool | None = None,
                       records: bool = True, rows_block: int | None = None) -> Schedule | None:
    """The depthwise schedule, by the `kernel` knob (DEPTHWISE_KERNEL_DOMAIN):

    "rows"    (default) on DSP cores, an int8 3x3 layer (depth multiplier 1, stride 1 or 2
              across) becomes one call of the whole-layer kernel (depthwise_rows), `rows_block`
              channels per pass (knob depthwise_rows_block; None: default_rows_block, and
              "kernel" where no block fits its cap); kws on the Cortex-M4: 2.51 instructions
              per MAC against 3.25 (docs/performance.md). Anything else falls back to "kernel"
    "kernel"  pack the filter and tensorize every region's channel loop with the
              micro-kernel for the core (kws on the Cortex-M4: 4.74 instructions per MAC,
              against 5.30 for "loops"); None when it does not apply (float, depth
              multiplier > 1, a multiplier of one half or more), so the loops remain
    "loops"   unroll every tap loop: straight-line taps with constant offsets, on the
              model's int8 weights (`wide=False` picks it: schedule/widening.py).
    `records` (DSP cores): the fixed windows' kernels read each region's bias, multipliers and
    shifts as one records constant (mc_depthwise_<kh>x<kw>_dsp_rq_s8; more flash, one region's
    records per region, for three LDM per group of four channels)."""
    assert kernel in DEPTHWISE_KERNEL_DOMAIN, kernel
    x = next((b for b in func.buffers if b.name == "x"), None)
    if func.attrs.get("op") != "depthwise_conv2d" or x is None or x.dtype != "int8":
        return None               # float32 and int16 depthwise: loops, searched as sketches
    variant = kernel_set(target)
    if wide is False and not (kernel == "rows" and variant == "mve"):
        kernel = "loops"          # the micro-kernels read int16 weights; the loops read the model's int8
    sch = Schedule(func)          # (Helium's whole-layer kernel reads the model's int8 weights too)
    sch.knob("depthwise_kernel", kernel)
    if kernel == "loops":
        taps = [n.var.name for n in walk(func.body) if isinstance(n, For) and n.var.name.startswith(("kh_", "kw_"))]
        for loop in taps:
            sch.unroll(loop)
        if wide is False and func.attrs.get("region_taps"):
            sch.apply("region_bias_at_runtime")     # no flash to spare for one bias per region
        return sch
    regions = [n.var.name for n in walk(func.body) if isinstance(n, For) and n.var.name.startswith("ic_")]
    if not regions:
        return None
    if kernel == "rows" and variant == "mve":
        # Helium's whole-layer kernel (3x3, `rows_block` channels per pass; None: the most whose
        # copied rows fit LAYER_MVE_BYTES_MAX), else the per-pixel kernel
        block = default_layer_mve_block(func) if rows_block is None else rows_block
        try:
            if block is None:
                raise ScheduleError(f"{func.name}: the copied rows of 8 channels take over {LAYER_MVE_BYTES_MAX} bytes")
            sch.knob("depthwise_rows_block", block)
            if not any(b.name in ("mult", "shift") for b in func.buffers):
                sch.apply("requant_arrays", "ic_")
            sch.apply("depthwise_layer_mve", block)
            return sch
        except ScheduleError:
            if wide is False:
                return schedule_depthwise(func, target, "loops", wide, records, rows_block)
            sch = Schedule(func)
            sch.knob("depthwise_kernel", kernel)
    block = default_rows_block(func) if rows_block is None else rows_block
    if kernel == "rows" and variant == "dsp" and block is not None:
        try:
            sch.knob("depthwise_rows_block", block)
            if not any(b.name in ("mult", "shift") for b in func.buffers):
                sch.apply("requant_arrays", "ic_")
            sch.apply("depthwise_rows", block)
            return sch
        except ScheduleError:
            sch = Schedule(func)         # not a layer the whole-layer kernel takes: per pixel
            sch.knob("depthwise_kernel", kernel)
    try:
        sch.apply("pack_depthwise_s16", "w")
        if not any(b.name in ("mult", "shift") for b in func.buffers):
            sch.apply("requant_arrays", "ic_")
        for loop in regions:
            if variant == "dsp" and records:
                try:
                    sch.tensorize(loop, "mc_depthwise_dsp_rq_s8")
                    continue
                except ScheduleError:
                    pass
            sch.tensorize(loop, f"mc_depthwise_{variant}_s8")
        if variant == "dsp" and records:
            sch.apply("drop_unused_constants")
    except ScheduleError:
        return None
    return sch


DEPTHWISE_SCHEDULES = (schedule_depthwise,)
