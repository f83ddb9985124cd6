"""Files that are not models: `inspect`, `deploy --board host` and `quantize` refuse each one
with exit 2 and a message naming the tensor, layer, subgraph or op (issue 22, "refuse what is
not a model"); what is a model after all (an output that is its input, an unused subgraph)
compiles.

Before the fix: a negative or zero dimension compiled and "matched"; a model with no outputs
compiled to nothing; an output or input that is a constant, a tensor index -1 where none may
be absent, and a listed-twice output ended in internal errors (exit 3); a tensor of no
elements between two ops gave wrong outputs; a buffer at offset 1 with a 2^40-byte size said
"reads c before it is defined"; a nested ONNX If leaked onnx's evaluator or protobuf's
decoder; a second subgraph was ignored without a word.
"""

from __future__ import annotations

import pathlib
import sys
import time

import numpy as np
import pytest

HERE = pathlib.Path(__file__).resolve().parent

from support import build_not_a_model as build  # noqa: E402
from support.build_not_a_model import (RawBuffer, RawOp, RawSubgraph, RawTensor, add_constant_subgraph, constant,  # noqa: E402
                               nested_if_onnx, raw_tflite, relu_subgraph, relu_tflite, while_options)
from support.cli_run import run_cli_inprocess  # noqa: E402
from microcompile.ir import Node, Tensor  # noqa: E402

COMMANDS = ("inspect", "deploy", "quantize")


@pytest.fixture
def calibration(tmp_path) -> pathlib.Path:
    """Samples for the [1, 8] float input every model here has (when it has one)."""
    path = tmp_path / "calibration.npy"
    np.save(path, np.random.default_rng(0).standard_normal((4, 1, 8)).astype(np.float32))
    return path


def run(command: str, model: pathlib.Path, calibration: pathlib.Path, *extra):
    out = model.parent / f"{model.stem}-{command}"
    args = {"inspect": ("inspect", model),
            "deploy": ("deploy", model, "--board", "host", "-o", out),
            "quantize": ("quantize", model, "--calibration", calibration, "-o", out.with_suffix(".tflite"))}[command]
    return run_cli_inprocess(*args, *extra)


def assert_refused(model: pathlib.Path, calibration: pathlib.Path, *words: str, extra=(), commands=COMMANDS):
    """Every command exits 2, its message holds every one of `words`, and nothing is built."""
    for command in commands:
        p = run(command, model, calibration, *extra)
        assert p.returncode == 2, (command, p.returncode, p.stdout[-2000:], p.stderr)
        for w in words:
            assert w in p.stderr, (command, w, p.stderr)
        assert "internal error" not in p.stderr and "hint:" in p.stderr, (command, p.stderr)
        assert not (model.parent / f"{model.stem}-deploy").exists()


def save(tmp_path: pathlib.Path, name: str, data: bytes) -> pathlib.Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


# --- dimensions ---------------------------------------------------------------------------

def test_negative_dimension_is_refused(tmp_path, calibration):
    """Was: [1, -8] read as [1, 1], deployed, "outputs match"."""
    model = save(tmp_path, "neg.tflite", relu_tflite(x_shape=(1, -8), y_shape=(1, 8)))
    assert_refused(model, calibration, "tensor 0 'x'", "shape [1, -8]", "negative")


def test_negative_shape_signature_other_than_minus_one_is_refused(tmp_path, calibration):
    """-1 in shape_signature is a dynamic dimension; -2 means nothing."""
    sg = relu_subgraph("m")
    sg.tensors[0] = RawTensor("x", (), signature=(-2, 8))
    model = save(tmp_path, "sig.tflite", raw_tflite([sg]))
    assert_refused(model, calibration, "tensor 0 'x'", "shape_signature [-2, 8]")


