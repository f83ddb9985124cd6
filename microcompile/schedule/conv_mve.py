"""The Helium whole-layer convolution (runtime_c/kernels/mve/mc_gemm_conv_mve.c): the schedule
primitive that replaces an int8 conv2d's loop nest by one call of mc_conv_rq_mve_s8.

The im2col GEMM's schedule copies each block of output pixels' windows into scratch tap by tap
(a call per run of channels, and the index arithmetic of each tap in C) before its
micro-kernel reads them. The whole-layer kernel does the same inside one call: with dilation 1
across, a filter row's taps inside the input are one run of kw * in_c bytes, copied with vector
loads and stores, and the panels of four output channels then run over the block's columns
(cols * k_p bytes of scratch, k_p = kh * kw * in_c rounded up to 16):

    for n { for oh { for ow { for oc { acc = bias[oc]; for kh, kw, ic {...}; y[...] = rq(acc) }}}}
    --conv2d_layer_mve()-->
    mc_conv_rq_mve_s8(y, x, w_panels, bias, mult, rshift, conv_col, &{batch, in_h, ..., act_max});

Knob `conv_kernel` (CONV_KERNEL_DOMAIN): "auto" (the default) takes the whole-layer kernel on
Helium cores where it applies and the im2col GEMM elsewhere; "layer" asks for it (refused with
the reason where it does not apply); "gemm" keeps the im2col GEMM (gemm_schedule.py).
"""

from __future__ import annotations

import numpy as np

from ..ir import budget
from ..tir.intrinsics_gemm import CONV_GROUP, CONV_MVE_KERNEL, CONV_PARAMS, PANEL_ROWS, pack_panels4
from ..tir.nodes import Address, Allocate, Buffer, Call, Evaluate, IntImm, PrimFunc, Store, walk
from ..tir.verify import verify_primfunc
from .epilogue import requant_epilogue
from .knobs import declare_knob
from .primitives import ScheduleError, primitive, weights_name

CONV_KERNEL_DOMAIN = declare_knob("conv_kernel", ("auto", "layer", "gemm"),
                                  "conv2d on Helium: the whole-layer kernel that reads windows in place (layer), "
                                  "the im2col GEMM (gemm), or the first where it applies (auto)")

# The shortest filter row (kw * in_c bytes) the kernel takes. Its window copy moves a row per
# (predicated) vector: kws's first layer (10x4 over one channel: rows of 4 bytes) took 200,438
# instructions through it against 176,719 through the im2col GEMM on mps3-an547; ResNet-8's
# (3x3 over 3 channels: 9 bytes) 358,000 against 439,812.
MIN_ROW_BYTES = 8
# The block of output pixels: as the im2col GEMM's on Helium (gemm_schedule.COL_BYTES_MAX and
# its 32 columns), the most whose windows fit COL_BYTES, an even number (or one).
MAX_COLS, COL_BYTES = 32, 1536


def _round16(v: int) -> int:
    return (v + CONV_GROUP - 1) // CONV_GROUP * CONV_GROUP


def layer_refusal(f: PrimFunc) -> str | None:
    """Why mc_conv_rq_mve_s8 cannot run conv2d `f`, or None."""
    geo = f.attrs.get("window")
    bufs = {b.name: b for b in f.buffers}
    if f.attrs.get("op") != "conv2d" or geo is None or not {"x", "y", "w", "bias"} <= set(bufs):
        return "not an int8 conv2d"
    w = bufs["w"]
    if w.dtype != "int8" or w.data is None or bufs["x"].dtype != "int8" or bufs["y"].dtype != "int8":
        return "not an int8 conv2d with constant int8 weights"
    if geo["dilation"][1] != 1:
        return f"dilation {geo['dilation'][1]} across: a window's taps in a row are not contiguous"
    _, _, kw, ic = w.shape
    if kw * ic < MIN_ROW_BYTES:
        return (f"a filter row is {kw * ic} bytes (fewer than {MIN_ROW_BYTES}): the window copy would move a "
                f"few bytes per vector")
    return None


def _epilogue(f: PrimFunc) -> dict | None:
    """The output arithmetic of the conv's accumulator (requant_arrays applied)."""
    alloc = next((n for n in walk(f.body) if isinstance(n, Allocate) and n.buffer.name == "acc"), None)
    if alloc is None:
        return None
    out = next((n for n in walk(alloc.body) if isinstance(n, Store) and n.buffer.name == "y"), None)
    return requant_epilogue(out.value, alloc.buffer, "oc") if out is not None else None


@primitive("conv2d_layer_mve")
def conv2d_layer_mve(f: PrimFunc) -> PrimFunc:
    """Replace a whole int8 conv2d (per-channel arrays from requant_arrays) by one call of
    mc_conv_rq_mve_s8, its filter rows padded to a multiple of 16 bytes and packed in panels of
    four output channels, and the columns of a block of output pixels in scratch."""
    why = layer_refusal(f)
    if why:
        raise ScheduleError(f"{f.name}: {why}")
    bufs = {b.name: b for b in f.buffers}
    x, y, w, bias = (bufs[k] for k in ("x", "y", "w", "bias"))
    ep = _epilogue(f)
    if ep is None or bias.dtype != "int32" or bias.data is None:
        raise ScheduleError(f"{f.name}: no per-channel int8 requantization in mc_mul_by_qm_pos_rshift's form")
    geo = f.attrs["window"]
    batch, in_h, in_w, in_c = x.shape
    _, out_h, out_w, out_c = y.shape
    _, kh, kw, _ = w.shape
    k = kh * kw * in_c
    k_p = _round16(k)
    packed = pack_panels4(np.asarray(w.data).reshape(out_c, k), CONV_GROUP, weights_name(w))
    budget.check_tensor(f"{weights_name(w)}, in panels of {PANEL_ROWS} filters", (packed.size,), 1)
    wp = Buffer(w.name, "int8", (packed.size,), "const", data=packed,
                comment=f"{w.comment} (rows of {k_p} bytes, panels of {PANEL_ROWS} filters)")
    # an even block (the kernel's tile takes two columns), one column where two exceed COL_BYTES
    fit = min(MAX_COLS, COL_BYTES // k_p, out_h * out_w)
    cols = fit // 2 * 2 if fit >= 2 else 1
    col = Buffer("conv_col", "int8", (cols * k_p,), "scratch",
                 comment=f"the windows of {cols} output pixels, {k_p} bytes each")
    (sh, sw), (dh, _), (pt, pl) = geo["stride"], geo["dilation"], geo["padding"]
    params = CONV_PARAMS(batch=batch, in_h=in_h, in_w=in_w, in_c=in_c, out_h=out_h, out_w=out_w, out_c=out_c,
                         kh=kh, kw=kw, stride_h=sh, stride_w=sw, dil_h=dh, pad_top=pt, pad_left=pl, k_p=k_p, cols=cols,
                         zp_in=geo["zp_in"], out_offset=ep["off"], act_min=ep["lo"], act_max=ep["hi"])
    call = Call(CONV_MVE_KERNEL, (Address(y, IntImm(0)), Address(x, IntImm(0)), Address(wp, IntImm(0)),
                                  Address(bias, IntImm(0)), Address(ep["mult"], IntImm(0)),
                                  Address(ep["rshift"], IntImm(0)), Address(col, IntImm(0)), params), "void")
    keep = tuple(b for b in f.buffers if b.scope != "const")
    consts = (wp, bias, ep["mult"], ep["rshift"])
    return verify_primfunc(PrimFunc(f.name, (*keep, *consts, col), Evaluate(call), dict(f.attrs)))
