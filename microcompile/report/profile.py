"""The `microcompile profile` outputs: one row per kernel, as a table, JSON, CSV or a bar chart.

The JSON shape is fixed, other tools read it:
    {"unit": "cycles"|"instructions", "total": int, "layers": [{"name", "op", "macs", "count"}]}
("ns" is the unit on the host board.) `name` is the compiled layer a kernel runs. On a QEMU
twin each layer also has "estimated_cycles", the cycle model's estimate (docs/cycles.md).
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

from ..errors import UserError
from ..files import write_file
from .layers import short_layer_name


PLOT_FORMATS = ("png", "svg", "pdf")


@dataclass(frozen=True)
class ProfileRow:
    name: str                   # the compiled layer (node) the kernel runs
    layers: tuple[str, ...]     # the source layers fused into it
    op: str                     # with its fused activation, e.g. conv2d+RELU
    shape: tuple[int, ...]      # its (first) output's shape
    macs: int
    count: int                  # in the profile's unit
    estimated_cycles: int | None = None   # the cycle model's estimate (QEMU twins)

    @property
    def macs_per_count(self) -> float | None:
        return self.macs / self.count if self.count else None


def rows(compiled, counts, estimated=None) -> list[ProfileRow]:
    """One row per kernel of a compiler.Compiled, with its count from the profile (and its
    estimated cycles, when given)."""
    out = []
    estimated = estimated if estimated and len(estimated) == len(counts) else [None] * len(counts)
    for (node, func, _), count, est in zip(compiled.kernels, counts, estimated):
        act = node.attrs.get("activation", "NONE")
        out.append(ProfileRow(node.name, tuple(node.origin) or (node.name,),
                              node.op if act == "NONE" else f"{node.op}+{act}",
                              tuple(compiled.graph.tensors[node.outputs[0]].shape),
                              int(func.attrs.get("macs", 0)), int(count), est))
    return out


def to_json(unit: str, total: int, rows: list[ProfileRow]) -> dict:
    return {"unit": unit, "total": int(total),
            "layers": [{"name": r.name, "op": r.op, "macs": r.macs, "count": r.count,
                        **({"estimated_cycles": r.estimated_cycles} if r.estimated_cycles is not None else {})}
                       for r in rows]}


def format_table(rows: list[ProfileRow], unit: str, total: int, plain_total: int | None = None,
                 footer: list[str] = (), clock_hz: int | None = None) -> str:
    summed = sum(r.count for r in rows)
    estimated = bool(rows) and all(r.estimated_cycles is not None for r in rows)
    header = ("#", "name", "layer(s)", "op", "output", "MACs", unit, f"MACs/{_short(unit)}", "share") + \
        (("est. cycles",) if estimated else ())
    body = []
    for k, r in enumerate(rows):
        per = r.macs_per_count
        body.append((str(k), r.name, " + ".join(short_layer_name(x, 32) for x in r.layers), r.op,
                     "x".join(map(str, r.shape)) or "scalar", f"{r.macs:,}", f"{r.count:,}",
                     f"{per:.2f}" if per is not None and r.macs else "-",
                     f"{100 * r.count / summed:.1f}%" if summed else "-")
                    + ((f"{r.estimated_cycles:,}",) if estimated else ()))
    macs = sum(r.macs for r in rows)
    est_total = sum(r.estimated_cycles for r in rows) if estimated else 0
    body.append(("", "total", "", "", "", f"{macs:,}", f"{summed:,}",
                 f"{macs / summed:.2f}" if summed and macs else "-", "100.0%" if summed else "-")
                + ((f"{est_total:,}",) if estimated else ()))
    widths = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(header)]
    numeric = {0, 5, 6, 7, 8, 9}

    def line(cells):
        return "  ".join(c.rjust(w) if i in numeric else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [line(header), line(["-" * w for w in widths]), *(line(b) for b in body[:-1]),
           line(["-" * w for w in widths]), line(body[-1])]
    out.append(f"profiled run: {total:,} {unit} (kernels {summed:,}, "
               f"{100 * summed / total:.2f}% of it)" if total else f"profiled run: 0 {unit}")
    if estimated and clock_hz:
        out.append(f"est. cycles: the cycle model's estimate, {est_total:,} cycles = "
                   f"{1000 * est_total / clock_hz:.3f} ms at {clock_hz / 1e6:g} MHz for the kernels "
                   "(not a measurement: docs/cycles.md)")
    if plain_total is not None:
        out.append(f"without the per-kernel hooks: {plain_total:,} {unit} per inference "
                   f"(hook overhead {total - plain_total:,} {unit}, {_pct(total - plain_total, plain_total)})")
    return "\n".join(out + list(footer))


def _short(unit: str) -> str:
    return {"instructions": "instr", "cycles": "cycle"}.get(unit, unit)


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.3f}%" if whole else "-"


def write_csv(rows: list[ProfileRow], unit: str, path: str | Path) -> None:
    """One row per kernel (written atomically; missing parent directories are created)."""
    summed = sum(r.count for r in rows)
    f = io.StringIO(newline="")
    w = csv.writer(f)
    w.writerow(["name", "layers", "op", "output_shape", "macs", "count", "unit", "macs_per_count", "share"])
    for r in rows:
        per = r.macs_per_count
        w.writerow([r.name, " + ".join(r.layers), r.op, "x".join(map(str, r.shape)), r.macs, r.count, unit,
                    f"{per:.4f}" if per is not None else "", f"{r.count / summed:.6f}" if summed else ""])
    write_file(path, f.getvalue().encode(), "--csv file")


def write_plot(rows: list[ProfileRow], unit: str, path: str | Path, title: str) -> None:
    """A horizontal bar chart of the count per layer (matplotlib: the `plot` extra)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError("--plot needs matplotlib, which is not installed",
                        hint="pip install 'microcompile[plot]'") from None
    labels = [f"{r.name} ({r.op})" for r in rows]
    fig, ax = plt.subplots(figsize=(8, 1.2 + 0.3 * len(rows)))
    ax.barh(range(len(rows)), [r.count for r in rows], color="tab:blue")
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(unit)
    ax.set_title(title, fontsize=10)
    fig.tight_layout()
    fmt = Path(path).suffix[1:].lower() or "png"
    if fmt not in PLOT_FORMATS:
        plt.close(fig)
        raise UserError(f"cannot write the plot {path}: unknown format {fmt!r}",
                        hint=f"end the file name with one of {', '.join('.' + f for f in PLOT_FORMATS)}")
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
    plt.close(fig)
    write_file(path, buf.getvalue(), "--plot file")
