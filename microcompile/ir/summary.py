"""Per-layer summary of a Graph: shapes, dtypes, quantization, MACs and parameters.

`layer_table` computes the rows (plain dicts, usable by the CLI, reports and tests);
`format_table` renders them as aligned text for the terminal.
"""

from __future__ import annotations

from ..escape import terminal
from .graph import Graph, QuantParams, Tensor
from . import ops


def _quant_text(q: QuantParams | None) -> str:
    if q is None:
        return "-"
    if q.per_channel:
        return f"per-channel[{len(q.scale)}] axis {q.axis}"
    return f"{q.scale[0]:.6g}/{q.zero_point[0]}"


def _shape_text(shape) -> str:
    return "x".join(str(d) for d in shape) if shape else "scalar"


def layer_table(graph: Graph) -> list[dict]:
    """One row per node, in execution order.

    Keys: index, name, op, origin, inputs / outputs (lists of {name, shape, dtype, quant}
    for the non-constant tensors), weights (the same for constants), quant (text: input,
    output and weight quantization), macs, params (constant element count),
    weight_bytes, activation ("" when the op has none), out_bytes (bytes of the
    layer's output tensors, i.e. what the arena must hold for them).
    """
    rows = []
    for i, n in enumerate(graph.nodes):
        ins = [graph.tensors[t] for t in n.inputs if t]
        consts = [t for t in ins if t.is_const]
        acts = [t for t in ins if not t.is_const]
        outs = [graph.tensors[t] for t in n.outputs]

        def info(t: Tensor) -> dict:
            return {"name": t.name, "shape": tuple(t.shape), "dtype": t.dtype, "quant": t.quant}

        quant = ""
        if any(t.quant for t in acts + outs + consts):
            quant = (f"in {', '.join(_quant_text(t.quant) for t in acts) or '-'}; "
                     f"out {', '.join(_quant_text(t.quant) for t in outs)}")
            # The weights (first constant); the bias quantization follows from it.
            if consts and consts[0].quant is not None:
                quant += f"; w {_quant_text(consts[0].quant)}"
        rows.append({
            "index": i,
            "name": n.name,
            "op": n.op,
            "origin": n.origin,
            "inputs": [info(t) for t in acts],
            "outputs": [info(t) for t in outs],
            "weights": [info(t) for t in consts],
            "quant": quant,
            "macs": int(ops.get(n.op).macs(graph, n)),
            "params": sum(t.size for t in consts),
            "weight_bytes": sum(t.nbytes for t in consts),
            "out_bytes": sum(t.nbytes for t in outs),
            "activation": n.attrs.get("activation", ""),
        })
    return rows


def _fmt_bytes(n: int) -> str:
    return f"{n:,} B" if n < 1024 else f"{n:,} B ({n / 1024:.1f} KiB)"


def format_table(rows: list[dict]) -> str:
    """Aligned text table of `layer_table` rows, with a totals line."""
    header = ("#", "name", "op", "input", "output", "dtype", "act", "quant", "MACs", "params", "out bytes")
    right = {"#", "MACs", "params", "out bytes"}
    body = []
    for r in rows:
        dtypes = sorted({t["dtype"] for t in r["inputs"] + r["outputs"]})
        body.append((
            str(r["index"]), terminal(r["name"]), r["op"],
            ", ".join(_shape_text(t["shape"]) for t in r["inputs"]),
            ", ".join(_shape_text(t["shape"]) for t in r["outputs"]),
            "/".join(dtypes), r["activation"] if r["activation"] not in ("", "NONE") else "",
            r["quant"] or "-", f"{r['macs']:,}", f"{r['params']:,}", f"{r['out_bytes']:,}",
        ))
    widths = [max(len(h), *(len(row[k]) for row in body)) if body else len(h)
              for k, h in enumerate(header)]

    def line(cells):
        return "  ".join(c.rjust(w) if h in right else c.ljust(w)
                         for c, w, h in zip(cells, widths, header)).rstrip()

    out = [line(header), line(["-" * w for w in widths])]
    out += [line(row) for row in body]
    total_macs = sum(r["macs"] for r in rows)
    total_params = sum(r["params"] for r in rows)
    total_bytes = sum(r["weight_bytes"] for r in rows)
    out.append(f"total: {len(rows)} layers, {total_macs:,} MACs, {total_params:,} params, "
               f"weights {_fmt_bytes(total_bytes)}")
    return "\n".join(out)


def pass_effects(before: Graph, after: Graph) -> dict[str, list]:
    """What the graph passes did to the source layers of `before`, by Node.origin.

    Returns {"fused": [(node, layers)], "folded": [layer], "removed": [layer]}: the
    compiled nodes that stand for several source layers; the source layers evaluated at
    compile time (their outputs became constants); and those dropped because no output
    depends on them.
    """
    kept = {label for n in after.nodes for label in (n.origin or (n.name,))}
    effects: dict[str, list] = {"fused": [(n.name, tuple(n.origin)) for n in after.nodes if len(n.origin) > 1],
                                "folded": [], "removed": []}
    for n in before.nodes:
        label = n.origin[0] if n.origin else n.name
        if label in kept:
            continue
        outs = [after.tensors.get(o) for o in n.outputs]
        effects["folded" if all(t is not None and t.is_const for t in outs) else "removed"].append(label)
    return effects


def format_pass_effects(effects: dict[str, list], n_before: int, n_after: int) -> str:
    """Text lines for `pass_effects`; empty when the passes changed nothing."""
    if not any(effects.values()) and n_before == n_after:
        return ""
    out = [f"after graph passes: {n_after} layers from {n_before}"]
    out += [f"  {terminal(node)}: fused {' + '.join(map(terminal, layers))}" for node, layers in effects["fused"]]
    out += [f"  {terminal(layer)}: folded to a constant at compile time" for layer in effects["folded"]]
    out += [f"  {terminal(layer)}: removed (no output depends on it)" for layer in effects["removed"]]
    return "\n".join(out)
