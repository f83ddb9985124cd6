"""Shared by the lowering and schedule tests: op cases from tests/ir/op_cases.py, lowered
and run through the loop-IR interpreter."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np


from support.op_cases import build_graph, cases, random_inputs  # noqa: E402,F401

from microcompile.ir import Graph, QuantParams, Tensor
from microcompile.ir.compare import compare  # noqa: E402
from microcompile.ir.ops_signal import SIGNAL_OPS  # noqa: E402
from microcompile.reference import interp  # noqa: E402
from microcompile.tir.nodes import PrimFunc  # noqa: E402
from microcompile.tir.interp import run_primfunc  # noqa: E402

KERNEL_OPS = ("conv2d", "depthwise_conv2d", "fully_connected", "average_pool2d", "add", "softmax",
              "relu", "relu6", "relu_n1_to_1")
KERNEL_OPS += ("transpose_conv2d", "max_pool2d", "mean", "pad", "pad_v2", "resize_nearest_neighbor",
               "resize_bilinear")
KERNEL_OPS += ("sub", "mul", "maximum", "minimum", "squared_difference", "prelu", "leaky_relu", "logistic",
               "tanh", "hard_swish", "abs", "log_softmax", "quantize", "dequantize")
KERNEL_OPS += ("concatenation", "split", "split_v", "pack", "unpack", "transpose", "strided_slice", "slice",
               "gather", "depth_to_space", "space_to_depth", "space_to_batch_nd", "batch_to_space_nd")
KERNEL_OPS += ("reduce_max",)
KERNEL_OPS += ("lstm", "svdf")
# float32-only ops have no int8 plan in op_cases; tests/ir/test_div.py covers div's lowering,
# tests/frontend/test_onnx_ops.py gru's (through host C; LiteRT has no GRU, so op_cases has no plan),
# tests/ir/test_transformer_ops.py batch_matmul's, gelu's and sqrt's (against torch and LiteRT; their
# int8 forms there too, which op_cases has no plan for), tests/ir/test_rsqrt_int8.py int8 rsqrt's
# (LiteRT fails on inputs below the zero point, which op_cases' random bytes and normal floats hold).
# where: tests/frontend/test_onnx_ops.py (ONNX Where, host C against onnxruntime) and
# tests/frontend/test_pytorch.py (masked attention); it has no int8 form.
FLOAT_ONLY_OPS = ("div", "gru", "batch_matmul", "gelu", "sqrt", "rsqrt", "erf", "where")
# Plain-integer ops (no quantization): tests/lower/test_plain_ints.py (cast, against LiteRT),
# tests/lower/test_signal_kernels.py and test_signal_fft.py (TFLM's signal ops, against TFLM)
# and tests/e2e/test_audio_frontend.py (all of them lowered, host C and Cortex-M twins).
PLAIN_INT_OPS = ("cast", *SIGNAL_OPS)
# Fused row groups, made by transform/fuse_rows.py out of the ops above (no op_cases plan: their
# inputs are whole layer norms and attention heads): tests/lower/test_fused_rows.py (loop IR,
# host C, in place, the M4 and M55 twins against LiteRT) and tests/transform/test_fuse_rows.py.
# Patch stages (chains of the vision ops above, band by band): tests/lower/test_patch_stage.py
# (host C, in place, the M4 and M55 twins against LiteRT) and tests/memory/test_patch_choice.py.
FUSED_OPS = ("layer_norm", "attention", "patch_stage")


def hybrid_conv_graph(seed: int = 0, padding: str = "SAME", batch: int = 2) -> Graph:
    """A float32 conv2d case with int8 per-tensor weights (TFLite dynamic-range quantization)."""
    case = dict(cases("conv2d", "float32", 1, seed=seed)[0], batch=batch, hw=5, cin=3, cout=4, kernel=3,
                padding=padding)
    g = build_graph(case)
    w = g.tensors["w"]
    rng = np.random.default_rng(seed)
    wq = Tensor("w", w.shape, "int8", QuantParams((0.0123,), (0,)),
                data=rng.integers(-127, 128, w.shape, dtype=np.int8))
    return g.replace(tensors={**g.tensors, "w": wq})


def run_lowered(g: Graph, f: PrimFunc, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """Run a single-op graph's PrimFunc in the loop-IR interpreter; its output, shaped."""
    arrays = {b.name: inputs[b.tensor] for b in f.buffers if b.scope == "arena" and b.tensor in inputs}
    # persistent state starts where the device's mc_reset_state puts it (int8: the zero point)
    state = interp.initial_state(g)
    arrays.update({b.name: state[b.tensor].copy() for b in f.buffers if b.scope == "state"})
    out_buf = next(b for b in f.buffers if b.scope == "arena" and b.tensor == g.outputs[0])
    return run_primfunc(f, arrays)[out_buf.name].reshape(g.tensors[g.outputs[0]].shape)


