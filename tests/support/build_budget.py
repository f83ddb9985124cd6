"""Builders of memory bombs and wrapped sizes, for tests/hostile/test_budget.py, and a runner
that measures the CLI's wall time and peak RSS.

Each bomb is a few hundred bytes whose constant subgraph folds, at compile time, into a tensor
of gigabytes (or many tensors that together make gigabytes) and then into something small, so
that nothing but the compiler's own budget stands between the file and the machine's memory.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h

from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, Tensor

GIB = 1 << 30
# The bombs ask for [65536, 32768] float32: 8 GiB.
BIG = [65536, 32768]


# --- ONNX -------------------------------------------------------------------------------

def _onnx(nodes, name: str, x_shape=(1, 4), y_shape=(1, 4), initializers=()) -> onnx.ModelProto:
    x = h.make_tensor_value_info("x", T.FLOAT, list(x_shape))
    y = h.make_tensor_value_info("y", T.FLOAT, list(y_shape))
    g = h.make_graph(nodes, name, [x], [y], initializer=list(initializers))
    return h.make_model(g, opset_imports=[h.make_opsetid("", 13)])


def _const(name: str, values, dtype=T.INT64, dims=None):
    values = list(values)
    return h.make_node("Constant", [], [name], value=h.make_tensor(name + "_v", dtype,
                                                                   [len(values)] if dims is None else dims, values))


def expand_bomb() -> onnx.ModelProto:
    """The issue's 181 bytes: Expand a scalar to [65536, 32768], ReduceSum it, add it to x."""
    return _onnx([_const("one", [1.0], T.FLOAT), _const("shp", BIG),
                  h.make_node("Expand", ["one", "shp"], ["big"]),
                  h.make_node("ReduceSum", ["big"], ["s1"], keepdims=0),
                  h.make_node("Add", ["x", "s1"], ["y"])], "expand_bomb")


def constant_of_shape_bomb() -> onnx.ModelProto:
    """ConstantOfShape [65536, 32768], ReduceMax, add to x."""
    return _onnx([_const("shp", BIG),
                  h.make_node("ConstantOfShape", ["shp"], ["big"], value=h.make_tensor("v", T.FLOAT, [1], [1.0])),
                  h.make_node("ReduceMax", ["big"], ["s1"], keepdims=0),
                  h.make_node("Add", ["x", "s1"], ["y"])], "cos_bomb")


def tile_bomb() -> onnx.ModelProto:
    """Tile a 2x2 constant 32768 x 16384 times ([65536, 32768]), ReduceMean, add to x."""
    return _onnx([_const("c", [1.0, 2.0, 3.0, 4.0], T.FLOAT, dims=[2, 2]), _const("reps", [32768, 16384]),
                  h.make_node("Tile", ["c", "reps"], ["big"]),
                  h.make_node("ReduceMean", ["big"], ["s1"], keepdims=0),
                  h.make_node("Add", ["x", "s1"], ["y"])], "tile_bomb")


def range_bomb() -> onnx.ModelProto:
    """Range(0, 2^31, 1) in float32: 2^31 elements (8 GiB), ReduceMax, add to x."""
    return _onnx([_const("start", [0.0], T.FLOAT, dims=[]), _const("limit", [float(1 << 31)], T.FLOAT, dims=[]),
                  _const("delta", [1.0], T.FLOAT, dims=[]),
                  h.make_node("Range", ["start", "limit", "delta"], ["big"]),
                  h.make_node("ReduceMax", ["big"], ["s1"], keepdims=0),
                  h.make_node("Add", ["x", "s1"], ["y"])], "range_bomb")


def conv_bomb() -> onnx.ModelProto:
    """Conv of a constant 1x1x1024x1024 image with a constant 1x1x32x32 filter: a 4 MiB output,
    but onnx's evaluator makes im2col index arrays of 1024 taps x 993^2 positions, int64 (7.5 GiB)."""
    img = h.make_tensor("img", T.FLOAT, [1, 1, 1024, 1024], np.ones(1 << 20, np.float32).tobytes(), raw=True)
    return _onnx([h.make_node("Conv", ["img", "w"], ["big"]),
                  h.make_node("ReduceMax", ["big"], ["s1"], keepdims=0),
                  h.make_node("Add", ["x", "s1"], ["y"])], "conv_bomb",
                 initializers=[img, h.make_tensor("w", T.FLOAT, [1, 1, 32, 32], [0.5] * 1024)])


def transient_bomb(count: int = 12, rows: int = 60) -> onnx.ModelProto:
    """`count` Expands of a scalar to [rows, 2^20] float32 (240 MiB each: under the 256 MiB
    limit of one tensor), each reduced to a scalar at once and added to x: transient tensors
    that together make count x 240 MiB."""
    nodes = [_const("one", [1.0], T.FLOAT), _const("shp", [rows, 1 << 20])]
    acc = "x"
    for k in range(count):
        nodes += [h.make_node("Expand", ["one", "shp"], [f"big{k}"]),
                  h.make_node("ReduceSum", [f"big{k}"], [f"s{k}"], keepdims=0),
                  h.make_node("Add", [acc, f"s{k}"], ["y" if k == count - 1 else f"a{k}"])]
        acc = f"a{k}"
    return _onnx(nodes, "transient_bomb")


