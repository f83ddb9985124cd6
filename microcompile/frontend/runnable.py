"""Is an imported graph something to run? Both readers check it (through `validate`).

A model computes its outputs from its inputs at run time. Refused, with the tensor named:

- a graph with no outputs (it would compile to no kernels and "match" an empty reference);
- an output the compiler computes at compile time (a stored constant, or anything folded
  from constants): nothing of the model runs on the device for it, and the code generator
  has no buffer to hand back;
- a tensor of no elements that a kernel reads or writes at run time (an input of shape
  [1, 0], an empty slice, an empty constant concatenated to an input): the lowering makes a
  loop of extent 0 into one iteration (tir.loops), so the kernel would write an element
  the tensor does not own and read one past its input. Empty constants only used at compile
  time (a Resize roi, a shape folded away) are fine.
"""

from __future__ import annotations

from ..errors import ModelFormatError, UserError, shown
from ..ir import Graph


def folded_at_compile_time(graph: Graph) -> set[str]:
    """The tensors the graph passes turn into constants: the stored constants, SHAPE of
    anything (every shape is static: transform/fold_shape.py) and the outputs of a node
    whose inputs are all such (transform/fold_constants.py)."""
    known = {name for name, t in graph.tensors.items() if t.is_const}
    for n in graph.nodes:
        ins = [i for i in n.inputs if i]
        if n.op == "shape" or (ins and all(i in known for i in ins)):
            known.update(n.outputs)
    return known


def check_runnable(graph: Graph, label: str) -> None:
    """Raise a UserError (prefixed with `label`, the file) for a graph that is not a model."""
    if not graph.outputs:
        raise ModelFormatError(f"{label}: the model has no outputs: there is nothing to compute",
                               hint="export the model with its output tensors")
    constant = folded_at_compile_time(graph)
    for name in graph.outputs:
        if name in constant:
            raise UserError(f"{label}: output {shown(name)!r} is a compile-time constant: it does not "
                            "depend on the model's inputs",
                            hint="a model whose output does not depend on its input has nothing to run; "
                                 "drop that output from the model")
    for name in graph.inputs:
        if 0 in graph.tensors[name].shape:
            _empty(label, f"input {shown(name)!r} has shape {list(graph.tensors[name].shape)}: no elements")
    for n in graph.nodes:
        if all(o in constant for o in n.outputs):
            continue   # folded at compile time: the interpreter handles empty arrays
        for name in (*n.inputs, *n.outputs):
            if name and 0 in graph.tensors[name].shape:
                _empty(label, f"tensor {shown(name)!r} has shape {list(graph.tensors[name].shape)}: no elements, "
                              f"and layer {shown(n.name)} ({n.op}) {'writes' if name in n.outputs else 'reads'} it "
                              "at run time")


def _empty(label: str, what: str):
    raise ModelFormatError(f"{label}: {what}; microcompile cannot compile a tensor of zero elements computed "
                           "or read at run time",
                           hint="every input, output and intermediate tensor must hold at least one element; "
                                "re-export the model")
