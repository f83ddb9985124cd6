"""The memory report: what `deploy` adds to its JSON report and summary, and what
`inspect --memory` prints (and plots).

  arena       the planned arena, its lower bound (the most bytes live at one step, in-place
              sharing credited) and why the plan is above it, if it is
  timeline    live bytes per kernel step, with the largest buffers of each step named
  flash       code (runtime, kernels, generated code, startup), weights (the linked weight
              symbols), other (the self-test's input, vector table, initialized data); and the
              kernels given int16 weights with what that cost
  RAM         arena, other data, other bss, stack (the fit report's call-graph need, project/stack.py)
"""

from __future__ import annotations

import io
from pathlib import Path

from ..errors import UserError, shown
from ..escape import terminal
from ..files import write_file
from ..memory import MemoryPlan
from ..project.mapfile import prefix_bytes, symbols_bytes


_UNITS = {"": 1, "k": 1024, "kib": 1024, "kb": 1000, "m": 1 << 20, "mib": 1 << 20, "mb": 1000 ** 2}


def parse_bytes(text: str | None, flag: str) -> int | None:
    """"400000", "384K", "384KiB", "1M" -> bytes (K/KiB/M/MiB are powers of 1024, kB/MB of 1000)."""
    if text is None:
        return None
    t = text.strip().lower().replace(" ", "")
    digits = t.rstrip("kibm")
    unit = t[len(digits):]
    if not digits.isdigit() or unit not in _UNITS or int(digits) * _UNITS[unit] <= 0:
        raise UserError(f"{flag} {text!r} is not a number of bytes", hint=f"e.g. {flag} 400000, {flag} 384K or {flag} 1M")
    return int(digits) * _UNITS[unit]


def kernel_names(compiled) -> dict[str, str]:
    """node name -> kernel name (k<i>_<op>, as in model.c and manifest.json)."""
    return {n.name: f"k{i}_{n.op}" for i, (n, _, _) in enumerate(compiled.kernels)}


def widened_kernels(compiled) -> list[str]:
    return _kernels_of(compiled, compiled.widened)


def int4_kernels(compiled) -> list[str]:
    """The kernels whose weights are packed int4 in flash (unpacked into scratch as they run,
    or read in place)."""
    return _kernels_of(compiled, compiled.stored_int4)


def _kernels_of(compiled, nodes) -> list[str]:
    names = kernel_names(compiled)
    order = {n.name: i for i, (n, _, _) in enumerate(compiled.kernels)}
    return [names[n] for n in sorted(nodes, key=lambda n: order.get(n, -1)) if n in names]


def report_keys(compiled, sizes, project_dir: Path, fit=None) -> dict:
    """The deploy report's memory keys (README, "Report"). `fit` is the board's fit report
    (project/fit.py: the linked sections and the call graph's stack need); None on the host,
    where the map file and the manifest give what they can."""
    manifest = compiled.manifest
    mapfile = project_dir / "firmware.map"
    weights = fit.needs.get("weights") if fit is not None else None
    if weights is None and mapfile.is_file():
        weights = symbols_bytes(mapfile, [c["symbol"] for c in manifest.get("constants", [])])
    if weights is None:
        weights = manifest["weights_bytes"]
    # "other": what is neither program nor weights: the self-test's embedded input, the vector
    # table, the image of initialized data.
    inputs = prefix_bytes(mapfile, ".rodata.mc_test_input") if mapfile.is_file() else 0
    other = inputs + sizes.sections.get(".isr_vector", 0) + sizes.data
    arena = compiled.plan.arena_bytes
    stack = fit.stack.bytes if fit is not None and fit.stack is not None else None
    return {
        "arena_lower_bound_bytes": compiled.plan.lower_bound,
        "arena_planner": compiled.plan.planner,
        "flash_weights_bytes": weights,
        "flash_code_bytes": max(sizes.flash - weights - other, 0),
        "flash_other_bytes": other,
        "stack_bytes": stack,
        "stack_reserve_bytes": sizes.sections.get(".stack_reserve", 0),
        "ram_data_bytes": sizes.data,
        "ram_bss_bytes": max(sizes.bss - arena - sizes.sections.get(".stack_reserve", 0), 0),
        "widened_kernels": widened_kernels(compiled),
        "widened_bytes": _widened_bytes(compiled),
        "int4_kernels": int4_kernels(compiled),
        "int4_saved_bytes": sum(compiled.stored_int4.values()),
        **patch_keys(compiled),
        **ram_weight_keys(compiled),
    }