def folded_constant_model(rows: int = 48) -> onnx.ModelProto:
    """A legitimate model whose constants fold at import into a moderately large tensor: an
    Expand of a scalar to [rows, 2^20] float32 (rows x 4 MiB: 192 MiB by default), reduced, and
    a weight stored transposed ([64, 4], Transpose folded) for a MatMul. y = x @ W + sum."""
    w_t = h.make_tensor("w_t", T.FLOAT, [4, 64], (np.arange(256, dtype=np.float32) / 256).tolist())
    nodes = [_const("one", [1.0 / (rows << 20)], T.FLOAT), _const("shp", [rows, 1 << 20]),
             h.make_node("Expand", ["one", "shp"], ["big"]),
             h.make_node("ReduceSum", ["big"], ["s1"], keepdims=0),
             h.make_node("Transpose", ["w_t"], ["w"], perm=[1, 0]),
             h.make_node("MatMul", ["x", "w"], ["xw"]),
             h.make_node("Add", ["xw", "s1"], ["y"])]
    return _onnx(nodes, "folded_constant", x_shape=(1, 64), y_shape=(1, 4), initializers=[w_t])


def resize_model(n_in: int, n_out: int) -> onnx.ModelProto:
    """x [1, 1, n_in, 1] -> Resize (linear, to `sizes`) -> y [1, 1, n_out, 1]. Choosing TFLite's
    sampling compared dense (n_out x n_in) float64 matrices: 4 GiB for 8192 -> 65536."""
    x = h.make_tensor_value_info("x", T.FLOAT, [1, 1, n_in, 1])
    y = h.make_tensor_value_info("y", T.FLOAT, [1, 1, n_out, 1])
    inits = [h.make_tensor("roi", T.FLOAT, [0], []), h.make_tensor("scales", T.FLOAT, [0], []),
             h.make_tensor("sizes", T.INT64, [4], [1, 1, n_out, 1])]
    node = h.make_node("Resize", ["x", "roi", "scales", "sizes"], ["y"], mode="linear")
    return h.make_model(h.make_graph([node], "resize", [x], [y], initializer=inits),
                        opset_imports=[h.make_opsetid("", 13)])


def wrapped_input_onnx() -> onnx.ModelProto:
    """An input of shape [65536] * 4: 2^64 elements, which a 64-bit product wraps to 0."""
    x = h.make_tensor_value_info("x", T.FLOAT, [65536] * 4)
    y = h.make_tensor_value_info("y", T.FLOAT, [65536] * 4)
    g = h.make_graph([h.make_node("Relu", ["x"], ["y"])], "wrapped_input", [x], [y])
    return h.make_model(g, opset_imports=[h.make_opsetid("", 13)])


def wrapped_constant_onnx() -> onnx.ModelProto:
    """ConstantOfShape [65536] * 4: a constant of 2^64 elements (a 64-bit product: 0 bytes)."""
    return _onnx([_const("shp", [65536] * 4),
                  h.make_node("ConstantOfShape", ["shp"], ["big"], value=h.make_tensor("v", T.FLOAT, [1], [1.0])),
                  h.make_node("ReduceMax", ["big"], ["s1"], keepdims=0),
                  h.make_node("Add", ["x", "s1"], ["y"])], "wrapped_constant")


# --- TFLite (written from our IR by the project's own writer, which does not verify) -----

def _padded_constant_graph(name: str, pads_per_copy: list[tuple], reduce_axes=(1, 2)) -> Graph:
    """x [1, 1] + sum over k of reduce_max(pad(c, pads_k)): each PAD of the constant c [1,1,1,1]
    is folded at compile time, then reduced to [1, 1]."""
    c = np.ones((1, 1, 1, 1), np.float32)
    t = {"x": Tensor("x", (1, 1), "float32"), "c": Tensor("c", (1, 1, 1, 1), "float32", data=c)}
    nodes, acc = [], "x"
    for k, pads in enumerate(pads_per_copy):
        shape = tuple(1 + lo + hi for lo, hi in pads)
        t[f"p{k}"] = Tensor(f"p{k}", shape, "float32")
        t[f"r{k}"] = Tensor(f"r{k}", (1, 1), "float32")
        out = "y" if k == len(pads_per_copy) - 1 else f"a{k}"
        t[out] = Tensor(out, (1, 1), "float32")
        nodes += [Node("pad", f"pad{k}", ("c",), (f"p{k}",), {"pads": tuple(pads)}),
                  Node("reduce_max", f"max{k}", (f"p{k}",), (f"r{k}",), {"axes": reduce_axes, "keep_dims": False}),
                  Node("add", f"add{k}", (acc, f"r{k}"), (out,), {"activation": "NONE"})]
        acc = out
    return Graph(name, t, tuple(nodes), ("x",), ("y",))


