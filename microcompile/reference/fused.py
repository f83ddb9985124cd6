"""layer_norm and attention (ir/ops_fused.py), patch_stage (ir/ops_patch.py): the ops of the
node's body, run as they are.

The fusion only changes how the kernel walks the rows (or bands); what it computes is the
body's, so the reference runs the body's ops whole, with their own kernels."""

from __future__ import annotations

from .interp import kernel, run


@kernel("layer_norm", "attention", "patch_stage")
def _row_group(g, n, *inputs):
    body = n.attrs["body"].graph
    return run(body, dict(zip(body.inputs, inputs)))[body.outputs[0]]