def test_dynamic_batch_in_shape_signature_still_reads_as_one(tmp_path, calibration):
    """What the TFLite converter writes for a dynamic batch: shape [1, 8], signature [-1, 8]."""
    sg = relu_subgraph("m")
    sg.tensors[0] = RawTensor("x", (1, 8), signature=(-1, 8))
    p = run("inspect", save(tmp_path, "dyn.tflite", raw_tflite([sg])), calibration)
    assert p.returncode == 0, p.stderr
    assert "1x8" in p.stdout


def test_zero_size_input_is_refused(tmp_path, calibration):
    """Was: an input of no elements deployed and "matched"."""
    model = save(tmp_path, "zero.tflite", relu_tflite(x_shape=(1, 0)))
    assert_refused(model, calibration, "input 'x'", "shape [1, 0]", "no elements")


def test_zero_size_tensor_between_ops_is_refused(tmp_path, calibration):
    """Was: deploy exit 1 (the output differed from the reference), quantize exit 3."""
    model = save(tmp_path, "zero_mid.tflite", build.zero_size_between_tflite())
    assert_refused(model, calibration, "tensor 's'", "shape [1, 0]", "no elements", "layer slice_0 (slice) writes it")


def _onnx(tmp_path, name: str, nodes, inputs, outputs, initializers=()) -> pathlib.Path:
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(nodes, name, [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
                              [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in outputs],
                              initializer=[numpy_helper.from_array(a, n) for n, a in initializers])
    path = tmp_path / f"{name}.onnx"
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    return path


def test_empty_onnx_slice_is_refused(tmp_path, calibration):
    """Rows 2..2 of 3: an output of no elements. Was: exit 0, the slice kernel writing one
    element it does not own (a loop of extent 0 becomes one iteration)."""
    from onnx import helper

    model = _onnx(tmp_path, "empty_slice", [helper.make_node("Slice", ["x", "s", "e"], ["y"])], [("x", [3, 8])],
                  [("y", [0, 8])], [("s", np.array([2], np.int64)), ("e", np.array([-1], np.int64))])
    assert_refused(model, calibration, "tensor 'y'", "shape [0, 8]", "no elements", "writes it at run time",
                   commands=("inspect", "deploy"))


def test_empty_onnx_constant_that_concat_drops_compiles(tmp_path, calibration):
    """Not broken: the Concat converter drops an empty input, so no kernel reads it."""
    from onnx import helper

    model = _onnx(tmp_path, "empty_const", [helper.make_node("Concat", ["x", "e"], ["y"], axis=1)], [("x", [1, 8])],
                  [("y", [1, 8])], [("e", np.zeros((1, 0), np.float32))])
    p = run("deploy", model, calibration)
    assert p.returncode == 0, p.stderr
    assert "outputs match reference: yes" in p.stdout


# --- outputs and inputs -------------------------------------------------------------------

def test_tflite_model_without_outputs_is_refused(tmp_path, calibration):
    """Was: zero kernels, "outputs match reference: yes ()"."""
    model = save(tmp_path, "none.tflite", relu_tflite(outputs=()))
    assert_refused(model, calibration, "the model has no outputs")


def test_onnx_model_without_outputs_is_refused(tmp_path, calibration):
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "none", [x], [])
    model = tmp_path / "none.onnx"
    model.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    assert_refused(model, calibration, "the model has no outputs")


def test_output_that_no_op_writes_is_refused(tmp_path, calibration):
    """Was: exit 2, "output z is never computed" with a hint blaming microcompile."""
    model = save(tmp_path, "unproduced.tflite",
                 relu_tflite(outputs=("z",), extra={"z": Tensor("z", (1, 8), "float32")}))
    assert_refused(model, calibration, "output tensor 2 'z'", "no op writes it",
                   "neither a model input nor a constant")


def test_constant_output_is_refused(tmp_path, calibration):
    """Was: inspect exit 0, deploy and quantize exit 3 (KeyError: 'k')."""
    model = save(tmp_path, "const_out.tflite", relu_tflite(outputs=("y", "k"), extra={"k": constant("k")}))
    assert_refused(model, calibration, "output 'k' is a compile-time constant")


