"""Graph verifier. Every pass must leave a graph that passes `verify`.

The frontends run it on every graph they import, where a failure means a corrupted or
inconsistent model file (they turn it into a ModelFormatError); after a pass, a failure is
a bug in that pass. So the checks cover what a bad file can break: tensor shapes and
quantization parameters, each op's input ranks, its `check` and its shape inference.
"""

from __future__ import annotations

import math

import numpy as np

from .graph import DTYPES, INT4_WEIGHT_OPS, QUANTIZED_DTYPES, Graph, Node, Tensor
from .int4 import INT4_RANGE, is_int4
from .fixedpoint import QRANGE
from . import ops


class VerifyError(AssertionError):
    """The graph breaks an IR invariant: a bug in microcompile after a pass, a bad model file at import."""


# What shape inference (or a frontend's converter) may raise on inputs and attributes that
# do not fit the op; reported as that node's problem. (An AssertionError is a bug: not caught.)
MISFIT = (ValueError, IndexError, KeyError, TypeError, ZeroDivisionError, OverflowError)


def quant_problem(t: Tensor) -> str | None:
    """What is wrong with `t`'s quantization parameters, or None. The fixed-point
    multipliers need finite positive scales, and zero points are values of the dtype."""
    q = t.quant
    if q is None:
        return None
    if not q.scale or len(q.zero_point) != len(q.scale):
        return f"{len(q.scale)} scales and {len(q.zero_point)} zero points"
    if q.axis is None and len(q.scale) != 1:
        return f"{len(q.scale)} scales without a quantized axis"
    if q.axis is not None and not (0 <= q.axis < len(t.shape) and t.shape[q.axis] == len(q.scale)):
        return f"{len(q.scale)} scales along axis {q.axis} of shape {t.shape}"
    bad = [s for s in q.scale if not (math.isfinite(s) and s > 0)]
    if bad:
        return f"scale {bad[0]} (scales must be finite and positive)"
    lo, hi = QRANGE.get(t.dtype, QRANGE["int32"])
    bad = [z for z in q.zero_point if not lo <= z <= hi]
    if bad:
        return f"zero point {bad[0]} outside the {t.dtype} range {lo}..{hi}"
    return None


def node_problem(g: Graph, n: Node) -> str | None:
    """The op's own verification: input ranks, per-channel quantization only where the
    kernels take it (the weights and bias of a weighted op), then its `check`."""
    od = ops.get(n.op)
    for rank, name in zip(od.ranks, n.inputs):
        if rank is not None and name and len(g.tensors[name].shape) != rank:
            return f"input {name} is {len(g.tensors[name].shape)}-D {g.tensors[name].shape}; {n.op} needs {rank}-D"
    weights = set(n.inputs[1:3]) if od.quant == "weighted" else set()
    for name in n.inputs + n.outputs:
        q = g.tensors[name].quant if name else None
        if q is not None and q.per_channel and name not in weights:
            return f"tensor {name} is quantized per channel (axis {q.axis}); {n.op} takes it per tensor only"
    return od.check(g, n) if od.check else None


def _int4_problem(t: Tensor) -> str | None:
    if not t.is_const:
        return "int4 is a weights' dtype: only constants can have it"
    if not is_int4(t.data):
        lo, hi = INT4_RANGE
        return f"values {int(t.data.min())}..{int(t.data.max())} outside {lo}..{hi}"
    return None


# Ops that only move bytes (no arithmetic, no padding value): a plain integer may pass
# through them, as through the signal ops, as long as it stays plain.
BYTE_MOVES = frozenset(("reshape", "squeeze", "expand_dims", "transpose", "slice", "strided_slice", "gather",
                        "split", "split_v", "pack", "unpack", "depth_to_space", "space_to_depth"))


