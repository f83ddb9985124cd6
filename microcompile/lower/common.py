"""Helpers shared by the per-op lowerings: buffers for graph tensors, comment strings,
requantization and clamps as loop-IR expressions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..ir import ops
from ..reference import qparams
from ..ir.budget import elements
from ..ir.graph import NP_DTYPES, Graph, Node, Tensor
from ..tir.nodes import (Address, BinOp, Buffer, Call, Expr, IntImm, PrimFunc, Stmt, Var, FloatImm, add, all_of, binop, sub,
                         cast, const, mul)
from ..tir.verify import verify_primfunc

# op name -> fn(graph, node, target) -> PrimFunc. Filled by the op-family modules of this
# package with @lowering; lower_node looks ops up here.
LOWERINGS: dict = {}


def lowering(*op_names: str, dtype: str | None = None):
    """Register the decorated fn(graph, node, target) as the lowering of each op named (of
    its `dtype` variant only, e.g. "int16", when given; see ops.variant)."""
    def register(fn):
        for name in op_names:
            key = name if dtype is None else (name, dtype)
            assert key not in LOWERINGS, f"lowering of {key} registered twice"
            LOWERINGS[key] = fn
        return fn
    return register



def lowering_of(g: Graph, node: Node):
    """The registered lowering of `node`: its dtype variant's (ops.variant) when there is one,
    else the op's; None when the op has none."""
    return LOWERINGS.get((node.op, ops.variant(g, node))) or LOWERINGS.get(node.op)


def describe(t: Tensor) -> str:
    """"name [1,8,8,3] int8 s=0.0235 zp=-128" for the kernel comment header."""
    s = f"{t.name} [{','.join(map(str, t.shape))}] {t.dtype}"
    q = t.quant
    if q is not None:
        s += (f" s={q.scale[0]:.6g} zp={q.zero_point[0]}" if q.axis is None
              else f" per-channel(axis={q.axis}, {len(q.scale)} scales)")
    return s


def arena(g: Graph, name: str, buf_name: str, shape: tuple[int, ...] | None = None) -> Buffer:
    """The arena buffer of tensor `name`; `shape` views the same bytes with another shape."""
    t = g.tensors[name]
    shape = tuple(t.shape) if shape is None else tuple(shape)
    assert elements(shape) == t.size, f"view {shape} of {name} {t.shape}"
    return Buffer(buf_name, t.dtype, shape, "arena", tensor=name, comment=describe(t))


def operand(g: Graph, name: str, buf_name: str, shape: tuple[int, ...] | None = None) -> Buffer:
    """A kernel input: its arena buffer, or a flash constant (e.g. a constant ADD/MUL operand
    or PRELU's alpha); `shape` views the same elements with another shape."""
    t = g.tensors[name]
    if t.is_const:
        data = t.data if shape is None else t.data.reshape(shape)
        return constant(buf_name, data, f"{t.name} {list(t.shape)}")
    return arena(g, name, buf_name, shape)


def broadcast_index(buf: Buffer, out_shape: tuple[int, ...], idx: list[Var]) -> Expr:
    """Flat index into `buf` (its shape right-aligned to out_shape), size-1 dims held at 0."""
    lead = len(out_shape) - len(buf.shape)
    flat: Expr = IntImm(0)
    stride = 1
    for k in reversed(range(len(buf.shape))):
        if buf.shape[k] != 1:
            flat = add(mul(idx[lead + k], stride), flat)
        stride *= buf.shape[k]
    return flat


def smaller_than_one(x: Expr, mult: int, shift: int) -> Expr:
    """TFLite MultiplyByQuantizedMultiplierSmallerThanOneExp (ADD/SUB's rescaling)."""
    return Call("mc_mul_by_qm_smaller_than_one_exp", (x, IntImm(mult), IntImm(shift)), "int32")


def address(b: Buffer) -> Address:
    """A pointer to the first element of `b`: an extern micro-kernel's argument."""
    return Address(b, IntImm(0))