def ram_weight_keys(compiled) -> dict:
    """The report's --weights-in-ram keys: the bytes copied to RAM at mc_init and the kernels."""
    copied = compiled.manifest.get("ram_weights", {})
    return {"weights_in_ram_bytes": sum(copied.get("banks", {}).values()),
            "weights_in_ram_kernels": list(copied.get("kernels", []))}


def patch_keys(compiled) -> dict:
    """The report's patch stage keys: the stage as --patch spells it (None: none) and the
    arena the plan without it needs (None when it was not planned)."""
    choice = getattr(compiled, "patch", None)
    return {"patch_stage": str(choice.spec) if choice is not None and choice.spec is not None else None,
            "arena_without_patch_bytes": choice.arena_without if choice is not None else None}


def _widened_bytes(compiled) -> int:
    """Extra flash of the int16 weights (their bytes less the int8 ones they replace)."""
    return sum(compiled.widened.values())


def summary_lines(r: dict) -> list[str]:
    """The deploy summary's memory lines."""
    lines = [f"arena        {r['arena_bytes']:>10,} bytes (lower bound {r['arena_lower_bound_bytes']:,}, "
             f"planner {r['arena_planner']})"]
    lines.append(f"flash        {r['flash_bytes']:>10,} bytes: code {r['flash_code_bytes']:,}, "
                 f"weights {r['flash_weights_bytes']:,}, other {r['flash_other_bytes']:,} "
                 f"(test input, vectors, data)")
    widened = r.get("widened_kernels") or []
    lines.append("weights      the model's own types (no int16 copies, no tables)" if not widened else
                 f"weights      int16 (ADD: tables) in {len(widened)} kernel(s), +{r['widened_bytes']:,} bytes: "
                 f"{', '.join(widened)}")
    packed = r.get("int4_kernels") or []
    if packed:
        lines.append(f"weights      packed int4 in {len(packed)} kernel(s), -{r['int4_saved_bytes']:,} bytes against int8 "
                     f"(unpacked into the arena as each runs, or read in place): {', '.join(packed)}")
    # The RAM total counts the stack's reserve (what the linker keeps free for it); the stack the
    # call graph needs in the worst case is shown beside it, so the parts add up to the total.
    need = f", needs {r['stack_bytes']:,} worst case" if r.get("stack_bytes") is not None else ""
    reserve = r.get("stack_reserve_bytes") or 0
    stack = f"stack reserve {reserve:,}{need}" if reserve else \
        (f"stack {r['stack_bytes']:,} (worst case)" if r.get("stack_bytes") is not None else "stack n/a")
    lines.append(f"ram          {r['ram_bytes']:>10,} bytes: arena {r['arena_bytes']:,}, data {r['ram_data_bytes']:,}, "
                 f"bss {r['ram_bss_bytes']:,}, {stack}")
    return lines


def timeline_rows(plan: MemoryPlan, graph, top: int = 3) -> list[dict]:
    """Per step: the node, its live bytes and the largest live buffers."""
    live = plan.timeline()
    rows = []
    for step, node in enumerate(graph.nodes):
        bufs = plan.live(step)
        rows.append({"step": step, "node": node.name, "op": node.op, "live": live[step],
                     "largest": [(b.name, b.size) for b in bufs[:top]]})
    return rows