def verify(g: Graph) -> Graph:
    """Check structure, op signatures and inferred shapes/dtypes; return `g` for chaining."""

    def fail(msg):
        raise VerifyError(f"graph {g.name}: {msg}")

    # Constants and persistent state (variable tensors) exist before the first node runs.
    defined = {name for name, t in g.tensors.items() if t.is_const or t.variable} | set(g.inputs)
    for name in g.inputs:
        if name not in g.tensors:
            fail(f"input {name} has no tensor")
    # Tensors that an op computing on quantized values reads or writes: an int16 or int8
    # elsewhere (raw audio into TFLM's signal ops, a CAST's result) is a plain integer, which
    # only plain-integer ops and byte moves may touch.
    quantized_users = {i for n in g.nodes if n.op in ops.REGISTRY and not ops.get(n.op).plain_ints
                       and n.op not in BYTE_MOVES for i in (*n.inputs, *n.outputs)}
    for n in g.nodes:
        if n.op in BYTE_MOVES:
            small = [g.tensors[i] for i in (*n.inputs, *n.outputs) if i in g.tensors
                     and g.tensors[i].dtype in QUANTIZED_DTYPES and not g.tensors[i].is_const]
            if len({t.quant is None for t in small}) > 1:
                fail(f"node {n.name} ({n.op}) moves bytes between quantized and plain (unquantized) "
                     f"{small[0].dtype} tensors")
    for name, t in g.tensors.items():
        if t.name != name:
            fail(f"tensor key {name} != tensor name {t.name}")
        if t.dtype not in DTYPES:
            fail(f"tensor {name} has unknown dtype {t.dtype}")
        if any(d < 0 for d in t.shape):
            fail(f"tensor {name} has a negative dimension in shape {t.shape}")
        if t.dtype == "int4" and (problem := _int4_problem(t)) is not None:
            fail(f"int4 tensor {name}: {problem}")
        if t.dtype in QUANTIZED_DTYPES and t.quant is None and not t.is_const and name in quantized_users:
            fail(f"{t.dtype} tensor {name} has no quantization parameters")
        if t.dtype in ("int8", "int4") and t.quant is None and (t.is_const or name in quantized_users):
            fail(f"{t.dtype} tensor {name} has no quantization parameters")
        if (problem := quant_problem(t)) is not None:
            fail(f"tensor {name!r} has invalid quantization: {problem}")
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
        if n.attrs.get("rounding", "tflite") not in ops.ROUNDINGS:
            fail(f"node {n.name} has unknown rounding {n.attrs['rounding']}")
        nan = [k for k, v in n.attrs.items() if isinstance(v, (float, np.floating)) and np.isnan(v)]
        if nan:
            fail(f"node {n.name} ({n.op}) has a NaN attribute {nan[0]}")
        int4 = [i for k, i in enumerate(n.inputs) if i and g.tensors[i].dtype == "int4"
                and not (k == 1 and n.op in INT4_WEIGHT_OPS and g.tensors[n.inputs[0]].dtype == "int8")]
        if int4:
            fail(f"node {n.name} ({n.op}) reads int4 tensor {int4[0]}: int4 is supported only as the weights of "
                 f"{', '.join(INT4_WEIGHT_OPS)} on int8 activations")
        try:
            problem = node_problem(g, n)
            expected = od.infer(g, n) if od.infer and problem is None else None
        except VerifyError:
            raise
        except MISFIT as e:
            shapes = ", ".join(f"{i} {g.tensors[i].shape}" for i in n.inputs if i)
            problem = f"its inputs ({shapes}) and attributes do not fit the op ({type(e).__name__}: {e})"
        if problem is not None:
            fail(f"node {n.name} ({n.op}): {problem}")
        for k, out in enumerate(n.outputs):
            if out in defined:
                fail(f"tensor {out} defined twice")
            if out not in g.tensors:
                fail(f"node {n.name} output {out} has no tensor")
            if expected is not None:
                if len(expected) != len(n.outputs):
                    fail(f"node {n.name} ({n.op}) has {len(n.outputs)} outputs, its inputs give {len(expected)}")
                shape, dtype = expected[k]
                t = g.tensors[out]
                if tuple(t.shape) != tuple(shape) or t.dtype != dtype:
                    fail(f"node {n.name} output {out} is {t.shape}/{t.dtype}, inferred {shape}/{dtype}")
            defined.add(out)
    for name in g.outputs:
        if name not in defined:
            fail(f"output {name} is never computed")
    return g
