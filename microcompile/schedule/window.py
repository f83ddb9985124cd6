"""The im2col of a row of output pixels as one window of input pixels, read as overlapping
columns: `cache_window` and the weight layout it needs, `transpose_constant`.

A KHxKW convolution's im2col copies each input element up to KH*KW times (kws, ResNet: 9),
one column per output pixel. Within one output row, the pixels' taps of one kernel row are
the same input pixels shifted by the stride: cached once per block as

    win[u][kh][ic] = X(oh, u, kh, ic)        u = ow_i * stride + kw, the block's input columns

the column of output pixel ow_i is the contiguous run win[ow_i * stride] .. of KW*KH*C
elements, in (kw, kh, ic) order: the GEMM reads B with ldb = stride*KH*C < k (overlapping
columns) and weights laid out (oc, kw, kh, ic). A block of 8 pixels of a 3x3 stride-1 conv
copies 10 input columns instead of 72 taps (ResNet-8's 16-channel 3x3 convs: 41% of the
elements, in the same scratch).
"""

from __future__ import annotations

import numpy as np

from ..tir.nodes import Buffer, Cast, For, IntImm, LetStmt, Load, PrimFunc, Stmt, Store, Var, add, mul, \
    rewrite, simplify, substitute, walk
from ..tir.verify import verify_primfunc
from .cache import _fresh, _names, _WIDER, let_and_deps, read_from_cache
from .primitives import ScheduleError, find_loop, primitive
from .tensorize import affine


