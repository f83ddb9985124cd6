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
from ..tir.intrinsics_depthwise import (DEPTHWISE_PARAMS, DEPTHWISE_VARIANTS, ORDER, RQ_WINDOWS, kernel_name,
                                         requant_records, rq_kernel_name)
from ..tir.nodes import (Address, Allocate, BinOp, Buffer, Call, Cast, Evaluate, For, IntImm, Load, PrimFunc, Var,
                         SeqStmt, Store, rewrite, walk)
from ..tir.interp import compile_expr
from ..tir.verify import verify_primfunc
from .epilogue import eval_int, requant_epilogue, unit_load
from .knobs import declare_knob
from .primitives import primitive, ScheduleError, weights_name
from .tensorize import affine, perfect_nest, tensor_intrin
from .trace import Schedule
from .variants import kernel_set

DEPTHWISE_KERNEL_DOMAIN = declare_knob("depthwise_kernel", ("kernel", "loops"),
                                       "depthwise: the core's micro-kernel or unrolled loops")


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
    if len(tloops) > 2 or not isinstance(tap, Store) or tap.buffer is not acc:
        return None
    v = tap.value
    if not (isinstance(v, BinOp) and v.op == "add" and isinstance(v.a, Load) and v.a.buffer is acc
            and isinstance(v.b, BinOp) and v.b.op == "mul"):
        return None
    xs, ws = v.b.a, v.b.b
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

def schedule_depthwise(func: PrimFunc, target=None, kernel: str = "kernel", wide: bool | None = None,
                       records: bool = True) -> Schedule | None:
    """The depthwise schedule, by the `kernel` knob (DEPTHWISE_KERNEL_DOMAIN):

    "kernel"  (default) pack the filter and tensorize every region's channel loop with the
              micro-kernel for the core (kws on the Cortex-M4: 4.74 instructions per MAC,
              against 5.30 for "loops"); None when it does not apply (float, depth
              multiplier > 1, a multiplier of one half or more), so the loops remain
    "loops"   unroll every tap loop: straight-line taps with constant offsets, on the
              model's int8 weights (`wide=False` picks it: schedule/widening.py).
    `records` (DSP cores): the fixed windows' kernels read each region's bias, multipliers and
    shifts as one records constant (mc_depthwise_<kh>x<kw>_dsp_rq_s8; more flash, one region's
    records per region, for three LDM per group of four channels)."""
    assert kernel in DEPTHWISE_KERNEL_DOMAIN, kernel
    if func.attrs.get("op") != "depthwise_conv2d":
        return None
    if wide is False:
        kernel = "loops"          # the micro-kernels read int16 weights; the loops read the model's int8
    sch = Schedule(func)
    sch.knob("depthwise_kernel", kernel)
    if kernel == "loops":
        taps = [n.var.name for n in walk(func.body) if isinstance(n, For) and n.var.name.startswith(("kh_", "kw_"))]
        for loop in taps:
            sch.unroll(loop)
        if wide is False and func.attrs.get("region_taps"):
            sch.apply("region_bias_at_runtime")     # no flash to spare for one bias per region
        return sch
    variant = kernel_set(target)
    regions = [n.var.name for n in walk(func.body) if isinstance(n, For) and n.var.name.startswith("ic_")]
    if not regions:
        return None
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
