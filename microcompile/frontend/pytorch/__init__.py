"""torch.export programs -> Graph (work in progress, issue 25).

    load_exported_program(program, nhwc_io=False) -> Graph

A program is taken after `run_decompositions()` (core ATen). Each ATen op is written as the
ONNX node(s) with the same meaning (aten.py, a table keyed by the op's name, filled by the
`@aten` decorator), and the result is read by the ONNX reader: its converters, layout
handling (NCHW at the edges, NHWC inside, transposes cancelled) and QDQ folding are the ones
the ONNX frontend is tested with. This is not torch.onnx: no exporter, no version-sensitive
hop; the translation is ours and covers exactly the ops in aten.py.

torch is imported here only (the `torch` extra).
"""

from __future__ import annotations

from ...errors import UserError
from ...ir import Graph


def load_exported_program(program, nhwc_io: bool = False, name: str | None = None) -> Graph:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise UserError("reading a PyTorch program needs torch", hint="pip install 'microcompile[torch]'") from None
    from ..onnx import load_onnx
    from .aten import to_onnx

    model = to_onnx(program.run_decompositions(), name or "torch_model")
    return load_onnx(model, nhwc_io=nhwc_io)
