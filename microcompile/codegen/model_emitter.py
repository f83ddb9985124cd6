"""Render an artifact: model.c/.h, model_weights.c/.h (jinja2 templates in
templates/model/) and manifest.json.

Every value the templates print is computed here; the templates only loop over it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from .. import __version__
from ..escape import c_comment, c_identifier
from ..tir import intrinsics
from ..ir.graph import Graph, Node
from ..tir.nodes import PACKED_INT4, Call, PrimFunc, walk
from ..resources import resource_dir
from ..templating import environment, generated
from .c_emitter import C_TYPES, CEmitter, float_literal, kernel_arena_banks, kernel_arena_offsets, schedule_comment
from .manifest import ArtifactFiles, Figures, build_manifest, tensor_entry, write_manifest
from .naming import Naming
from .weights import ALIGN, ALIGN8_DTYPES, WeightArray, weight_arrays, write_weights

_SYSTEM_HEADERS = {"math.h", "string.h"}
_MC_DTYPES = {"int8": "MC_INT8", "float32": "MC_FLOAT32", "int32": "MC_INT32", "int16": "MC_INT16",
              "uint32": "MC_UINT32", "uint64": "MC_UINT64"}


class MemoryPlan(Protocol):
    """What codegen needs from a memory plan (microcompile.memory.plan.MemoryPlan)."""

    arena_bytes: int
    state_bytes: int

    def offset(self, tensor_name: str) -> int: ...

    def scratch_offset(self, node_name: str) -> int: ...

    def state_offset(self, tensor_name: str) -> int: ...


@dataclass(frozen=True)
class _Kernel:
    name: str      # k<i>_<op>
    c_name: str    # mc_k<i>_<op> (generated: a C identifier)
    op: str
    macs: int
    code: str      # generated C, every name in it escaped by the emitter


# A constant's role (its buffer name in the lowering) as it reads in a symbol name.
_ROLES = {"w": "weights", "mult": "requant_mult", "shift": "requant_shift", "rshift": "requant_rshift"}


def weight_symbol(naming: Naming, kernel: str, buffer_name: str) -> str:
    """The C symbol of a kernel's constant: <prefix>_<kernel>_<role>, e.g. mc_k0_conv2d_weights,
    so that model_weights.c and the map file say which layer owns which bytes."""
    return c_identifier(naming.symbol(f"{kernel}_{_ROLES.get(buffer_name, buffer_name)}"))


def _collect_weights(kernels: list[tuple[Node, PrimFunc]], naming: Naming) -> tuple[list[WeightArray], list[str]]:
    """Every constant of the kernels as a named array, and the node each belongs to."""
    out, owners, used = [], [], set()
    for i, (node, f) in enumerate(kernels):
        for b in f.buffers:
            if b.scope == "const":
                symbol = base = weight_symbol(naming, f"k{i}_{node.op}", b.name)
                k = 1
                while symbol in used:
                    symbol, k = f"{base}_{k}", k + 1
                used.add(symbol)
                out.append(WeightArray(symbol, b))
                owners.append(node.name)
    return out, owners


def _ram_copies(weights: list[WeightArray], owners: list[str], banks: dict) -> dict[str, dict]:
    """{flash symbol: the template's row} for each constant of a kernel in `banks`."""
    out = {}
    for w, owner in zip(weights, owners):
        if owner not in banks or w.buffer.dtype == PACKED_INT4:
            continue
        bank = banks[owner]
        out[w.symbol] = {"flash": generated(w.symbol), "ram": generated(f"{w.symbol}_ram"),
                         "type": generated(C_TYPES[w.buffer.dtype]), "size": w.buffer.size, "bytes": w.nbytes,
                         "align": 8 if w.buffer.dtype in ALIGN8_DTYPES else ALIGN, "bank": generated(bank or "RAM"),
                         "section": generated(f".bss.mc_weights.{bank}" if bank else ".bss.mc_weights_ram"),
                         "comment": w.buffer.comment, "bank_name": bank}
    return out


def _header_lines(k_name: str, node: Node, f: PrimFunc, trace) -> list[str]:
    a = f.attrs
    lines = [f"{k_name}: layer \"{a.get('layer', node.name)}\", op {a.get('op', node.op)}"]
    if node.origin:
        lines.append(f"  from: {', '.join(node.origin)}")
    lines += [f"  in:  {s}" for s in a.get("inputs", [])]
    lines += [f"  out: {s}" for s in a.get("outputs", [])]
    if "activation" in a:
        lines.append(f"  activation: {a['activation']}")
    if "fused" in a:
        lines.append(f"  fused: {a['fused']}")
    lines.append(f"  MACs: {a.get('macs', 0)}")
    return lines + schedule_comment(trace)


def _body_key(code: str, function: str) -> str:
    """A kernel's C as the compiler sees it, whatever its names: comments dropped, and its own
    function and the parameter structs it defines renamed in order of appearance (the
    constants in model_weights.c keep their names, so kernels on different weights differ)."""
    code = re.sub(r"/\*.*?\*/", "", code, flags=re.S)
    own = [function] + re.findall(r"static const [\w ]+? (\w+)\s*=", code)
    for k, symbol in enumerate(own):
        code = re.sub(rf"\b{re.escape(symbol)}\b", f"@{k}", code)
    return code


def _tensor_row(g: Graph, name: str, plan: MemoryPlan, symbol: str) -> tuple[dict, dict]:
    t = g.tensors[name]
    q = t.quant
    entry = tensor_entry(t, plan.offset(name))
    row = {"name": name, "dtype": generated(_MC_DTYPES[t.dtype]), "offset": entry["offset"],
           "bytes": entry["bytes"], "ndim": len(t.shape), "shape_symbol": generated(symbol),
           "shape_len": max(len(t.shape), 1),   # C has no zero-length arrays: a scalar gets { 0 }
           "shape": generated(", ".join(str(d) for d in t.shape) or "0"),
           "scale": generated(float_literal(q.scale[0]) if q is not None else "0.0f"),
           "zero_point": int(q.zero_point[0]) if q is not None else 0}
    return row, entry


def _memory_summary(plan) -> dict:
    """The plan's headline figures for the manifest (a stub plan in tests may have none)."""
    lower = getattr(plan, "lower_bound", None)
    return {"arena_bytes": int(plan.arena_bytes), "lower_bound_bytes": int(lower) if lower is not None else None,
            "planner": getattr(plan, "planner", None)}


def emit_artifact(graph: Graph, kernels: list[tuple[Node, PrimFunc]], plan: MemoryPlan, out_dir: str | Path,
                  traces: list | None = None, naming: Naming = Naming(), weights_in_c: bool = False,
                  ram_weights: dict | None = None) -> dict:
    """Write model.c, model.h, model_weights.c/.h/.bin and manifest.json into
    `out_dir` for the scheduled `kernels` (in execution order) and the arena `plan`.
    `traces` (one schedule Trace per kernel, optional) are printed in the kernel comments and
    recorded in the manifest. `naming` names the files and symbols (an exported model's own).
    `weights_in_c`: the constants as C array initializers in model_weights.c (any compiler
    and build system takes them) instead of the .bin the assembler includes (fast to compile,
    but it needs the assembler's include path).
    `ram_weights`: {node name: RAM bank} of the kernels whose constants mc_init copies from
    flash to a static array of model.c in that bank (compiler/ram_weights.py; the bank's
    section, .bss.mc_weights.<BANK>, is mapped by the project's linker script; "" for the
    primary RAM bank, plain .bss).
    Returns the manifest. Output is byte-for-byte deterministic."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    weights, owners = _collect_weights(kernels, naming)
    copies = _ram_copies(weights, owners, ram_weights or {})
    emitter = CEmitter({id(w.buffer): copies[w.symbol]["ram"] if w.symbol in copies else w.symbol for w in weights},
                       naming.symbol("state"))
    rendered, headers = [], {"mc_fixedpoint.h"}   # min/max helpers of every kernel
    first_with: dict[str, _Kernel] = {}
    for i, (node, f) in enumerate(kernels):
        name = f"k{i}_{node.op}"
        trace = traces[i] if traces is not None else None
        bases = {b: generated(naming.symbol(f"arena_{bank.lower()}"))
                 for b, bank in kernel_arena_banks(f, plan, node.name).items()}
        code = emitter.function(f, naming.symbol(name), kernel_arena_offsets(f, plan, node.name),
                                _header_lines(name, node, f, trace), bases)
        kernel = _Kernel(name, generated(naming.symbol(name)), node.op, int(f.attrs.get("macs", 0)), generated(code))
        # Identical kernels (two attention heads' transposes at the same offsets) are emitted
        # once and the table names that function twice: arm-none-eabi-gcc 12.2 at -O2 turns the
        # second of two identical functions into an empty one when its ICF merges them
        # (tests/codegen/test_identical_kernels.py), and one copy is smaller anyway.
        same = first_with.setdefault(_body_key(code, naming.symbol(name)), kernel)
        if same is not kernel:
            kernel = _Kernel(name, same.c_name, node.op, kernel.macs,
                             generated(f"/* {name}: layer {c_comment(node.name)}, the same code as {same.name} */\n"))
        rendered.append(kernel)
        headers |= {intrinsics.get(c.name).header for c in walk(f.body) if isinstance(c, Call)}
    inputs, outputs, tensors, man_in, man_out = [], [], [], [], []
    for rows, entries, names, prefix in ((inputs, man_in, graph.inputs, "in"),
                                         (outputs, man_out, graph.outputs, "out")):
        for k, name in enumerate(names):
            row, entry = _tensor_row(graph, name, plan, naming.symbol(f"{prefix}{k}_shape"))
            rows.append(row)
            entries.append(entry)
            tensors.append(row)
    blob = write_weights(weights, None if weights_in_c else out_dir / naming.bin_name)
    weights_bytes = blob.size
    state_bytes = int(getattr(plan, "state_bytes", 0))
    # Initial state, as TFLite resets variable tensors: zero, or the zero point's byte for int8.
    state_inits = [{"name": name, "offset": plan.state_offset(name), "bytes": t.nbytes,
                    "fill": (t.quant.zero_point[0] & 0xFF) if t.dtype == "int8" and t.quant is not None else 0}
                   for name, t in graph.tensors.items() if t.variable]
    if state_bytes or copies:
        headers.add("string.h")
    values = {
        "model": graph.name, "version": generated(__version__), "arena_bytes": int(plan.arena_bytes),
        "weights_bytes": weights_bytes, "kernels": rendered,
        "externs": [generated(w.extern) for w in weights],
        "weights": [dict(r, symbol=generated(r["symbol"]), macro=generated("MC_CONST8" if r["align8"] else "MC_CONST"))
                    for r in blob.rows],
        "sha256": generated(blob.sha256), "bin_name": generated(naming.bin_name), "align": ALIGN,
        "weights_in_c": weights_in_c, "arrays": [generated(a) for a in weight_arrays(weights)] if weights_in_c else [],
        "stem": generated(naming.stem), "macro": generated(naming.macro), "model_symbol": generated(naming.model_symbol),
        "sym": {k: generated(naming.symbol(k))
                for k in ("inputs", "outputs", "kernels", "state", "reset_state_fn", "load_weights_fn")},
        "system_headers": [generated(h) for h in sorted(headers & _SYSTEM_HEADERS)],
        "headers": [generated(h) for h in sorted(headers - _SYSTEM_HEADERS)],
        "tensors": tensors, "inputs": inputs, "outputs": outputs,
        "kernel_tables": [rendered] if rendered else [],
        "kernels_ref": generated(naming.symbol("kernels") if rendered else "0"),
        "reset_state_ref": generated(naming.symbol("reset_state_fn") if state_bytes else "0"),
        "ram_weights": list(copies.values()),
        "load_weights_ref": generated(naming.symbol("load_weights_fn") if copies else "0"),
        "state_bytes": state_bytes, "state_inits": state_inits,
        # Multi-bank placement (memory/banks.py): the arena of each other bank, a static array of
        # model.c in a section the project's linker script maps to that bank.
        "bank_arenas": [{"bank": generated(bank), "bytes": n, "section": generated(f".bss.mc_bank.{bank}"),
                         "symbol": generated(naming.symbol(f"arena_{bank.lower()}"))}
                        for bank, n in sorted(getattr(plan, "bank_bytes", {}).items())],
    }
    env = environment(resource_dir("templates") / "model")
    (header, weights_header), (source, weights_source) = naming.headers, naming.sources
    for template, filename in (("model.h.j2", header), ("model.c.j2", source),
                               ("model_weights.h.j2", weights_header), ("model_weights.c.j2", weights_source)):
        (out_dir / filename).write_text(env.get_template(template).render(**values))
    manifest = build_manifest(
        graph.name, ArtifactFiles(naming.sources, naming.headers, () if weights_in_c else (naming.bin_name,),
                                  tuple(sorted(headers - _SYSTEM_HEADERS))),
        Figures(plan.arena_bytes, weights_bytes, state_bytes), (man_in, man_out),
        # "outputs": where each kernel leaves its results, for trace builds that dump them.
        [{"name": k.name, "layer": node.name, "op": node.op, "macs": k.macs,
          "outputs": [_placed(tensor_entry(graph.tensors[o], plan.offset(o)), plan, o) for o in node.outputs],
          "trace": traces[i].to_json() if traces is not None else []}
         for i, (k, (node, _)) in enumerate(zip(rendered, kernels))],
        blob.rows, _memory_summary(plan))
    if getattr(plan, "bank_bytes", None):
        manifest["arena_banks"] = dict(sorted(plan.bank_bytes.items()))
    if copies:
        # The RAM each bank gives the copied weights (the primary bank: ""), and which kernels.
        per_bank: dict[str, int] = {}
        for row in copies.values():
            per_bank[row["bank_name"]] = per_bank.get(row["bank_name"], 0) + -(-row["bytes"] // 8) * 8
        manifest["ram_weights"] = {"banks": dict(sorted(per_bank.items())),
                                   "kernels": sorted(set(ram_weights or {}) & set(owners))}
    write_manifest(manifest, out_dir)
    return manifest


def _placed(entry: dict, plan, name: str) -> dict:
    """`entry` with the bank of its tensor when the plan puts it outside the primary arena."""
    bank = plan.bank(name) if getattr(plan, "banks", None) else ""
    return {**entry, "bank": bank} if bank else entry