@primitive("transpose_constant")
def transpose_constant(f: PrimFunc, buffer: str, *perm: int) -> PrimFunc:
    """Store constant `buffer` with its dimensions permuted (computed now, on the host): new
    dimension i is old dimension perm[i]. Every read is rewritten to the same element, so
    values are unchanged; each loop var of a read's index must step along one dimension.

        w: int8[16,3,3,16]; w[oc*144 + kh*48 + kw*16 + ic]   --transpose_constant(w, 0, 2, 1, 3)-->
        w: int8[16,3,3,16]; w[oc*144 + kw*48 + kh*16 + ic]   (the data transposed to match)"""
    old = next((b for b in f.buffers if b.name == buffer and b.scope == "const"), None)
    if old is None:
        raise ScheduleError(f"{f.name}: no constant named {buffer}")
    if sorted(perm) != list(range(len(old.shape))):
        raise ScheduleError(f"transpose_constant {buffer}: {perm} is not a permutation of {len(old.shape)} dims")
    shape = tuple(old.shape[p] for p in perm)
    data = np.ascontiguousarray(np.asarray(old.data).reshape(old.shape).transpose(perm))
    new = Buffer(old.name, old.dtype, shape, "const", data=data,
                 comment=f"{old.comment} (dims {', '.join(map(str, perm))})")
    old_strides = [int(np.prod(old.shape[d + 1:])) for d in range(len(old.shape))]
    new_stride = {p: int(np.prod(shape[i + 1:])) for i, p in enumerate(perm)}
    loops = {n.var.name: n.extent for n in walk(f.body) if isinstance(n, For)}

    def dim_of(coeff: int, extent: int) -> int | None:
        """The old dimension a loop var with this index coefficient steps along (within it)."""
        for d, s in enumerate(old_strides):
            if coeff % s == 0 and coeff // s * (extent - 1) < old.shape[d] and coeff // s > 0:
                return d
        return None

    def new_index(index):
        parts = affine(index, set(loops))
        if parts is None or not isinstance(simplify(parts[1]), IntImm):
            raise ScheduleError(f"transpose_constant {buffer}: index {index} is not affine in the loops")
        coeffs = parts[0]
        vars_ = {n.name: n for n in walk(index) if isinstance(n, Var)}
        rest, terms = simplify(parts[1]).value, []
        digits = []
        for d, s in enumerate(old_strides):
            digits.append(rest // s)
            rest %= s
        out = sum(digits[d] * new_stride[d] for d in range(len(old.shape)))
        reach = list(digits)          # each dimension's largest index over the loops: no carries
        for v, c in coeffs.items():
            d = dim_of(c, loops[v])
            if d is None:
                raise ScheduleError(f"transpose_constant {buffer}: loop {v} (stride {c}) does not step along "
                                    f"one dimension of {old.shape}")
            reach[d] += c // old_strides[d] * (loops[v] - 1)
            terms.append(mul(vars_[v], c // old_strides[d] * new_stride[d]))
        if any(r >= n for r, n in zip(reach, old.shape)):
            raise ScheduleError(f"transpose_constant {buffer}: index {index} carries from one dimension into the "
                                f"next")
        expr = IntImm(out)
        for t in terms:
            expr = add(t, expr)
        return simplify(expr)

    def fn(n):
        if isinstance(n, Load) and n.buffer is old:
            return Load(new, new_index(n.index))
        return None
    if any(getattr(n, "buffer", None) is old and not isinstance(n, Load) for n in walk(f.body)):
        raise ScheduleError(f"transpose_constant {buffer}: it must be read by loads only")
    body = rewrite(f.body, fn)
    return verify_primfunc(PrimFunc(f.name, tuple(new if b is old else b for b in f.buffers), body, dict(f.attrs)))


@primitive("cache_window")
def cache_window(f: PrimFunc, let_var: str, at: str, pixel: str, tap: str, dtype: str | None = None) -> PrimFunc:
    """cache_read's window form: compute the let-bound input tap `let_var` once per input
    position u = pixel * S + tap of the block (`pixel` the output pixels of one row, `tap` the
    kernel column, S the stride), into scratch filled at the start of `at`'s body, and read it
    from there:

        for ow_i { for oc { for kw { for kh { for ic { let iw = ow_i*S + kw + R; let v = X(iw, kh, ic) ...
        --cache_window(v, at, ow_i, kw)-->
        for u_c { for kh_c { for ic_c { v_win[u_c, kh_c, ic_c] = X(u_c + R, kh_c, ic_c) } } }
        for ow_i { ... v_win[ow_i*S + kw, kh, ic] ... }

    Requires: `pixel` and `tap` reach the value only through one let, affine in them with
    coefficients S and 1 (a dilation-1 window); the value reads no buffer written under `at`."""
    top = find_loop(f, at)
    let, deps = let_and_deps(f, top, at, let_var)
    dtype = dtype or let.value.dtype
    if dtype not in _WIDER.get(let.value.dtype, ()):
        raise ScheduleError(f"cache_window of {let.value.dtype} into {dtype} would change values")
    loops_ = {n.var.name: n for n in deps if isinstance(n, For)}
    if pixel not in loops_ or tap not in loops_:
        raise ScheduleError(f"cache_window: {let_var} does not depend on both {pixel} and {tap}")
    # the one let through which pixel and tap reach the value: u = pixel * S + tap + rest
    lets = [n for n in deps if isinstance(n, LetStmt)]
    users = [n for n in lets if any(isinstance(v, Var) and v.name in (pixel, tap) for v in walk(n.value))]
    direct = any(isinstance(v, Var) and v.name in (pixel, tap) for v in walk(let.value))
    if len(users) != 1 or direct:
        raise ScheduleError(f"cache_window: {pixel} and {tap} must reach {let_var} through one let (an input column)")
    col = users[0]
    parts = affine(col.value, {pixel, tap})
    if parts is None or parts[0].get(tap) != 1 or parts[0].get(pixel, 0) < 1 or set(parts[0]) != {pixel, tap}:
        raise ScheduleError(f"cache_window: {col.var.name} = {col.value} is not pixel * stride + tap "
                            f"(a dilation-1 window)")
    stride = parts[0][pixel]
    p_loop, t_loop = loops_[pixel], loops_[tap]
    span = (p_loop.extent - 1) * stride + t_loop.extent
    others = [n for n in deps if isinstance(n, For) and n.var.name not in (pixel, tap)]
    taken = _names(f)
    cache = Buffer(_fresh(f"{let_var}_win", taken), dtype, (span, *(n.extent for n in others)), "scratch",
                   comment=f"{let_var} for each input column u = {pixel} * {stride} + {tap} of the block, "
                           f"({', '.join(n.var.name for n in others)})")
    u = Var(_fresh("u_c", taken))
    rename = {n.var: Var(_fresh(f"{n.var.name}_c", taken), n.var.dtype) for n in deps
              if n.var.name not in (pixel, tap)}
    # the stage: the let of the input column becomes u + rest (pixel = 0, tap = u)
    pvar, tvar = p_loop.var, t_loop.var
    stage_lets = [LetStmt(n.var, substitute(n.value, {pvar: IntImm(0), tvar: u}) if n is col else n.value, None)
                  for n in lets]
    stage: Stmt = Store(cache, cache.at(u, *(rename[n.var] for n in others)),
                        Cast(dtype, let.value) if dtype != let.value.dtype else let.value)
    for n in reversed(stage_lets):
        stage = LetStmt(n.var, n.value, stage)
    stage = substitute(stage, rename)
    for n in reversed(others):
        stage = For(rename[n.var], n.extent, stage, n.kind)
    stage = For(u, span, stage)
    load = Load(cache, cache.at(add(mul(pvar, stride), tvar), *(n.var for n in others)))
    return read_from_cache(f, top, at, let, stage, load)
