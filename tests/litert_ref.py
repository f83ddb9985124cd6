"""The oracle: run a .tflite model with LiteRT's reference kernels (BUILTIN_REF).

`run_reference(model, inputs)` returns the graph outputs by tensor name;
`run_reference(model, inputs, keep_all=True)` returns every tensor the interpreter
holds after the run (intermediates included), by name.
"""

from __future__ import annotations

import numpy as np
import pytest

from skip_budget import NO_LITERT

# A platform without an ai_edge_litert wheel skips every test module that imports this one
# (an allowed skip reason); everywhere else this is a plain import.
_litert = pytest.importorskip("ai_edge_litert.interpreter", reason=NO_LITERT)
Interpreter, OpResolverType = _litert.Interpreter, _litert.OpResolverType


def make_interpreter(model: bytes, keep_all: bool = False) -> Interpreter:
    interp = Interpreter(model_content=bytes(model),
                         experimental_op_resolver_type=OpResolverType.BUILTIN_REF,
                         experimental_preserve_all_tensors=keep_all)
    interp.allocate_tensors()
    return interp


def run_reference(model: bytes, inputs: dict[str, np.ndarray], keep_all: bool = False) -> dict[str, np.ndarray]:
    """Run `model` (bytes of a .tflite) on `inputs` (keyed by input tensor name)."""
    interp = make_interpreter(model, keep_all)
    for detail in interp.get_input_details():
        interp.set_tensor(detail["index"], np.asarray(inputs[detail["name"]]))
    interp.invoke()
    if not keep_all:
        return {d["name"]: interp.get_tensor(d["index"]).copy() for d in interp.get_output_details()}
    result = {}
    for d in interp.get_tensor_details():
        try:
            result[d["name"]] = interp.get_tensor(d["index"]).copy()
        except ValueError:  # tensors without data (e.g. optional inputs)
            continue
    return result


def load_model(path) -> bytes:
    with open(path, "rb") as f:
        return f.read()
