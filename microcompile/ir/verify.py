"""Graph verifier. Every pass must leave a graph that passes `verify`."""

from __future__ import annotations

from .graph import DTYPES, QUANTIZED_DTYPES, Graph
from . import ops


class VerifyError(AssertionError):
    """The graph breaks an IR invariant. Always a bug in microcompile, never a user error."""


def verify(g: Graph) -> Graph:
    """Check structure, op signatures and inferred shapes/dtypes; return `g` for chaining."""

    def fail(msg):
        raise VerifyError(f"graph {g.name}: {msg}")

    # Constants and persistent state (variable tensors) exist before the first node runs.
    defined = {name for name, t in g.tensors.items() if t.is_const or t.variable} | set(g.inputs)
    for name in g.inputs:
        if name not in g.tensors:
            fail(f"input {name} has no tensor")
    for name, t in g.tensors.items():
        if t.name != name:
            fail(f"tensor key {name} != tensor name {t.name}")
        if t.dtype not in DTYPES:
            fail(f"tensor {name} has unknown dtype {t.dtype}")
        if t.dtype in QUANTIZED_DTYPES and t.quant is None and not t.is_const:
            fail(f"{t.dtype} tensor {name} has no quantization parameters")
        if t.dtype == "int8" and t.quant is None:
            fail(f"int8 tensor {name} has no quantization parameters")
        if t.variable and (t.is_const or name in g.inputs):
            fail(f"variable (state) tensor {name} is also a constant or a graph input")
        if t.is_const and tuple(t.data.shape) != tuple(t.shape):
            fail(f"constant {name} data shape {t.data.shape} != {t.shape}")
    seen_nodes = set()
    for n in g.nodes:
        if n.name in seen_nodes:
            fail(f"node name {n.name} used twice")
        seen_nodes.add(n.name)
        if n.op not in ops.REGISTRY:
            fail(f"node {n.name} has unregistered op {n.op}")
        od = ops.get(n.op)
        roles = od.inputs + od.inputs[-1:] * (len(n.inputs) - len(od.inputs)) if od.variadic else od.inputs
        if len(n.inputs) != len(roles) or (od.variadic and len(n.inputs) < len(od.inputs)):
            fail(f"node {n.name} ({n.op}) has {len(n.inputs)} inputs, expected {len(od.inputs)}"
                 + (" or more" if od.variadic else ""))
        for role, i in zip(roles, n.inputs):
            if not i:
                if role not in od.optional:
                    fail(f"node {n.name} is missing required input {role}")
                continue
            if i not in defined:
                fail(f"node {n.name} reads {i} before it is defined")
        for key in n.attrs:
            if key not in od.attrs:
                fail(f"node {n.name} has unknown attribute {key}")
        if "activation" in n.attrs and n.attrs["activation"] not in ops.ACTIVATIONS:
            fail(f"node {n.name} has unknown activation {n.attrs['activation']}")
        expected = od.infer(g, n) if od.infer else None
        for k, out in enumerate(n.outputs):
            if out in defined:
                fail(f"tensor {out} defined twice")
            if out not in g.tensors:
                fail(f"node {n.name} output {out} has no tensor")
            if expected is not None:
                shape, dtype = expected[k]
                t = g.tensors[out]
                if tuple(t.shape) != tuple(shape) or t.dtype != dtype:
                    fail(f"node {n.name} output {out} is {t.shape}/{t.dtype}, inferred {shape}/{dtype}")
            defined.add(out)
    for name in g.outputs:
        if name not in defined:
            fail(f"output {name} is never computed")
    return g