def test_output_computed_from_constants_only_is_refused(tmp_path, calibration):
    """RELU of a stored constant: folded at compile time, so the output is a constant too."""
    model = save(tmp_path, "folded_out.tflite",
                 relu_tflite(nodes=(Node("relu", "relu", ("k",), ("y",)),), extra={"k": constant("k")}))
    assert_refused(model, calibration, "output 'y' is a compile-time constant")


def test_output_that_is_the_input_compiles(tmp_path, calibration):
    """Not broken: the identity model. Deploys, and its output is its input."""
    model = save(tmp_path, "identity.tflite", relu_tflite(outputs=("x",), nodes=(), extra={}))
    p = run("deploy", model, calibration)
    assert p.returncode == 0, p.stderr
    assert "outputs match reference: yes (x: 0 differ" in p.stdout


def test_input_that_is_a_constant_is_refused(tmp_path, calibration):
    """Was: inspect exit 0, deploy and quantize exit 3 (KeyError)."""
    model = save(tmp_path, "const_in.tflite",
                 relu_tflite(inputs=("k",), nodes=(Node("relu", "relu", ("k",), ("y",)),), extra={"k": constant("k")}))
    assert_refused(model, calibration, "input tensor 2 'k' is a constant")


@pytest.mark.parametrize("where", ["inputs", "outputs"])
def test_tensor_listed_twice_is_refused(tmp_path, calibration, where):
    """Was: outputs (y, y) deployed but quantize crashed (exit 3); inputs (x, x) deployed."""
    model = save(tmp_path, f"twice_{where}.tflite", relu_tflite(**{where: ("x", "x") if where == "inputs" else ("y", "y")}))
    name = "tensor 0 'x'" if where == "inputs" else "tensor 1 'y'"
    assert_refused(model, calibration, name, f"is listed twice among the model's {where}")


def test_tensors_sharing_a_name_compile(tmp_path, calibration):
    """Not broken: TFLite names need not be unique. Three outputs named y, y, y_1 keep apart."""
    sg = RawSubgraph("m", [RawTensor("x", (1, 8)), RawTensor("y", (1, 8)), RawTensor("y", (1, 8)),
                           RawTensor("y_1", (1, 8))],
                     [RawOp("RELU", (0,), (1,)), RawOp("RELU6", (0,), (2,)), RawOp("RELU_N1_TO_1", (0,), (3,))],
                     (0,), (1, 2, 3))
    p = run("deploy", save(tmp_path, "names.tflite", raw_tflite([sg])), calibration)
    assert p.returncode == 0, p.stderr
    assert "outputs match reference: yes (y: 0 differ" in p.stdout and "y_1_1: 0 differ" in p.stdout


# --- which op writes what ------------------------------------------------------------------

def test_op_writing_a_model_input_is_refused(tmp_path, calibration):
    """Was: exit 2, "tensor y defined twice"."""
    model = save(tmp_path, "writes_input.tflite", relu_tflite(inputs=("x", "y")))
    assert_refused(model, calibration, "layer 0 (RELU) writes tensor 1 'y', which is a model input")


def test_op_writing_a_constant_is_refused(tmp_path, calibration):
    sg = relu_subgraph("m")
    sg.tensors[1] = RawTensor("y", (1, 8), buffer=1)
    model = save(tmp_path, "writes_const.tflite", raw_tflite([sg], [RawBuffer(bytes(32))]))
    assert_refused(model, calibration, "layer 0 (RELU) writes tensor 1 'y', which is a constant")


def test_tensor_written_by_two_ops_is_refused(tmp_path, calibration):
    nodes = (Node("relu", "r1", ("x",), ("y",)), Node("relu", "r2", ("x",), ("y",)))
    model = save(tmp_path, "twice.tflite", relu_tflite(nodes=nodes))
    assert_refused(model, calibration, "tensor 1 'y' is written by layer 0 (RELU) and again by layer 1 (RELU)")


