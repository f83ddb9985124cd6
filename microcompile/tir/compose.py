"""One kernel out of several, run a row at a time: the loop nest of a fused row group
(lower/fused.py builds the parts, schedule/default.py schedules each part and composes again).

Each part is the kernel of one op, made for the shapes of one row. `compose_rows` moves the
parts into one body inside loops over the rows: the parts' own names are prefixed (s0_, s1_,
...) so they stay unique; a buffer of a tensor that enters or leaves the group is read and
written at the row's offset (`RowNest.boundary`); a tensor between two parts is one row of
scratch (`RowNest.scratch`). An int8 matmul whose right operand is read whole per head
(`RowNest.whole`) is split into the packing of that operand (mc_matmul_s8_pack_b), placed
before the last row loop, and the product of each row with the packed copy (mc_matmul_s8_packed).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from ..ir.graph import NP_DTYPES
from .intrinsics_copy import MOVE_KERNEL
from .nodes import (Address, Allocate, Buffer, Call, Evaluate, Expr, IntImm, Load, PrimFunc, Stmt, Store, Var, add,
                    loops, rewrite, seq)


@dataclass(frozen=True, eq=False)
class RowNest:
    """How the parts of a row group are put together. `boundary`: tensor -> (its buffer in
    the fused kernel, the flat index of a row's first element, in `rows`); `scratch`: tensor ->
    one row of it; `whole`: the boundary buffers read whole per head; `rows` and `extents`: the
    row loops, outermost first; `head`: how many of them come before the per-head packing."""

    boundary: dict
    scratch: dict
    whole: frozenset
    rows: tuple[Var, ...]
    extents: tuple[int, ...]
    head: int


@dataclass(frozen=True, eq=False)
class RowParts:
    """A fused kernel's parts (unscheduled, one per op) and how they compose: kept in the
    PrimFunc's attrs so that the schedule stage can schedule each part and compose again."""

    parts: tuple[PrimFunc, ...]
    nest: RowNest

    def compose(self, parts: list[PrimFunc]) -> tuple[Stmt, tuple[Buffer, ...]]:
        return compose_rows(parts, self.nest)

    def __str__(self) -> str:
        return f"{len(self.parts)} parts: {', '.join(p.attrs.get('op', p.name) for p in self.parts)}"

    __repr__ = __str__


class _Rebase:
    def __init__(self, prefix: str, nest: RowNest):
        self.prefix, self.nest = prefix, nest
        self.buffers: dict[Buffer, Buffer] = {}

    def buffer(self, b: Buffer) -> tuple[Buffer, Expr | None]:
        if b.scope == "arena" and b.tensor in self.nest.boundary:
            return self.nest.boundary[b.tensor]
        if b.scope == "arena":
            return self.nest.scratch[b.tensor], None
        if b not in self.buffers:
            self.buffers[b] = replace(b, name=self.prefix + b.name)
        return self.buffers[b], None

    def __call__(self, n):
        if isinstance(n, Var):
            return Var(self.prefix + n.name, n.dtype)
        if isinstance(n, (Load, Address, Store)):
            buf, off = self.buffer(n.buffer)
            return replace(n, buffer=buf, index=n.index if off is None else add(n.index, off))
        if isinstance(n, Allocate):
            return replace(n, buffer=self.buffer(n.buffer)[0])
        return None


def _split_packing(stmt: Stmt, whole: frozenset) -> tuple[Stmt | None, Stmt]:
    if not (isinstance(stmt, Evaluate) and stmt.call.name == "mc_matmul_s8" and stmt.call.args[2].buffer in whole):
        return None, stmt
    y, a, b, scratch, params = stmt.call.args
    return (Evaluate(Call("mc_matmul_s8_pack_b", (scratch, b, params), "void")),
            Evaluate(Call("mc_matmul_s8_packed", (y, a, scratch, params), "void")))


def compose_rows(parts: list[PrimFunc], nest: RowNest) -> tuple[Stmt, tuple[Buffer, ...]]:
    """The fused body and every buffer it touches (boundary, scratch rows, the parts' own)."""
    buffers = {id(b): b for b, _ in nest.boundary.values()} | {id(b): b for b in nest.scratch.values()}
    heads, per_row = [], []
    for j, part in enumerate(parts):
        rebase = _Rebase(f"s{j}_", nest)
        stmt = rewrite(part.body, rebase)
        for b in part.buffers:
            nb = rebase.buffer(b)[0]
            buffers.setdefault(id(nb), nb)
        head, stmt = _split_packing(stmt, nest.whole)
        heads.append(head)
        per_row.append(stmt)
    k = nest.head
    body = loops(list(zip(nest.rows[k:], nest.extents[k:])), seq(*per_row))
    return loops(list(zip(nest.rows[:k], nest.extents[:k])), seq(*heads, body)), tuple(buffers.values())


# ------------------------------------------------------------------ patch stages (bands)

@dataclass(frozen=True, eq=False)
class BandRun:
    """Bands in a row that run the same kernels (lower/patch.py): `count` of them, `var`
    counting them; `places[i]`: tensor -> (buffer, flat index of the band's first element,
    in `var`) for part i's arena buffers; `moves`: (window, from element, elements) copies to
    the window's top before the band's parts."""

    count: int
    var: Var
    places: tuple[dict, ...]
    moves: tuple[tuple[Buffer, int, int], ...]


@dataclass(frozen=True, eq=False)
class BandParts:
    """A patch stage's parts (one kernel per op and run of bands, unscheduled, in run order,
    None where the op rests in that run) and its runs: kept in the PrimFunc's attrs so that the
    schedule stage can schedule each part and compose again (schedule_parts)."""

    parts: tuple[PrimFunc, ...]
    runs: tuple[BandRun, ...]
    slots: tuple[tuple[int | None, ...], ...]     # per run, per op: index into parts or None
    windows: tuple[Buffer, ...]

    def compose(self, parts: list[PrimFunc]) -> tuple[Stmt, tuple[Buffer, ...]]:
        return compose_bands(parts, self)

    def scratch_union(self, buffers: tuple[Buffer, ...]) -> tuple[tuple[str, ...], ...]:
        """The scratch buffers of each placed part, by name (b<run>_<op>_...): one group per
        part. The parts run one after another, so their groups share one region
        (tir/nodes.py scratch_layout); the windows are outside it."""
        groups: dict[tuple[int, int], list[str]] = {}
        windows = {w.name for w in self.windows}
        for b in buffers:
            if b.scope == "scratch" and b.name not in windows:
                r, i, _ = b.name.split("_", 2)
                groups.setdefault((int(r[1:]), int(i)), []).append(b.name)
        return tuple(tuple(v) for _, v in sorted(groups.items()))

    def __str__(self) -> str:
        return f"{len(self.parts)} parts in {len(self.runs)} runs of bands"

    __repr__ = __str__


class _Place(_Rebase):
    """A part's buffers in the stage: arena buffers where `places` puts them, the rest
    renamed with the part's prefix; constants equal to one already placed are that one."""

    def __init__(self, prefix: str, places: dict, consts: dict):
        self.prefix, self.places, self.consts = prefix, places, consts
        self.buffers = {}

    def buffer(self, b: Buffer) -> tuple[Buffer, Expr | None]:
        if b.scope == "arena":
            return self.places[b.tensor]
        if b not in self.buffers:
            nb = replace(b, name=self.prefix + b.name)
            if b.scope == "const" and b.data is not None:
                key = (b.dtype, b.shape, b.data.tobytes())
                nb = self.consts.setdefault(key, nb)
            self.buffers[b] = nb
        return self.buffers[b], None


def compose_bands(parts: list[PrimFunc], bp: BandParts) -> tuple[Stmt, tuple[Buffer, ...]]:
    """The stage's body (each run: a loop over its bands, each band its window moves and then
    its parts) and every buffer it touches (BandParts.scratch_union groups the parts' scratch)."""
    buffers = {id(w): w for w in bp.windows}
    consts: dict = {}
    body = []
    for r, run in enumerate(bp.runs):
        stmts = []
        for w, src, n in run.moves:
            size = np.dtype(NP_DTYPES[w.dtype]).itemsize
            stmts.append(Evaluate(Call(MOVE_KERNEL, (Address(w, IntImm(0)), Address(w, IntImm(src)),
                                                     IntImm(n * size)), "void")))
        for i, slot in enumerate(bp.slots[r]):
            if slot is None:
                continue
            place = _Place(f"b{r}_{i}_", run.places[i], consts)
            stmts.append(rewrite(parts[slot].body, place))
            for b in parts[slot].buffers:
                nb = place.buffer(b)[0]
                buffers.setdefault(id(nb), nb)
        body.append(loops([(run.var, run.count)], seq(*stmts)))
    return seq(*body), tuple(buffers.values())

