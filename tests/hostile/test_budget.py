"""The compiler's memory budget (microcompile/ir/budget.py) against hostile models (issue 22).

A few hundred bytes of model can ask the compiler to make gigabytes at compile time: an
Expand, ConstantOfShape, Tile or Range of a constant folded at import, a PAD of a constant
folded by the fold_constants pass, or many tensors each under the limit of one. Each bomb
must end in exit 2 with a message naming the node and the size, in under 5 s and 500 MB of
peak RSS, measured on the CLI child itself (os.wait4). The 5 s are the child's CPU time (its
interpreter's start-up is most of it): the suite runs on two shared cores, where wall time
measures the neighbours; the wall time only has to stay under WALL_SECONDS. The child runs under an address-space
limit (build_budget.CHILD_ADDRESS_SPACE), so that the code before the budget, which allocated
first, fails these tests with a MemoryError instead of taking the machine down.

Sizes come from the file, so they are Python integers: a shape of 2^64 elements is not
"0 bytes".
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

from support import build_budget as bb  # noqa: E402

from microcompile.errors import ModelFormatError  # noqa: E402
from microcompile.ir import Tensor, budget  # noqa: E402

MB = 1_000_000
BOMB_SECONDS = 5.0
WALL_SECONDS = 30.0
BOMB_RSS = 500 * MB
EIGHT_GIB = f"{8 << 30:,} bytes"          # 8,589,934,592 bytes
TWO_TO_THE_64_FLOATS = f"{4 << 64:,} bytes"   # [65536] * 4 float32

ONNX_BOMBS = {   # builder -> (the node the message names, its op)
    "expand": (bb.expand_bomb, "'big' (Expand)"),
    "constant_of_shape": (bb.constant_of_shape_bomb, "'big' (ConstantOfShape)"),
    "tile": (bb.tile_bomb, "'big' (Tile)"),
    "range": (bb.range_bomb, "'big' (Range)"),
}


def _write_onnx(tmp_path: Path, model: onnx.ModelProto, name: str) -> Path:
    path = tmp_path / f"{name}.onnx"
    onnx.save(model, path)
    return path


def _command(kind: str, model: Path, tmp_path: Path) -> list:
    if kind == "inspect":
        return ["inspect", model]
    if kind == "deploy":
        return ["deploy", model, "--board", "host", "-o", tmp_path / "project"]
    calibration = tmp_path / "calibration.npy"
    np.save(calibration, np.zeros((4, 1, 4), np.float32))
    return ["quantize", model, "--calibration", calibration, "-o", tmp_path / "q.tflite"]


def _refused_within_bounds(r: bb.Measured, seconds: float = BOMB_SECONDS, rss: int = BOMB_RSS) -> str:
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    assert r.cpu < seconds, f"took {r.cpu:.1f} s of CPU"
    assert r.wall < WALL_SECONDS, f"took {r.wall:.1f} s"
    assert r.peak_rss < rss, f"peak RSS {r.peak_rss / MB:.0f} MB"
    return r.stderr


@pytest.mark.parametrize("bomb, kind", [(b, "inspect") for b in sorted(ONNX_BOMBS)]
                         + [("expand", "deploy"), ("constant_of_shape", "deploy")])
def test_onnx_bomb_is_refused_before_it_is_allocated(tmp_path, bomb, kind):
    build, node = ONNX_BOMBS[bomb]
    model = _write_onnx(tmp_path, build(), bomb)
    assert model.stat().st_size < 400
    err = _refused_within_bounds(bb.run_measured(*_command(kind, model, tmp_path), cwd=tmp_path))
    assert f"ONNX node {node}, folded at import: a tensor of shape" in err
    assert EIGHT_GIB in err and "more than the 256 MiB microcompile allows one tensor" in err


@pytest.mark.parametrize("bomb", ["expand", "range"])
def test_onnx_bomb_is_refused_by_quantize(tmp_path, bomb):
    build, node = ONNX_BOMBS[bomb]
    model = _write_onnx(tmp_path, build(), bomb)
    err = _refused_within_bounds(bb.run_measured(*_command("quantize", model, tmp_path), cwd=tmp_path))
    assert f"ONNX node {node}, folded at import" in err and EIGHT_GIB in err
    assert not (tmp_path / "q.tflite").exists()


def test_folded_convolution_is_refused_by_its_working_set(tmp_path):
    """A folded Conv's output is 4 MiB, but onnx's evaluator makes im2col indices of 7.5 GiB."""
    model = _write_onnx(tmp_path, bb.conv_bomb(), "conv_bomb")
    err = _refused_within_bounds(bb.run_measured("inspect", model, cwd=tmp_path))
    assert "ONNX node 'big' (Conv), folded at import (the im2col of onnx's evaluator): a tensor of shape" in err
    assert f"{993 * 993 * 1024 * 8:,} bytes" in err   # int64 indices


@pytest.mark.heavy   # half a gigabyte or a build: left out of --quick
def test_onnx_transient_tensors_are_bounded_together(tmp_path):
    """Twelve Expands of 240 MiB, each reduced at once: each is under the limit of one tensor,
    together they are 2.8 GiB. The fifth would pass 1 GiB: refused before it is made."""
    model = _write_onnx(tmp_path, bb.transient_bomb(), "transient")
    r = bb.run_measured("inspect", model, cwd=tmp_path)
    err = _refused_within_bounds(r, seconds=10, rss=budget.TOTAL_BYTES)
    assert "ONNX node 'big4' (Expand), folded at import: 251,658,240 bytes (240 MiB)" in err
    # four Expands, four scalar sums, the scalar and the shape constants
    assert f"after {4 * 251658240 + 4 * 4 + 4 + 16:,} bytes (960 MiB) made by constant folding at import" in err
    assert "more than the 1024 MiB microcompile allows one stage to make" in err


def test_resize_to_a_long_axis_converts_without_a_dense_matrix(tmp_path):
    """8192 -> 65536 samples (32 KiB in, 256 KiB out): choosing TFLite's sampling compared two
    dense 65536 x 8192 float64 matrices (4 GiB each); it compares where they read."""
    model = _write_onnx(tmp_path, bb.resize_model(8192, 65536), "resize")
    r = bb.run_measured("inspect", model, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "resize_bilinear" in r.stdout
    assert r.peak_rss < BOMB_RSS, f"peak RSS {r.peak_rss / MB:.0f} MB"


def test_resize_past_the_budget_is_refused_before_its_tables(tmp_path):
    model = _write_onnx(tmp_path, bb.resize_model(8, 1 << 40), "resize_bomb")
    err = _refused_within_bounds(bb.run_measured("inspect", model, cwd=tmp_path))
    assert f"ONNX node 'y' (Resize): a tensor of shape [1, 1, {1 << 40}, 1] needs {4 << 40:,} bytes" in err


@pytest.mark.parametrize("kind", ["inspect", "deploy"])
def test_tflite_pad_bomb_is_refused(tmp_path, kind):
    model = tmp_path / "pad_bomb.tflite"
    model.write_bytes(bb.tflite_pad_bomb())
    err = _refused_within_bounds(bb.run_measured(*_command(kind, model, tmp_path), cwd=tmp_path))
    assert "tensor 'p0' of shape (1, 65536, 32768, 1) needs 8,589,934,592 bytes" in err


def test_tflite_transient_tensors_are_bounded_together(tmp_path):
    """Twelve PADs of a constant to 240 MiB, each reduced: folded by the fold_constants pass,
    they held 2.8 GiB at once. The model's tensors together are over the budget: refused
    at import, before any is made."""
    model = tmp_path / "transient.tflite"
    model.write_bytes(bb.tflite_transient_bomb())
    err = _refused_within_bounds(bb.run_measured("deploy", model, "--board", "host", "-o", tmp_path / "p",
                                                 cwd=tmp_path))
    assert f"the model's tensors together need {12 * 251658240 + 4 * 25 + 4:,} bytes" in err
    assert "more than the 1024 MiB microcompile accepts for one model" in err


# --- sizes that wrap around 64 bits -------------------------------------------------------

def test_tensor_size_is_exact_past_64_bits():
    t = Tensor("t", (65536,) * 4, "float32")
    assert t.size == 1 << 64 and t.nbytes == 4 << 64
    assert budget.elements((65536,) * 4) == 1 << 64


@pytest.mark.parametrize("kind", ["inspect", "deploy"])
def test_onnx_input_of_2_to_the_64_elements_is_refused(tmp_path, kind):
    model = _write_onnx(tmp_path, bb.wrapped_input_onnx(), "wrapped_input")
    err = _refused_within_bounds(bb.run_measured(*_command(kind, model, tmp_path), cwd=tmp_path))
    assert "input 'x': a tensor of shape [65536, 65536, 65536, 65536] needs " + TWO_TO_THE_64_FLOATS in err


def test_onnx_constant_of_2_to_the_64_elements_is_refused(tmp_path):
    model = _write_onnx(tmp_path, bb.wrapped_constant_onnx(), "wrapped_constant")
    err = _refused_within_bounds(bb.run_measured("inspect", model, cwd=tmp_path))
    assert ("ONNX node 'big' (ConstantOfShape), folded at import: a tensor of shape [65536, 65536, 65536, 65536] "
            "needs " + TWO_TO_THE_64_FLOATS) in err


@pytest.mark.parametrize("kind", ["inspect", "deploy"])
def test_tflite_input_of_2_to_the_64_elements_is_refused(tmp_path, kind):
    model = tmp_path / "wrapped_input.tflite"
    model.write_bytes(bb.tflite_wrapped_input())
    err = _refused_within_bounds(bb.run_measured(*_command(kind, model, tmp_path), cwd=tmp_path))
    assert "tensor 'x' of shape (65536, 65536, 65536, 65536) needs " + TWO_TO_THE_64_FLOATS in err
    assert " 0 bytes" not in err


@pytest.mark.parametrize("kind", ["inspect", "deploy"])
def test_tflite_pad_to_2_to_the_64_elements_is_refused(tmp_path, kind):
    model = tmp_path / "wrapped_pad.tflite"
    model.write_bytes(bb.tflite_wrapped_pad())
    err = _refused_within_bounds(bb.run_measured(*_command(kind, model, tmp_path), cwd=tmp_path))
    assert "tensor 'p0' of shape (65536, 65536, 65536, 65536) needs " + TWO_TO_THE_64_FLOATS in err


# --- what stays legitimate ------------------------------------------------------------------

@pytest.mark.heavy   # half a gigabyte or a build: left out of --quick
def test_model_with_a_moderately_large_folded_constant_deploys(tmp_path):
    """192 MiB folded at import (under the limit of one tensor) and a transposed weight: the
    model compiles and runs on the host, and its outputs match the reference."""
    model = _write_onnx(tmp_path, bb.folded_constant_model(), "folded")
    r = bb.run_measured("deploy", model, "--board", "host", "-o", tmp_path / "project", cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "outputs match reference: yes" in r.stdout


# --- repacked weights and the interpreter's working set -----------------------------------------

def test_weights_packed_in_panels_are_checked_before_the_padded_copy():
    """A one-row int8 weight of 128 MiB pads to four rows (512 MiB) in the GEMM panel layout; a
    broadcast view stands for the weight, so the test itself allocates nothing."""
    from microcompile.tir.intrinsics_gemm import pack_panels4
    from microcompile.tir.intrinsics_gemm_mixed import pack_panels4_mixed

    one_row = np.broadcast_to(np.int8(1), (1, 128 << 20))
    with pytest.raises(ModelFormatError) as e:
        pack_panels4(one_row, 2, "the weights 'fc'")
    assert e.value.message.startswith("the weights 'fc', packed in panels of 4 rows: a tensor of shape "
                                      f"[4, {128 << 20}] needs 536,870,912 bytes (512 MiB)")
    with pytest.raises(ModelFormatError, match="packed in panels of 4 rows"):
        pack_panels4_mixed(np.broadcast_to(np.int16(1), (1, 64 << 20)), "the weights 'fc'")


@pytest.mark.heavy   # half a gigabyte or a build: left out of --quick
def test_reference_convolution_makes_its_im2col_a_block_at_a_time(tmp_path):
    r = bb.run_python_measured("-c", bb.WIDE_CONV, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]
    assert [float(v) for v in r.stdout.split()] == pytest.approx([802.816] * 3, rel=1e-4)
    assert r.peak_rss < BOMB_RSS, f"peak RSS {r.peak_rss / MB:.0f} MB"


@pytest.mark.parametrize("op, dtype", [("conv2d", "float32"), ("conv2d", "int8"), ("conv2d", "hybrid"),
                                       ("depthwise_conv2d", "float32"), ("depthwise_conv2d", "int8")])
def test_reference_convolution_by_blocks_computes_what_it_did_in_one_piece(monkeypatch, op, dtype):
    """The same layer with the whole im2col at once and in blocks of a few positions (odd
    sizes, so that blocks split rows and rows split blocks)."""
    from microcompile.ir import Graph, Node, QuantParams
    from microcompile.reference import common, interp

    rng = np.random.default_rng(3)
    q = {"int8": lambda s, zp=0: QuantParams((s,), (zp,))}.get(dtype)
    x_dtype = "int8" if dtype == "int8" else "float32"
    w_dtype = "float32" if dtype == "float32" else "int8"
    wshape = (5, 3, 3, 4) if op == "conv2d" else (1, 3, 3, 8)
    w = (rng.integers(-127, 128, wshape).astype(np.int8) if w_dtype == "int8"
         else rng.standard_normal(wshape).astype(np.float32))
    wq = QuantParams((0.02,), (0,)) if w_dtype == "int8" else None
    cout = wshape[0] if op == "conv2d" else wshape[3]
    t = {"x": Tensor("x", (2, 7, 9, 4), x_dtype, q(0.05, 3) if q else None),
         "w": Tensor("w", wshape, w_dtype, wq, w),
         "y": Tensor("y", (2, 4, 5, cout), x_dtype, q(0.2, -1) if q else None)}
    attrs = {"stride": (2, 2), "padding": (1, 1, 1, 1), "dilation": (1, 1), "activation": "NONE"}
    if op == "depthwise_conv2d":
        attrs["depth_multiplier"] = 2
    g = Graph("g", t, (Node(op, "n", ("x", "w", ""), ("y",), attrs),), ("x",), ("y",))
    x = (rng.integers(-128, 128, (2, 7, 9, 4)).astype(np.int8) if x_dtype == "int8"
         else rng.standard_normal((2, 7, 9, 4)).astype(np.float32))
    whole = interp.run(g, {"x": x})["y"]
    monkeypatch.setattr(common, "IM2COL_BYTES", 3 * 36 * 8)   # three positions' copy per block
    blocks = interp.run(g, {"x": x})["y"]
    if dtype == "float32":
        np.testing.assert_allclose(blocks, whole, rtol=1e-6, atol=1e-6)
    else:
        np.testing.assert_array_equal(blocks, whole)


# --- the stages' totals, with the budget scaled down -------------------------------------------

def _pads_of_a_constant(count: int, side: int):
    """x [1, 1] + sum over k of reduce_max(pad(c, to side x side)), unverified, unvalidated."""
    return bb._padded_constant_graph("pads", [((0, 0), (0, side - 1), (0, side - 1), (0, 0))] * count)


def test_fold_constants_pass_refuses_what_would_pass_its_total(monkeypatch):
    """A graph handed to the passes directly (the API: no reader validated it): each folded PAD
    is 256 KiB, the budget of the pass is scaled down to 1 MiB, so the fourth is refused."""
    from microcompile.transform.fold_constants import FoldConstants

    monkeypatch.setattr(budget, "TOTAL_BYTES", 1 << 20)
    with pytest.raises(ModelFormatError) as e:
        FoldConstants()(_pads_of_a_constant(8, 256))
    # three PADs and their three [1, 1] maxima before it
    assert e.value.message.startswith(f"layer 'pad3' (pad), folded at compile time: 262,144 bytes (256 KiB) after "
                                      f"{3 * 262144 + 3 * 4:,} bytes (768 KiB) made by the fold_constants pass")


def test_scheduled_constants_are_taken_from_the_schedule_stage_total(monkeypatch, tmp_path):
    """Each layer's scheduled constants (its weights, repacked, and their int16 copy) add up;
    with the budget scaled down to 64 KiB, the third 96x96 int8 layer is refused."""
    from microcompile.compiler import compile_graph
    from microcompile.ir import Graph, Node, QuantParams
    from microcompile.target import load_board

    rng = np.random.default_rng(5)
    q = QuantParams((0.05,), (0,))
    t = {"x": Tensor("x", (1, 96), "int8", q)}
    nodes, prev = [], "x"
    for k in range(4):
        t[f"w{k}"] = Tensor(f"w{k}", (96, 96), "int8", QuantParams((0.01,), (0,)),
                            rng.integers(-127, 128, (96, 96)).astype(np.int8))
        t[f"h{k}"] = Tensor(f"h{k}", (1, 96), "int8", q)
        nodes.append(Node("fully_connected", f"fc{k}", (prev, f"w{k}", ""), (f"h{k}",)))
        prev = f"h{k}"
    g = Graph("mlp", t, tuple(nodes), ("x",), ("h3",))
    monkeypatch.setattr(budget, "TOTAL_BYTES", 64 << 10)
    with pytest.raises(ModelFormatError) as e:
        compile_graph(g, load_board("mps2-an386"), tmp_path)
    # per layer: int8 weights in panels (9,216) + their int16 copy (18,432) + the bias of each (2 x 384)
    assert e.value.message.startswith("layer 'fc2' (fully_connected): 28,416 bytes (27.8 KiB) after 56,832 bytes "
                                      "(55.5 KiB) made by scheduling (weights repacked, int16 copies): more than the "
                                      "65,536 bytes microcompile allows one stage to make")


# --- the budget itself ------------------------------------------------------------------------

def test_check_tensor_names_the_maker_the_shape_and_both_sizes():
    assert budget.check_tensor("node n", (256, 1 << 20), 1) == 256 << 20
    with pytest.raises(ModelFormatError) as e:
        budget.check_tensor("node n", (256, 1 << 20), 4)
    assert e.value.message == ("node n: a tensor of shape [256, 1048576] needs 1,073,741,824 bytes (1 GiB), more "
                               "than the 256 MiB microcompile allows one tensor")


def test_tally_refuses_the_tensor_that_would_pass_the_total():
    tally = budget.Tally("a test")
    for k in range(4):
        tally.take(f"t{k}", (budget.TENSOR_BYTES,), 1)
    with pytest.raises(ModelFormatError, match=r"^t4: 1 bytes after 1,073,741,824 bytes \(1 GiB\) "
                                               r"made by a test: more than the 1024 MiB microcompile allows one "
                                               r"stage to make"):
        tally.take("t4", (1,), 1)
    assert tally.made == budget.TOTAL_BYTES