def test_op_reading_a_later_ops_output_is_refused(tmp_path, calibration):
    """Op 0 reads what op 1 writes: out of order, or a cycle. Was: "reads y before it is defined"."""
    nodes = (Node("relu", "r2", ("y",), ("z",)), Node("relu", "r1", ("x",), ("y",)))
    model = save(tmp_path, "order.tflite",
                 relu_tflite(nodes=nodes, outputs=("z",), extra={"z": Tensor("z", (1, 8), "float32")}))
    assert_refused(model, calibration, "layer 0 (RELU) reads tensor 1 'y' before layer 1 (RELU) writes it")


def test_op_reading_its_own_output_is_refused(tmp_path, calibration):
    model = save(tmp_path, "self.tflite", relu_tflite(nodes=(Node("relu", "relu", ("y",), ("y",)),)))
    assert_refused(model, calibration, "layer 0 (RELU) reads its own output, tensor 1 'y'")


def test_op_reading_a_tensor_nothing_writes_is_refused(tmp_path, calibration):
    nodes = (Node("relu", "relu", ("z",), ("y",)),)
    model = save(tmp_path, "dangling.tflite", relu_tflite(nodes=nodes, extra={"z": Tensor("z", (1, 8), "float32")}))
    assert_refused(model, calibration, "layer 0 (RELU) reads tensor 2 'z', which no op writes")


@pytest.mark.parametrize("builtin", ["CONCATENATION", "ADD"])
def test_op_without_outputs_is_refused(tmp_path, calibration, builtin):
    """An extra op that writes nothing. Was: IndexError in the op's support check (exit 3)."""
    sg = relu_subgraph("m")
    sg.ops.append(RawOp(builtin, (0, 0), ()))
    model = save(tmp_path, "no_out.tflite", raw_tflite([sg]))
    assert_refused(model, calibration, f"layer 1 ({builtin}) has no outputs")


@pytest.mark.parametrize("where", ["op input", "op output", "subgraph input", "subgraph output"])
def test_tensor_index_out_of_range_is_refused(tmp_path, calibration, where):
    """Index 99 of 2 tensors was refused already; -1 (absent) outside an op's inputs was exit 3."""
    sg = relu_subgraph("m")
    if where == "op input":
        sg.ops[0].inputs = (99,)
    elif where == "op output":
        sg.ops[0].outputs = (-1,)
    elif where == "subgraph input":
        sg.inputs = (-1,)
    else:
        sg.outputs = (-1,)
    model = save(tmp_path, "index.tflite", raw_tflite([sg]))
    words = ("refers to tensor 99, but subgraph 0 has 2 tensors",) if where == "op input" \
        else ("tensor -1", "only an op's optional input may be absent")
    assert_refused(model, calibration, *words)


def test_patched_op_input_index_is_refused(tmp_path, calibration):
    """The same through a byte patch of the writer's own file."""
    model = save(tmp_path, "patched.tflite", build.patch_op_input(relu_tflite(), 0, 0, 7))
    assert_refused(model, calibration, "operator 0 refers to tensor 7, but subgraph 0 has 2 tensors")


# --- subgraphs ----------------------------------------------------------------------------

def test_unused_subgraph_is_reported_and_the_model_compiles(tmp_path, calibration):
    """Was: the second subgraph was ignored without a word."""
    model = save(tmp_path, "two.tflite", raw_tflite([relu_subgraph("main"), relu_subgraph("cond", 2)]))
    p = run("inspect", model, calibration)
    assert p.returncode == 0, p.stderr
    assert "subgraph 1 'cond' (2 ops) is not used: microcompile compiles subgraph 0" in p.stdout
    p = run("deploy", model, calibration)
    assert p.returncode == 0, p.stderr
    assert "outputs match reference: yes" in p.stdout