def matches(out: np.ndarray, ref: np.ndarray) -> bool:
    """int8/int16 bit-exact; float32 within ir/compare.py's tolerance (the one definition: 1e-5
    relative, floor a millionth of the tensor's magnitude)."""
    return compare(np.asarray(out), np.asarray(ref).reshape(np.shape(out))).equal


def reference(g: Graph, inputs) -> np.ndarray:
    return interp.run(g, inputs)[g.outputs[0]]


# The depthwise border/interior splits (tests/lower/test_depthwise.py, the schedule tests):
# name: overrides of a base depthwise case. per_channel False gives the immediate multiplier.
DEPTHWISE_SPLITS = {
    "3x3-s1-same": dict(hw=6, kernel=3, stride=1, dilation=1, padding="SAME"),
    "3x3-s2-same-odd": dict(hw=9, kernel=3, stride=2, dilation=1, padding="SAME"),
    "3x3-s2-valid": dict(hw=9, kernel=3, stride=2, dilation=1, padding="VALID"),
    "5x5-s1-same": dict(hw=6, kernel=5, stride=1, dilation=1, padding="SAME"),
    "5x5-s2-same": dict(hw=6, kernel=5, stride=2, dilation=1, padding="SAME"),
    "3x3-dil2-same": dict(hw=6, kernel=3, stride=1, dilation=2, padding="SAME"),
    "kernel-wider-than-input": dict(hw=3, kernel=5, stride=1, dilation=1, padding="SAME"),
    "1x1": dict(hw=3, kernel=1, stride=2, dilation=1, padding="VALID"),
    "odd-channels": dict(hw=5, cin=7, multiplier=1, kernel=3, stride=1, dilation=1, padding="SAME"),
    "odd-channels-mult3": dict(hw=6, cin=5, multiplier=3, kernel=3, stride=1, dilation=1, padding="SAME"),
    "per-tensor": dict(hw=6, kernel=3, stride=1, dilation=1, padding="SAME", per_channel=False),
    "pot-scales": dict(hw=6, kernel=3, stride=2, dilation=1, padding="SAME", pot_scales=True),
    "rectangular-no-bias": dict(hw=6, kernel=3, stride=2, dilation=2, padding="SAME", rect=True, bias=False),
}


def depthwise_case(name: str, dtype: str, seed: int = 0) -> dict:
    base = cases("depthwise_conv2d", dtype, 1, seed=seed)[0]
    return dict(base, **{"batch": 2, "activation": "RELU6", "rect": False, "bias": True, **DEPTHWISE_SPLITS[name]},
                index=name)


def lowered_model(path, target) -> list:
    """[(node, lowered PrimFunc)] of every kernel of the model file at `path` on `target`
    (after the graph passes; views have no kernel)."""
    from microcompile.frontend import load_model
    from microcompile.ir import ops
    from microcompile.lower import lower_node
    from microcompile.transform import pipeline

    g = pipeline.run(load_model(path))
    return [(n, lower_node(g, n, target)) for n in g.nodes if not ops.get(n.op).is_view]


def same_results(func: PrimFunc, scheduled: PrimFunc, seed: int = 0) -> None:
    """Run both in the loop-IR interpreter on the same random arena contents: every arena
    buffer ends equal (int8 byte for byte, float32 within the project's 1e-5: a swapped
    reduction adds in another order)."""
    rng = np.random.default_rng(seed)
    arrays = {b.name: (rng.integers(-128, 128, b.shape).astype(np.int8) if b.dtype == "int8"
                       else rng.standard_normal(b.shape).astype(np.float32))
              for b in func.buffers if b.scope == "arena"}
    want = run_primfunc(func, {k: v.copy() for k, v in arrays.items()})
    got = run_primfunc(scheduled, {k: v.copy() for k, v in arrays.items()})
    for name in arrays:
        assert compare(got[name], want[name]).equal, name