def tflite_pad_bomb() -> bytes:
    """PAD of a constant to [1, 65536, 32768, 1] float32 (8 GiB), folded, then REDUCE_MAX."""
    return write_tflite(_padded_constant_graph("pad_bomb", [((0, 0), (0, 65535), (0, 32767), (0, 0))]))


def tflite_transient_bomb(count: int = 12) -> bytes:
    """`count` PADs of a constant to [1, 7680, 8192, 1] float32 (240 MiB each, under the limit
    of one tensor), each folded and reduced: count x 240 MiB together."""
    return write_tflite(_padded_constant_graph("transient_bomb", [((0, 0), (0, 7679), (0, 8191), (0, 0))] * count))


def tflite_wrapped_pad() -> bytes:
    """PAD of a constant to [65536] * 4 (2^64 elements: 0 in a 64-bit product), then REDUCE_MAX."""
    return write_tflite(_padded_constant_graph("wrapped_pad", [((0, 65535),) * 4], reduce_axes=(0, 1, 2, 3)))


def tflite_wrapped_input() -> bytes:
    """An input of shape [65536] * 4 (2^64 elements) through RELU."""
    t = {n: Tensor(n, (65536,) * 4, "float32") for n in ("x", "y")}
    return write_tflite(Graph("wrapped_input", t, (Node("relu", "relu", ("x",), ("y",)),), ("x",), ("y",)))


# --- the reference interpreter on one wide convolution ------------------------------------

# A float conv2d whose im2col copy is 400 output positions x 28*28*1024 taps x 4 bytes (1.2 GiB)
# for a 3 MiB filter and 321 M MACs (well under the validation's limit); run by the reference
# interpreter in a child, which prints y[0, 0, 0, 0] (1024 * 28 * 28 * 0.001 = 802.816).
WIDE_CONV = """
import numpy as np
from microcompile.ir import Graph, Node, Tensor
from microcompile.reference import interp
w = np.full((1, 28, 28, 1024), 0.001, np.float32)
t = {"x": Tensor("x", (1, 47, 47, 1024), "float32"), "w": Tensor("w", w.shape, "float32", data=w),
     "y": Tensor("y", (1, 20, 20, 1), "float32")}
node = Node("conv2d", "conv", ("x", "w", ""), ("y",), {"stride": (1, 1), "padding": (0, 0, 0, 0),
                                                       "dilation": (1, 1), "activation": "NONE"})
y = interp.run(Graph("wide", t, (node,), ("x",), ("y",)), {"x": np.ones((1, 47, 47, 1024), np.float32)})["y"]
print(float(y[0, 0, 0, 0]), float(y.min()), float(y.max()))
"""


# --- running the CLI, measured ----------------------------------------------------------

# The child may take at most this much address space and CPU time, so that a budget that
# fails (or the code before it) ends in a MemoryError instead of eating the machine.
CHILD_ADDRESS_SPACE = 6 * GIB
CHILD_CPU_SECONDS = 120


@dataclass
class Measured:
    returncode: int
    stdout: str
    stderr: str
    wall: float        # seconds
    cpu: float         # seconds of user and system time of the child (and its own children)
    peak_rss: int      # bytes: the child's (and its own children's) largest resident set


def _limits():
    resource.setrlimit(resource.RLIMIT_AS, (CHILD_ADDRESS_SPACE, CHILD_ADDRESS_SPACE))
    resource.setrlimit(resource.RLIMIT_CPU, (CHILD_CPU_SECONDS, CHILD_CPU_SECONDS))


def run_measured(*args, cwd: Path, limits: bool = True) -> Measured:
    """`python -m microcompile ARGS` as a child whose own rusage (os.wait4) gives its peak RSS,
    whatever other children this process has had."""
    return run_python_measured("-m", "microcompile", *args, cwd=cwd, limits=limits)


def run_python_measured(*args, cwd: Path, limits: bool = True) -> Measured:
    """`python ARGS` (from the repository's root), measured as run_measured."""
    out, err = cwd / "stdout.txt", cwd / "stderr.txt"
    with open(out, "w") as fo, open(err, "w") as fe:
        t0 = time.monotonic()
        p = subprocess.Popen([sys.executable, *map(str, args)], stdout=fo, stderr=fe,
                             stdin=subprocess.DEVNULL, cwd=Path(__file__).resolve().parents[2],
                             preexec_fn=_limits if limits else None)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)   # so that Popen does not wait for it again
    return Measured(p.returncode, out.read_text(), err.read_text(), wall, usage.ru_utime + usage.ru_stime,
                    usage.ru_maxrss * 1024)