def test_while_over_subgraphs_is_named_as_unsupported_control_flow(tmp_path, calibration):
    """Was: "unsupported op WHILE at layer 0 (y)", without a word of subgraphs."""
    main = RawSubgraph("main", [RawTensor("x", (1, 8)), RawTensor("y", (1, 8))],
                       [RawOp("WHILE", (0,), (1,), while_options(1, 2))], (0,), (1,))
    model = save(tmp_path, "while.tflite", raw_tflite([main, relu_subgraph("cond"), relu_subgraph("body")]))
    assert_refused(model, calibration, "unsupported op WHILE", "control flow",
                   "subgraph 1 'cond'", "subgraph 2 'body'")


# --- buffers ------------------------------------------------------------------------------

@pytest.mark.parametrize("offset, size", [(1, 2**40), (0, 2**40), (2**40, 32), (2**64 - 1, 2**64 - 1)])
def test_buffer_pointing_outside_the_file_is_refused(tmp_path, calibration, offset, size):
    """Was, at offset 1 or 0: "node add_0 reads c before it is defined"; elsewhere the message
    did not name the tensor."""
    model = save(tmp_path, "outside.tflite", raw_tflite([add_constant_subgraph(1)], [RawBuffer(offset=offset, size=size)]))
    assert_refused(model, calibration, "tensor 2 'c'", "buffer 1", "points outside the file",
                   f"offset {offset:,}", f"size {size:,}")


# --- ONNX ---------------------------------------------------------------------------------

@pytest.mark.parametrize("depth", [1, 3, 30, 100, 1000])
@pytest.mark.parametrize("condition", ["constant", "computed"])
def test_nested_if_is_named_as_unsupported_control_flow(tmp_path, calibration, depth, condition):
    """Was: onnx's evaluator ("Unable to find input 'x' in known results") for a constant
    condition; protobuf's "Exceeded upb_DecodeOptions_MaxDepth" past ~33 levels."""
    model = tmp_path / f"if{depth}.onnx"
    model.write_bytes(nested_if_onnx(depth, constant_condition=condition == "constant"))
    start = time.monotonic()
    assert_refused(model, calibration, "If at node if_0", "control flow")
    assert time.monotonic() - start < 20
    p = run("inspect", model, calibration)
    for leak in ("upb", "DecodeError", "known results", "RuntimeError", "ReferenceEvaluator"):
        assert leak not in p.stderr, p.stderr


@pytest.mark.parametrize("dim", [-8, 0])
def test_onnx_input_dimension_that_is_not_a_size(tmp_path, calibration, dim):
    """Was: "input x has a dynamic shape [1, -8]"; the value in the file is now named."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, dim])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "m", [x], [y])
    model = tmp_path / "dim.onnx"
    model.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    assert_refused(model, calibration, "input x", f"dimension 1 is {dim}", "--input-shape x:1x1")
    p = run("inspect", model, calibration, "--input-shape", "x:1x8")   # pinned, it compiles
    assert p.returncode == 0, p.stderr


@pytest.mark.parametrize("spec, words", [("x:1x99999999999999999999", "more than"), ("x:1x-8", "positive"),
                                         ("x:1x0", "positive")])
def test_input_shape_that_is_not_a_shape(tmp_path, calibration, spec, words):
    """Was: exit 3 (OverflowError) for a dimension past 64 bits."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, "n"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "n"])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "m", [x], [y])
    model = tmp_path / "dyn.onnx"
    model.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    assert_refused(model, calibration, f"bad --input-shape {spec!r}", words, extra=("--input-shape", spec))


def test_onnx_checker_message_is_whole(tmp_path, calibration):
    """Was cut at its first line: "...however input 'y' of node: " and nothing more."""
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8])
    graph = helper.make_graph([helper.make_node("Relu", ["y"], ["y"], name="loop")], "m", [x], [y])
    model = tmp_path / "loop.onnx"
    model.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]).SerializeToString())
    assert_refused(model, calibration, "topologically sorted", "OpType: Relu", "is not output of any previous nodes")