def gap_reason(plan: MemoryPlan) -> str:
    """Why the arena is above its lower bound (alignment, or buffers that outlive the peak); of
    an arena split over banks (memory/banks.py), the bytes in each."""
    if plan.bank_bytes:
        total = plan.arena_bytes + sum(plan.bank_bytes.values())
        parts = ", ".join(f"{n:,} in {b}" for b, n in sorted(plan.bank_bytes.items()))
        return (f"split over memory banks (the board's `ram` bank does not hold it): {plan.arena_bytes:,} bytes in "
                f"the primary arena, {parts}; {total:,} in all, {total - plan.lower_bound:,} above the bound")
    gap = plan.arena_bytes - plan.lower_bound
    if gap <= 0:
        return "the plan reaches the lower bound"
    peak = max(range(plan.steps + 1), key=lambda s: plan.timeline()[s])
    live = plan.live(peak)
    padding = sum(-b.size % b.align for b in live)
    if gap <= padding + 15:
        return f"{gap} bytes above the bound: 16-byte alignment of the {len(live)} buffers live at the peak"
    # An output written over its input sits a little below it; down a chain of such layers
    # the offsets drift, which no single step's live bytes show.
    size = {b.name: b.size for b in plan.buffers}
    drift = sum(max(0, plan.offsets[o.src] - plan.offsets[o.out]) for o in plan.overlaps
                if plan.offsets[o.out] < plan.offsets[o.src] + size[o.src]
                and plan.offsets[o.src] < plan.offsets[o.out] + size[o.out])
    if 0 < gap <= drift + padding + 15:
        return (f"{gap} bytes above the bound: in-place layers write their output a little below their input "
                f"(window kernels: up to a row of pixels), and down the chains the offsets drift by {drift:,} bytes")
    return (f"{gap} bytes above the bound: no placement the planners found lets every step reach its live "
            f"bytes at once (buffers that outlive the peak, or in-place chains that shift downward, fragment "
            f"the arena); planners tried: " + ", ".join(f"{k} {v:,}" for k, v in plan.tried.items()))


def patch_lines(compiled) -> list[str]:
    """What --patch did (compiler/patches.py): the stage, its bands, the arena with and without."""
    choice = getattr(compiled, "patch", None)
    if choice is None:
        return []
    if choice.spec is None:
        why = "--patch off" if choice.mode == "off" else "auto: no stage makes the arena smaller"
        return [f"patch stage: none ({why})"]
    node = next(n for n in compiled.graph.nodes if n.op == "patch_stage")
    body = node.attrs["body"]
    first, last = body.nodes[0].name, body.nodes[-1].name
    how = "auto" if choice.mode == "auto" else f"--patch {len(body.bands)}x1@{shown(first)}:{shown(last)}"
    line = (f"patch stage ({how}): "
            f"{shown(first)}..{shown(last)} ({len(body.nodes)} layers) in {len(body.bands)} bands of {body.rows} "
            f"output row(s), windows {body.window_bytes():,} bytes, estimated {choice.extra_instructions:+,} "
            f"instructions")
    out = [line]
    if choice.arena_without is not None:
        out.append(f"  arena {compiled.plan.arena_bytes:,} bytes with the stage, {choice.arena_without:,} without "
                   f"({choice.arena_without / max(compiled.plan.arena_bytes, 1):.2f}x)")
    return out


def format_memory(compiled, top: int = 3) -> str:
    """`inspect --memory` text: the arena, its bound, the timeline, the in-place rules used."""
    plan, graph = compiled.plan, compiled.graph
    width = max(plan.timeline(), default=0) or 1
    out = [f"arena {plan.arena_bytes:,} bytes, lower bound {plan.lower_bound:,} bytes "
           f"(planner {plan.planner}; {', '.join(f'{k} {v:,}' for k, v in plan.tried.items())})",
           gap_reason(plan), *patch_lines(compiled), "",
           f"{'step':>4}  {'layer':<28} {'op':<18} {'live':>8}  timeline / largest buffers"]
    for r in timeline_rows(plan, graph, top):
        bar = "#" * max(1, round(24 * r["live"] / width)) if r["live"] else ""
        names = ", ".join(f"{_short(n)} {s:,}" for n, s in r["largest"])
        out.append(f"{r['step']:>4}  {_short(r['node'], 28):<28} {r['op']:<18} {r['live']:>8,}  {bar:<24} {names}")
    used = list(plan.used if plan.used is not None else plan.overlaps)
    if used:
        out += ["", "in place (output written over an input that dies with it, max shift in bytes):"]
        out += [f"  {_short(o.out, 40)} over {_short(o.src, 40)} ({o.max_shift:+,})" for o in used]
    if compiled.widened:
        out += ["", "int16 weights (ADD: rescale tables), flash to spare: " + ", ".join(widened_kernels(compiled))]
    copied = compiled.manifest.get("ram_weights")
    if copied:
        banks = ", ".join(f"{n:,} bytes in {shown(b) or 'the RAM bank'}" for b, n in copied["banks"].items())
        out += ["", f"weights copied to RAM at mc_init (--weights-in-ram): {banks}; "
                    + ", ".join(shown(k) for k in copied["kernels"])]
    elif getattr(compiled, "ram_weights", None) is not None and compiled.ram_weights.reason:
        out += ["", f"weights in RAM: none ({compiled.ram_weights.reason})"]
    if compiled.stored_int4:
        out += ["", "packed int4 weights (flash is short; unpacked into scratch as each kernel runs, or read in "
                "place): "
                + ", ".join(int4_kernels(compiled))]
    return "\n".join(out)


