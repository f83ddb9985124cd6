"""float32 depthwise convolution on Helium cores: each output pixel's channel loop becomes one
call of mc_depthwise_<clamp>mve_f32 (runtime_c/kernels/mve/mc_depthwise_f32_mve.c, declared in
tir/intrinsics_depthwise_f32.py), the channels in vector lanes: per tap and four channels one
load of the input, one of the weights and one VFMA.

The lowering splits a padded layer's output plane into regions whose taps are all inside the
input (lower/depthwise), so each region's channel loop is matched as it is:

    for ic { acc = bias[ic]; for kh { for kw { acc = acc + x[X + kh*XR + kw*XC + ic] * w[W + kh*WR + kw*WC + ic] } }
             y[Y + ic] = clamp(acc) }

(one or two tap loops, either order; x and w contiguous in ic: depth multiplier 1). There is no
schedule of its own: the tensor intrinsic is what the sketch family's `tensorize` rule finds
(schedule/sketch.py), and default_sketch takes it where it matches. The sums keep the loops'
order, each product fused with one rounding (ir/compare's float tolerance covers it).
"""

from __future__ import annotations

from ..tir.intrinsics_depthwise_f32 import DEPTHWISE_F32_MVE_KERNELS, DEPTHWISE_F32_PARAMS
from ..tir.nodes import Address, Call, Evaluate, FloatImm, For, Load
from .epilogue import unit_load
from .gemm_f32 import clamp_bits
from .tensorize import accumulated_product, accumulation_nest, affine, perfect_nest, tensor_intrin

# The tensor intrinsic's name (the call's name is the clamp's kernel).
DEPTHWISE_F32_MVE = "mc_depthwise_mve_f32"


def _match(loop: For) -> dict | None:
    nest = accumulation_nest(loop, "float32")
    if nest is None or len(nest[0]) != 1:
        return None
    (ic_loop,), acc, init, taps, out = nest
    ic = ic_loop.var.name
    tloops, tap = perfect_nest(taps)
    loads = accumulated_product(tap, acc)
    if len(tloops) > 2 or loads is None or not all(isinstance(t, Load) and t.buffer.dtype == "float32" for t in loads):
        return None
    w = next((t for t in loads if t.buffer.scope == "const"), None)
    x = next((t for t in loads if t is not w), None)
    if w is None or x is None or x.buffer.scope == "const":
        return None
    names = {ic, *(f.var.name for f in tloops)}
    xa, wa = affine(x.index, names), affine(w.index, names)
    if xa is None or wa is None or xa[0].get(ic) != 1 or wa[0].get(ic) != 1:
        return None
    bias = unit_load(init.value, ic)
    if bias is None or bias[0].scope != "const" or bias[0].dtype != "float32":
        return None
    ya = affine(out.index, {ic})
    clamp = clamp_bits(out.value, acc)
    if ya is None or ya[0] != {ic: 1} or out.buffer.dtype != "float32" or clamp is None:
        return None
    # the kernel's i (rows) and j: a single tap loop is its j, one assembly loop over the taps
    outer = tloops[0] if len(tloops) == 2 else None
    inner = tloops[-1] if tloops else None

    def stride(a, f):
        return a[0].get(f.var.name, 0) if f is not None else 0
    return {"y": out.buffer, "ybase": ya[1], "x": x.buffer, "xbase": xa[1], "w": w.buffer, "wbase": wa[1],
            "bias": bias[0], "bbase": bias[1], "channels": ic_loop.extent,
            "kh": outer.extent if outer else 1, "kw": inner.extent if inner else 1,
            "x_row": stride(xa, outer), "x_col": stride(xa, inner), "w_row": stride(wa, outer),
            "w_col": stride(wa, inner), "clamp": clamp}


def _emit(b: dict):
    act, lo, hi = b["clamp"]
    params = DEPTHWISE_F32_PARAMS(channels=b["channels"], kh=b["kh"], kw=b["kw"], x_row=b["x_row"],
                                  x_col=b["x_col"], w_row=b["w_row"], w_col=b["w_col"])
    args = (Address(b["y"], b["ybase"]), Address(b["x"], b["xbase"]), Address(b["w"], b["wbase"]),
            Address(b["bias"], b["bbase"]), FloatImm(lo), FloatImm(hi), params)
    return Evaluate(Call(DEPTHWISE_F32_MVE_KERNELS[act], args, "void"))


def _matched(loop: For) -> dict | None:
    b = _match(loop)
    return b if b is not None and b["clamp"][0] in DEPTHWISE_F32_MVE_KERNELS else None


tensor_intrin(DEPTHWISE_F32_MVE, _emit,
              doc="one float32 depthwise output pixel, all its channels, bias and clamp (Helium)")(_matched)
