"""patch_stage (ir/ops_patch.py): the chain's ops band by band, through windows of rows.

The bands' schedule (PatchStage.bands) says, per band, which rows each op writes and reads,
with the padding of the image border where a band touches it. Bands that do the same (the
steady state between the first bands, which fill the windows, and the last, which meet the
bottom border) form a run: one loop over them, with the same kernels. Each op of a run is
lowered as its own kernel would be, on the band's shapes (rows of the input it reads, rows of
the output it writes, its padding in the band); tir/compose.py places its arena buffers:

  the stage's input      read whole from the arena, at the band's first row (a band of rows of an
                         NHWC tensor is contiguous);
  the stage's output     written to the arena at the band's first row;
  a tensor in between    a window of rows in scratch; its producer writes the band's new rows
                         below the rows the window keeps from the band before, which move to its
                         top first (mc_move_bytes).

The schedule stage schedules each part as that op's kernel (micro-kernels, tables) and
composes again (schedule_parts). The parts run one after another, so their scratch shares one
region (scratch_union); the windows are scratch of their own.
"""

from __future__ import annotations

from ..ir.graph import Graph, Node
from ..ir.ops_patch import WINDOW_OPS, PatchStage
from ..tir.compose import BandParts, BandRun, compose_bands
from ..tir.nodes import Buffer, Expr, IntImm, Var, add, mul
from .common import arena, describe, lowering, lowering_of, make_func


def _signature(body: PatchStage, i: int) -> tuple:
    """What band i's kernels and moves are, apart from where the band starts."""
    b, k = body.bands[i], len(body.nodes)
    ops = []
    for j in range(k):
        (o0, o1), (n0, n1) = b.out[j], b.need[j]
        if o1 <= o0:
            ops.append(None)
            continue
        src = n0 - b.start[j - 1] if j > 0 else None
        dst = o0 - b.start[j] if j < k - 1 else None
        ops.append((n1 - n0, o1 - o0, b.pads[j], src, dst))
    return tuple(ops), body.moves(i)


def band_runs(body: PatchStage) -> list[tuple[int, int, tuple]]:
    """(first band, count, signature) of each run: consecutive bands with one signature whose
    first input row and first output row move by the same step from band to band."""
    k = len(body.nodes)
    runs: list[list] = []            # [first band, count, signature, step]
    for i, b in enumerate(body.bands):
        sig = _signature(body, i)
        at = (b.need[0][0], b.out[k - 1][0])
        if runs and runs[-1][2] == sig:
            first, count, _, step = runs[-1]
            origin = (body.bands[first].need[0][0], body.bands[first].out[k - 1][0])
            if count == 1:
                runs[-1][3] = (at[0] - origin[0], at[1] - origin[1])
                runs[-1][1] = 2
                continue
            if at == (origin[0] + count * step[0], origin[1] + count * step[1]):
                runs[-1][1] += 1
                continue
        runs.append([i, 1, sig, (0, 0)])
    return [(first, count, sig) for first, count, sig, _ in runs]


def _part_graph(body: PatchStage, j: int, rows_in: int, rows_out: int, pads: tuple[int, int]) -> tuple[Graph, Node]:
    """Op j on a band's shapes: its input `rows_in` rows, its output `rows_out`, its padding
    the band's at the top and bottom."""
    bg, node = body.graph, body.nodes[j]
    x, y = body.tensor(j), body.tensor(j + 1)
    xt, yt = bg.tensors[x], bg.tensors[y]
    tensors = dict(bg.tensors)
    tensors[x] = xt.replace(shape=(1, rows_in, *xt.shape[2:]), data=None)
    tensors[y] = yt.replace(shape=(1, rows_out, *yt.shape[2:]), data=None)
    if node.op in WINDOW_OPS:
        _, left, _, right = node.attrs.get("padding", (0, 0, 0, 0))
        node = node.replace(attrs={**node.attrs, "padding": (pads[0], left, pads[1], right)})
    keep = {i for i in node.inputs if i} | {y}
    g = bg.replace(tensors={n: t for n, t in tensors.items() if n in keep}, nodes=[node], inputs=[x], outputs=[y])
    return g, node


def _row_offset(body: PatchStage, t: int, first_row: int, step: int, var: Var) -> Expr:
    per_row = body.row_bytes(t) // _itemsize(body, t)
    return add(IntImm(first_row * per_row), mul(var, step * per_row)) if step else IntImm(first_row * per_row)


def _itemsize(body: PatchStage, t: int) -> int:
    tt = body.graph.tensors[body.tensor(t)]
    return tt.nbytes // tt.size


@lowering("patch_stage")
def lower_patch_stage(g: Graph, node: Node, target=None):
    body: PatchStage = node.attrs["body"]
    k = len(body.nodes)
    ends = {0: arena(g, body.tensor(0), "x", shape=(g.tensors[body.tensor(0)].size,)),
            k: arena(g, body.tensor(k), "y", shape=(g.tensors[body.tensor(k)].size,))}
    windows = {t: Buffer(f"win_{t}", body.graph.tensors[body.tensor(t)].dtype,
                         (body.window_rows(t) * body.row_bytes(t) // _itemsize(body, t),), "scratch",
                         comment=f"{body.window_rows(t)} rows of {describe(body.graph.tensors[body.tensor(t)])}")
               for t in range(1, k)}
    parts, runs, slots = [], [], []
    runs_of_bands = band_runs(body)
    for r, (first, count, (ops, moves)) in enumerate(runs_of_bands):
        var = Var(f"band{r}")
        b0 = body.bands[first]
        b1 = body.bands[first + 1] if count > 1 else b0
        places, slot = [], []
        for j, op in enumerate(ops):
            if op is None:
                places.append({})
                slot.append(None)
                continue
            rows_in, rows_out, pads, src, dst = op
            pg, pn = _part_graph(body, j, rows_in, rows_out, pads)
            x, y = body.tensor(j), body.tensor(j + 1)
            where = {}
            where[x] = ((ends[0], _row_offset(body, 0, b0.need[0][0], b1.need[0][0] - b0.need[0][0], var)) if j == 0
                        else (windows[j], IntImm(src * body.row_bytes(j) // _itemsize(body, j))))
            where[y] = ((ends[k], _row_offset(body, k, b0.out[k - 1][0], b1.out[k - 1][0] - b0.out[k - 1][0], var))
                        if j == k - 1 else (windows[j + 1], IntImm(dst * body.row_bytes(j + 1) // _itemsize(body, j + 1))))
            places.append(where)
            slot.append(len(parts))
            parts.append(lowering_of(pg, pn)(pg, pn, target))
        mv = tuple((windows[t + 1], m[0] * body.row_bytes(t + 1) // _itemsize(body, t + 1),
                    m[1] * body.row_bytes(t + 1) // _itemsize(body, t + 1))
                   for t, m in enumerate(moves) if m is not None)
        runs.append(BandRun(count, var, tuple(places), mv))
        slots.append(tuple(slot))
    bp = BandParts(tuple(parts), tuple(runs), tuple(slots), tuple(windows.values()))
    stmt, buffers = compose_bands(list(parts), bp)
    return make_func(g, node, list(buffers), stmt, row_parts=bp, scratch_union=bp.scratch_union(buffers),
                     fused=f"{', '.join(m.op for m in body.nodes)}; {len(body.bands)} bands of {body.rows} output "
                           f"rows ({' + '.join(str(c) for _, c, _ in runs_of_bands)})")