def constant(buf_name: str, data: np.ndarray, comment: str) -> Buffer:
    # int4 data is int8 (ir/graph.py): an int8 array is an int8 constant here.
    dtype = {np.dtype(v): k for k, v in NP_DTYPES.items() if k != "int4"}[np.asarray(data).dtype]
    data = np.ascontiguousarray(data)
    return Buffer(buf_name, dtype, tuple(data.shape), "const", data=data, comment=comment)


def make_func(g: Graph, node: Node, buffers: list[Buffer], body: Stmt, **extra) -> PrimFunc:
    """A verified PrimFunc for `node`, with the comment-header attributes codegen prints."""
    ins = [describe(g.tensors[i]) for i in node.inputs if i and not g.tensors[i].is_const]
    outs = [describe(g.tensors[o]) for o in node.outputs]
    attrs = {"layer": node.name, "op": node.op, "inputs": ins, "outputs": outs,
             "macs": int(ops.get(node.op).macs(g, node)), **extra}
    act = node.attrs.get("activation")
    if act and act != "NONE":
        attrs["activation"] = act
    return verify_primfunc(PrimFunc(f"{node.op}_{node.name}", tuple(buffers), body, attrs))


def i32(e: Expr) -> Expr:
    return cast("int32", e)


def i8(e: Expr) -> Expr:
    return cast("int8", e)


def clamp(e: Expr, lo, hi) -> Expr:
    """min(max(e, lo), hi), leaving out a bound that cannot bite (the dtype's own range for
    int8 outputs, +-inf for float)."""
    if e.dtype == "float32":
        if lo is not None and np.isfinite(lo):
            e = BinOp("max", e, FloatImm(float(lo)))
        if hi is not None and np.isfinite(hi):
            e = BinOp("min", e, FloatImm(float(hi)))
        return e
    return BinOp("min", BinOp("max", e, IntImm(int(lo))), IntImm(int(hi)))


# qparams rounding scheme -> the intrinsic (mc_fixedpoint.h) that implements it.
REQUANTIZE_INTRINSIC = {qparams.DOUBLE: "mc_mul_by_qm",
                        qparams.SINGLE: "mc_mul_by_qm_single_round",
                        qparams.SINGLE_AWAY: "mc_mul_by_qm_single_round_away",
                        qparams.SINGLE_EVEN: "mc_mul_by_qm_single_round_even"}


def requantize(acc: Expr, mult: Expr | int, shift: Expr | int, rounding: str) -> Expr:
    """acc * M * 2^(shift-31) with the rounding qparams says LiteRT uses for the op."""
    return Call(REQUANTIZE_INTRINSIC[rounding], (acc, const(mult), const(shift)), "int32")


def in_bounds(pairs: list[tuple[Expr, int, int, int]]) -> Expr | None:
    """Conjunction of 0 <= e < size for (e, size, pad_lo, pad_hi); a side whose padding is zero
    cannot go out of bounds and is left out, so unpadded kernels get no condition at all."""
    conds = []
    for e, size, lo, hi in pairs:
        if lo > 0:
            conds.append(binop("ge", e, 0))
        if hi > 0:
            conds.append(binop("lt", e, size))
    return all_of(conds)


def loop_vars(*names: str) -> list[Var]:
    return [Var(n) for n in names]


@dataclass(frozen=True)
class PoolWindow:
    """The loop nest shared by the 2-D pooling lowerings: output loops (n, oh, ow, c), window
    loops (kh, kw), the input coordinates ih/iw (named by LetStmt in the body) and the
    in-bounds test (None when the window never leaves the input)."""

    x: Buffer
    y: Buffer
    outer: list
    window: list
    ih: Var
    iw: Var
    ih_value: Expr
    iw_value: Expr
    valid: Expr | None
    n: Var
    oh: Var
    ow: Var
    c: Var


