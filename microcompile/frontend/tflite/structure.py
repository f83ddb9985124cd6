"""Is subgraph 0 a dataflow graph at all? Checked on the raw records, before any conversion.

A TFLite subgraph is a list of ops, each writing tensors the ops after it read. A corrupted
or hand-made file can break that in ways the IR verifier would only report as "reads y
before it is defined"; here each is named with the TFLite indices and names a user can look
up in the file (Netron shows both):

- the model's inputs and outputs are each listed once, and an input holds no stored data;
- every op writes at least one tensor, and every tensor is written by at most one op, never
  one that is a model input or a constant;
- an op reads only model inputs, constants, state, and tensors an earlier op wrote (a later
  op's output means the ops are out of order or form a cycle);
- every output is computed: written by an op, or a model input or constant (a constant
  output is refused later, with the outputs folded at compile time: frontend/runnable.py).

`raw` is the reader's `_RawModel` (tensors with `.name`, `.data`, `.variable`; ops with
`.index`, `.opname`, `.inputs`, `.outputs`).
"""

from __future__ import annotations

from ...errors import ModelFormatError, shown

HINT = "the file is corrupted or was not written by the TFLite converter; re-export the model"


def check_structure(raw) -> None:
    """Raise ModelFormatError naming the first tensor or layer that breaks the dataflow."""
    def tensor(i: int) -> str:
        return f"tensor {i} {shown(raw.tensors[i].name)!r}"

    def layer(op) -> str:
        return f"layer {op.index} ({op.opname})"

    def fail(msg: str):
        raise ModelFormatError(msg, hint=HINT)

    for what, indices in (("inputs", raw.inputs), ("outputs", raw.outputs)):
        seen = set()
        for i in indices:
            if i in seen:
                fail(f"{tensor(i)} is listed twice among the model's {what}")
            seen.add(i)
    inputs = set(raw.inputs)
    for i in raw.inputs:
        if raw.tensors[i].data is not None:
            fail(f"input {tensor(i)} is a constant (its buffer holds data); a model input is "
                 "written by the caller, not stored in the file")
    writer = {}
    for op in raw.ops:
        if not op.outputs:
            fail(f"{layer(op)} has no outputs: it computes nothing")
        for i in op.outputs:
            if i in inputs:
                fail(f"{layer(op)} writes {tensor(i)}, which is a model input")
            if raw.tensors[i].data is not None and not raw.tensors[i].variable:
                fail(f"{layer(op)} writes {tensor(i)}, which is a constant stored in the file")
            if i in writer:
                fail(f"{tensor(i)} is written by {layer(writer[i])} and again by {layer(op)}")
            writer[i] = op
    available = set(inputs) | {i for i, t in enumerate(raw.tensors) if t.data is not None or t.variable}
    for op in raw.ops:
        for i in op.inputs:
            if i < 0 or i in available:
                continue
            if i in op.outputs:
                fail(f"{layer(op)} reads its own output, {tensor(i)}: the ops form a cycle")
            if i in writer:
                fail(f"{layer(op)} reads {tensor(i)} before {layer(writer[i])} writes it: the ops "
                     "are out of order or form a cycle")
            fail(f"{layer(op)} reads {tensor(i)}, which no op writes and which is neither a model "
                 "input nor a constant")
        available.update(op.outputs)
    for i in raw.outputs:
        if i not in available:
            fail(f"output {tensor(i)} is not computed: no op writes it, and it is neither a model "
                 "input nor a constant")