def plot_memory(compiled, path: str | Path) -> None:
    """The timeline as a stacked bar chart per step (matplotlib, an optional extra)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        matplotlib.rcParams["svg.hashsalt"] = "microcompile"     # the same SVG ids every run
        import matplotlib.pyplot as plt
    except ImportError:
        raise UserError("--plot needs matplotlib", hint="pip install 'microcompile[plot]' (or pip install matplotlib)") \
            from None
    plan, graph = compiled.plan, compiled.graph
    steps = list(range(len(graph.nodes)))
    fig, ax = plt.subplots(figsize=(max(7, 0.4 * len(steps) + 3), 4.5))
    bottoms = [0] * len(steps)
    labels = legend_labels([b.name for b in plan.buffers])
    for b in sorted(plan.buffers, key=lambda b: (b.first, b.name)):
        heights = [b.size if b.first <= s <= b.last else 0 for s in steps]
        ax.bar(steps, heights, bottom=bottoms, label=labels[b.name] if b.size >= plan.arena_bytes / 8 else None)
        bottoms = [x + h for x, h in zip(bottoms, heights)]
    ax.plot(steps, plan.timeline()[:len(steps)], "k-", label="live bytes (in-place sharing credited)")
    ax.axhline(plan.arena_bytes, color="r", linestyle="--", label=f"arena {plan.arena_bytes:,} B")
    ax.set_ylim(0, max(max(bottoms, default=0), plan.arena_bytes) * 1.12)   # no bar top cut off
    ax.set_xlabel("kernel step")
    ax.set_ylabel("bytes")
    ax.set_title(f"{graph.name}: arena {plan.arena_bytes:,} B, lower bound {plan.lower_bound:,} B", fontsize=9)
    # Why a stack can pass the arena line: a kernel that writes over its input in place makes
    # two buffers that share bytes; each is drawn whole, the black line counts the shared bytes once.
    ax.text(0.01, 0.98, "bars: every buffer live at a step, stacked (buffers written in place share bytes,\n"
            "so a stack may pass the arena; the black line counts them once)", transform=ax.transAxes,
            fontsize=6, va="top")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)
    fig.tight_layout()
    # A fixed date and no hash salt keep an SVG byte-for-byte reproducible.
    fmt = Path(path).suffix[1:].lower() or "png"
    buf = io.BytesIO()
    fig.savefig(buf, format=fmt, metadata={"Date": None} if fmt == "svg" else None)
    plt.close(fig)
    write_file(path, buf.getvalue(), "--plot file")   # atomically, and never through a symlink


def legend_labels(names: list[str], width: int = 28) -> dict[str, str]:
    """A short, distinct legend label per buffer: the first of a TFLite name's ';'-joined names,
    its tail when long, and #k when two still read alike."""
    out, seen = {}, {}
    for name in names:
        label = _short(name.split(";")[0], width)
        seen[label] = seen.get(label, 0) + 1
        out[name] = label if seen[label] == 1 else f"{label} #{seen[label]}"
    return out


def _short(name: str, n: int = 32) -> str:
    name = terminal(name)
    return name if len(name) <= n else "…" + name[-(n - 1):]