def pool_window(g: Graph, node: Node) -> PoolWindow:
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    batch, in_h, in_w, _ = xt.shape
    _, out_h, out_w, chans = yt.shape
    fh, fw = node.attrs["filter"]
    sh, sw = node.attrs.get("stride", (1, 1))
    pt, pl, pb, pr = node.attrs.get("padding", (0, 0, 0, 0))
    n, oh, ow, c, kh, kw = loop_vars("n", "oh", "ow", "c", "kh", "kw")
    ih, iw = Var("ih"), Var("iw")
    return PoolWindow(arena(g, xt.name, "x"), arena(g, yt.name, "y"),
                      [(n, batch), (oh, out_h), (ow, out_w), (c, chans)], [(kh, fh), (kw, fw)], ih, iw,
                      add(sub(mul(oh, sh), pt), kh), add(sub(mul(ow, sw), pl), kw),
                      in_bounds([(ih, in_h, pt, pb), (iw, in_w, pl, pr)]), n, oh, ow, c)


@dataclass(frozen=True)
class Reduction:
    """Loops of a reduction over `axes`: one Var per input dim, kept (output) and reduced
    loops, and the output buffer viewed with only the kept dims."""

    x: Buffer
    y: Buffer
    idx: list
    kept: list
    reduced: list
    out_idx: list


def reduction(g: Graph, node: Node) -> Reduction:
    xt, yt = g.tensors[node.inputs[0]], g.tensors[node.outputs[0]]
    axes = set(node.attrs["axes"])
    idx = [Var(f"{'r' if k in axes else 'i'}{k}") for k in range(len(xt.shape))]
    kept = [(v, d) for k, (v, d) in enumerate(zip(idx, xt.shape)) if k not in axes]
    reduced = [(v, d) for k, (v, d) in enumerate(zip(idx, xt.shape)) if k in axes]
    return Reduction(arena(g, xt.name, "x"), arena(g, yt.name, "y", shape=tuple(d for _, d in kept) or (1,)),
                     idx, kept, reduced, [v for v, _ in kept] or [IntImm(0)])


class Requant:
    """How the int8 accumulator of output channel `oc` is requantized: per-channel arrays in
    flash, or immediates when every channel shares one multiplier. `p`: any op's parameters
    with output_multiplier, output_shift and rounding (ConvParams, MulParams)."""

    def __init__(self, node: Node, p, acc_bound: int):
        m, s = np.atleast_1d(np.array(p.output_multiplier, np.int64)), np.atleast_1d(np.array(p.output_shift, np.int64))
        self.rounding, self.buffers = p.rounding, []
        # The cheap exact forms need multipliers >= 0 (QuantizeMultiplier never makes others);
        # the cheapest also a right shift >= 1 and an accumulator below 2^30 (mc_requant.h).
        self.fast = p.rounding == qparams.DOUBLE and bool(np.all(m >= 0))
        self.right = self.fast and bool(np.all(s <= 0))
        self.rshift = self.right and bool(np.all(s <= -1)) and acc_bound < 2**30
        shifts = -s if self.right else s
        if len(set(m.tolist())) == 1 and len(set(s.tolist())) == 1:
            self.mult, self.shift = IntImm(int(m[0])), IntImm(int(shifts[0]))
            return
        mult = constant("mult", m.astype(np.int32), f"{node.name} requant multipliers")
        shift = constant("shift", shifts.astype(np.int32),
                         f"{node.name} requant {'right shifts' if self.right else 'shifts'}")
        self.buffers = [mult, shift]
        self.mult, self.shift = mult, shift

    def __call__(self, acc: Expr, oc: Expr) -> Expr:
        mult = self.mult if isinstance(self.mult, IntImm) else self.mult.load(oc)
        shift = self.shift if isinstance(self.shift, IntImm) else self.shift.load(oc)
        if not self.fast:
            return requantize(acc, mult, shift, self.rounding)
        name = ("mc_mul_by_qm_pos_rshift" if self.rshift else
                "mc_mul_by_qm_pos_right" if self.right else "mc_mul_by_qm_pos")
        return Call(name, (acc, mult, shift), "int32")
