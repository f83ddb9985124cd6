"""A kernel's workload key: two kernels share one when one schedule fits both and costs the
same: the same op and op attributes (stride, padding, dilation, activation, ...), the same
buffers (names, dtypes, shapes, scopes: the input, output and weight shapes, per-channel or
per-tensor requantization arrays), the same loops (names and extents), the same helper calls
(the requantization form) and the same target core and kernel set. Weight values, scales and
zero points are left out: a model with five identical blocks tunes one workload, and a trace
tuned on one kernel replays on the others (it names loops and buffers only).

    conv2d:1x25x5x64->1x25x5x64:int8:cortex-m4f/dsp:3c9e0d51a2

The compiler looks tuning records up by it; tune/ groups a model's kernels by it.
"""

from __future__ import annotations

import hashlib
import json

from ..tir.nodes import Call, For, PrimFunc, walk
from .variants import kernel_set


def _shape(b) -> str:
    return "x".join(map(str, b.shape)) or "1"


def workload_key(node, func: PrimFunc, target) -> str:
    """The key of kernel `func` (lowered from graph node `node`) on `target`."""
    signature = {
        "op": func.attrs.get("op", node.op),
        "attrs": {k: node.attrs[k] for k in sorted(node.attrs)},
        "hybrid": bool(func.attrs.get("hybrid")),
        "buffers": [(b.name, b.dtype, list(b.shape), b.scope) for b in func.buffers],
        "loops": [(n.var.name, n.extent) for n in walk(func.body) if isinstance(n, For)],
        "calls": sorted({n.name for n in walk(func.body) if isinstance(n, Call)}),
        "core": getattr(target, "core", "none"),
        "kernels": kernel_set(target),
    }
    digest = hashlib.sha1(json.dumps(signature, sort_keys=True, default=str).encode()).hexdigest()[:10]
    arena = [b for b in func.buffers if b.scope == "arena"]
    outs = [b for b in arena if b.tensor in node.outputs] or arena[-1:]
    ins = [b for b in arena if b not in outs]
    shapes = ",".join(_shape(b) for b in ins) + "->" + ",".join(_shape(b) for b in outs)
    dtype = outs[0].dtype if outs else "none"
    return f"{signature['op']}:{shapes}:{dtype}:{signature['core']}/{signature['kernels']}:{digest}"
