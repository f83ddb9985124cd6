"""int4 weights (issue 28): TFLite's packed INT4 tensors read and written, conv2d,
depthwise_conv2d and fully_connected with int4 weights equal to LiteRT BUILTIN_REF on every
byte (host C and the Cortex-M twins, with the weights packed in flash or unpacked), the
unpacking C kernel against the packing, the storage choice against the flash, and
`quantize --weights int4`."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import microcompile as mc
from litert_ref import run_reference
from support import op_cases
from support.cli_run import run_cli
from support.qemu_cases import assert_matches_litert, merge_graphs
from microcompile.errors import ModelFormatError
from microcompile.frontend import load_model
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir import Graph, Node, QuantParams, Tensor, VerifyError, verify
from microcompile.ir.int4 import pack_int4, unpack_int4
from microcompile.reference import interp
from microcompile.resources import resource_dir
from microcompile.schedule.widening import Candidate, choose_storage

OPS = ("fully_connected", "conv2d", "depthwise_conv2d")


def _int4_case(op: str, k: int, seed: int) -> Graph:
    """A random single-op case of `op` (tests/support/op_cases.py) with its weights made int4."""
    g = op_cases.build_graph(op_cases.cases(op, "int8", k + 1, seed=seed)[k])
    w = g.tensors[g.nodes[0].inputs[1]]
    w4 = w.replace(dtype="int4", data=np.random.default_rng([seed, k]).integers(-8, 8, w.shape).astype(np.int8))
    return verify(g.replace(tensors={**g.tensors, w.name: w4}))


def _inputs(g: Graph, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {i: rng.integers(-128, 128, g.tensors[i].shape).astype(np.int8) for i in g.inputs}


# --- the format ------------------------------------------------------------------------------

def test_pack_and_unpack_are_inverse_low_nibble_first():
    assert pack_int4(np.array([1, -2, 7])) == bytes([0xE1, 0x07])      # -2 = 0xE in the high nibble; odd: 0 pad
    rng = np.random.default_rng(0)
    for n in (0, 1, 2, 7, 64, 1001):
        v = rng.integers(-8, 8, n).astype(np.int8)
        assert np.array_equal(unpack_int4(pack_int4(v), n), v)
    with pytest.raises(ValueError, match="-8..7"):
        pack_int4(np.array([8]))


@pytest.mark.parametrize("op", OPS)
def test_an_int4_model_reads_back_and_our_interpreter_equals_litert(op):
    for k in range(10):
        g = _int4_case(op, k, seed=41)
        data = write_tflite(g)
        back = load_model(data)
        w = back.tensors[back.nodes[0].inputs[1]]
        assert w.dtype == "int4" and np.array_equal(w.data, g.tensors[g.nodes[0].inputs[1]].data)
        x = _inputs(g, k)
        ours = interp.run(back, {back.inputs[0]: x[g.inputs[0]]})[back.outputs[0]]
        (want,) = run_reference(data, {back.inputs[0]: x[g.inputs[0]]}).values()
        assert np.array_equal(ours, want.reshape(ours.shape)), f"{op} case {k}"


def test_a_malformed_int4_tensor_is_refused_by_name():
    g = _int4_case("fully_connected", 0, seed=3)
    w = g.tensors[g.nodes[0].inputs[1]]
    with pytest.raises(VerifyError, match="outside -8..7"):
        verify(g.replace(tensors={**g.tensors, w.name: w.replace(data=np.full(w.shape, 9, np.int8))}))
    x = g.tensors[g.inputs[0]]
    with pytest.raises(VerifyError, match="only constants"):
        verify(g.replace(tensors={**g.tensors, x.name: x.replace(dtype="int4")}))
    # int4 on any other op than as weights: refused, naming the ops that take it
    t = {"a": Tensor("a", (4,), "int8", g.tensors[g.inputs[0]].quant),
         "b": w.replace(name="b", shape=(4,), data=np.zeros(4, np.int8), quant=QuantParams((0.1,), (0,))),
         "y": Tensor("y", (4,), "int8", g.tensors[g.inputs[0]].quant)}
    with pytest.raises(VerifyError, match="only as the weights of conv2d"):
        verify(Graph("add4", t, (Node("add", "add", ("a", "b"), ("y",), {"activation": "NONE"}),), ("a",), ("y",)))
    # a buffer of the wrong size for the shape: the file is malformed, and the message says so
    with pytest.raises(ModelFormatError, match="needs"):
        load_model(_int4_buffer_one_byte_short(g))


def _int4_buffer_one_byte_short(g: Graph) -> bytes:
    from microcompile.frontend.tflite import writer

    real = writer.pack_int4
    writer.pack_int4 = lambda v: real(v)[:-1] if len(real(v)) > 1 else real(v) + b"\x00"
    try:
        return write_tflite(g)
    finally:
        writer.pack_int4 = real


# --- the C kernel --------------------------------------------------------------------------

def test_the_c_unpacking_kernel_equals_the_packing(tmp_path):
    rng = np.random.default_rng(5)
    cases = [rng.integers(-8, 8, n).astype(np.int8) for n in (1, 2, 3, 8, 31, 64)]
    lines = ['#include <stdio.h>', '#include "mc_copy.h"', "int main(void) {", "int8_t d8[64]; int16_t d16[64];"]
    for v in cases:
        packed = ", ".join(str(b) for b in pack_int4(v))
        lines += [f"{{ static const uint8_t s[] = {{{packed}}};",
                  f"  mc_unpack_s4_s8(d8, s, {v.size}); mc_unpack_s4_s16(d16, s, {v.size});",
                  f"  for (int i = 0; i < {v.size}; ++i) printf(\"%d %d\\n\", d8[i], d16[i]); }}"]
    lines += ["return 0; }"]
    (tmp_path / "main.c").write_text("\n".join(lines) + "\n")
    runtime = resource_dir("runtime_c")
    subprocess.run(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", f"-I{runtime / 'include'}", "main.c",
                    str(runtime / "kernels" / "mc_copy.c"), "-o", "unpack"], cwd=tmp_path, check=True)
    out = subprocess.run([str(tmp_path / "unpack")], capture_output=True, text=True, check=True).stdout.split("\n")
    got = np.array([[int(a) for a in ln.split()] for ln in out if ln])
    want = np.concatenate(cases)
    assert np.array_equal(got[:, 0], want) and np.array_equal(got[:, 1], want)


# --- the storage choice --------------------------------------------------------------------

def test_storage_starts_packed_and_steps_up_by_instructions_saved_per_byte():
    cands = [Candidate("conv", gain=1000, narrow_bytes=100, wide_bytes=180, packed_bytes=60, unpack_cost=280),
             Candidate("fc", gain=10, narrow_bytes=400, wide_bytes=800, packed_bytes=200, unpack_cost=1400),
             Candidate("dw", gain=50, narrow_bytes=40, wide_bytes=80)]          # not int4 values: no packed form
    assert choose_storage(cands, 0, None) == {"conv": "int16", "fc": "int16", "dw": "int16"}
    smallest = 60 + 200 + 40
    assert choose_storage(cands, 0, smallest) == {"conv": "int4", "fc": "int4", "dw": "int8"}
    # conv int4 -> int8: 280 per 40 bytes (7/B); fc: 1400 per 200 (7/B, the larger saving first);
    # conv int8 -> int16: 1000 per 80 (12.5/B) only once it is int8; dw: 50 per 40
    assert choose_storage(cands, 0, smallest + 40) == {"conv": "int8", "fc": "int4", "dw": "int8"}
    assert choose_storage(cands, 0, smallest + 120) == {"conv": "int16", "fc": "int4", "dw": "int8"}
    assert choose_storage(cands, 0, smallest + 320) == {"conv": "int16", "fc": "int8", "dw": "int8"}


def test_a_model_that_fits_int8_gets_no_packed_kernel_and_a_tight_budget_packs_them():
    g = merge_graphs([_int4_case(op, 2, seed=8) for op in OPS])
    data = write_tflite(g)
    roomy = mc.compile(data, "mps2-an386")
    tight = mc.compile(data, "mps2-an386", options=mc.CompileOptions(flash_budget=1))
    assert roomy.report["int4_kernels"] == 0
    assert tight.report["int4_kernels"] == 3
    assert tight.report["weights_bytes"] < roomy.report["weights_bytes"]


# --- on the devices ------------------------------------------------------------------------

def _fc_panels(k: int, in_shape: tuple, units: int, seed: int) -> Graph:
    """A fully connected int4 case whose units fill panels of four (DSP cores read its packed
    weights in place: mc_gemm_p4_dsp_s4)."""
    case = dict(op_cases.cases("fully_connected", "int8", k + 1, seed=seed)[k], in_shape=in_shape, units=units)
    g = op_cases.build_graph(case)
    w = g.tensors[g.nodes[0].inputs[1]]
    w4 = w.replace(dtype="int4", data=np.random.default_rng([seed, k, 1]).integers(-8, 8, w.shape).astype(np.int8))
    return verify(g.replace(name=f"fc_panels_{k}", tensors={**g.tensors, w.name: w4}))


PANEL_CASES = [((1, 64), 20), ((1, 96), 36), ((1, 128), 12), ((1, 48), 24)]


def _merged(seed: int) -> Graph:
    graphs = [_int4_case(op, k, seed) for op in OPS for k in range(5)]
    graphs += [_fc_panels(k, shape, units, seed) for k, (shape, units) in enumerate(PANEL_CASES)]
    return merge_graphs(graphs, name=f"int4_{seed}")


# The host has no flash limit: without a budget its kernels unpack at compile time (the int8 path).
@pytest.mark.parametrize("board,budget", [("host", 1), ("mps2-an386", None), ("mps2-an386", 1),
                                          ("mps2-an385", None), ("mps2-an385", 1), ("mps3-an547", None),
                                          ("mps3-an547", 1)])
@pytest.mark.qemu
def test_int4_kernels_equal_litert_on_the_devices(tmp_path, board, budget):
    g = _merged(seed=17)
    model = tmp_path / "int4.tflite"
    model.write_bytes(write_tflite(g))
    x = _inputs(g, 1)
    np.savez(tmp_path / "x.npz", **x)
    cm = mc.compile(model, board, options=mc.CompileOptions(flash_budget=budget))
    assert (cm.report["int4_kernels"] == 19) == (budget == 1)
    res = cm.deploy(tmp_path / "p", emulate=board != "host", inputs=tmp_path / "x.npz")
    assert_matches_litert(model, x, res.outputs, f"int4 on {board}")
    if budget == 1:
        c = (tmp_path / "p" / "model" / "model.c").read_text()
        # on DSP cores the panel-shaped fully connected layers (and convolutions whose unpacked
        # weights would raise the arena) read their packed weights in place
        fused = len(re.findall(r"mc_gemm_p4_(?:rq_)?dsp_s4\(", c))
        assert fused >= 2 if board == "mps2-an386" else fused == 0
        assert c.count("mc_unpack_s4_s") + fused == 19       # every packed kernel reads its weights one way


# --- quantize --weights int4 ---------------------------------------------------------------

def _digits(tmp_path):
    script = Path(__file__).resolve().parents[2] / "examples" / "digits" / "make_model.py"
    subprocess.run([sys.executable, str(script), "-o", str(tmp_path)], check=True, capture_output=True)
    spec = importlib.util.spec_from_file_location("make_model", script)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return tmp_path / "digits_mlp.tflite", mod.load_digits_split()


def test_quantize_weights_int4_keeps_the_digits_accuracy_and_halves_the_weights(tmp_path):
    model, ((xtr, _), (xte, yte)) = _digits(tmp_path)
    q8 = mc.quantize(model, xtr[:200])
    q4 = mc.quantize(model, xtr[:200], weights="int4")
    keep = mc.quantize(model, xtr[:200], weights="int4", keep_int8=[q8.graph.nodes[1].name])

    def weights(q):
        return {n.name: q.graph.tensors[n.inputs[1]] for n in q.graph.nodes if n.op == "fully_connected"}

    assert all(t.dtype == "int4" for t in weights(q4).values())
    assert sum(t.nbytes for t in weights(q4).values()) * 2 == sum(t.nbytes for t in weights(q8).values())
    assert [t.dtype for t in weights(keep).values()].count("int8") == 1
    with pytest.raises(mc.UserError, match="--keep-int8 names layers to leave out"):
        mc.quantize(model, xtr[:10], keep_int8=["fc"])
    with pytest.raises(TypeError, match="keep_int8"):
        mc.quantize(model, xtr[:10], keep_in8=["fc"])

    def accuracy(q):
        name, out = q.graph.inputs[0], q.graph.outputs[0]
        pred = [interp.run(q.graph, {name: x[None]})[out].argmax() for x in xte]
        return float(np.mean(np.array(pred) == yte))

    # measured: float 98.9 %, int8 98.6 %, int4 97.2 % (benchmarks/int4_weights.py)
    assert accuracy(q8) >= 0.97 and accuracy(q4) >= 0.95
    # the saved model holds TFLite INT4 tensors, which LiteRT runs to the same bytes as we do
    path = q4.save(tmp_path / "digits_w4.tflite")
    back = load_model(path)
    assert sum(t.dtype == "int4" for t in back.tensors.values()) == 2
    x = xte[:1].astype(np.float32)
    (want,) = run_reference(path.read_bytes(), {back.inputs[0]: x}).values()
    assert np.array_equal(interp.run(back, {back.inputs[0]: x})[back.outputs[0]], want)


@pytest.mark.parametrize("op,w_shape,x_shape", [("fully_connected", (6, 16), (40, 16)),
                                                 ("conv2d", (5, 3, 3, 4), (40, 7, 7, 4)),
                                                 ("depthwise_conv2d", (1, 3, 3, 8), (40, 6, 6, 4))])
def test_the_bias_correction_is_the_mean_output_error_of_the_int4_weights(op, w_shape, x_shape):
    # By linearity, the mean over inputs of (dequantized int4 weights - float weights) . x is the
    # weight error applied to the inputs' per-channel mean: exactly, where every window sees the
    # channel's mean (here each sample is constant over space; borders and padding aside)
    from microcompile.quantization.ptq import _mean_error, symmetric_weights_int4
    from microcompile.ir import ops

    rng = np.random.default_rng(2)
    w = rng.normal(0, 1, w_shape).astype(np.float32)
    per_channel = rng.normal(0.7, 1, (x_shape[0], x_shape[-1]))            # a non-zero mean
    x = np.broadcast_to(per_channel.reshape(x_shape[0], *[1] * (len(x_shape) - 2), x_shape[-1]), x_shape)
    wq, q = symmetric_weights_int4(w, ops.get(op).weight_axis)
    axis = ops.get(op).weight_axis
    shape = [1] * w.ndim
    shape[axis] = -1
    dw = wq * np.asarray(q.scale).reshape(shape) - w.astype(np.float64)
    if op == "fully_connected":
        errors = x @ dw.T                                           # [samples, units]
    elif op == "conv2d":                                            # the VALID 3x3 outputs
        win = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(1, 2))   # [s, 5, 5, ic, 3, 3]
        errors = np.einsum("nhwcij,oijc->nhwo", win, dw).reshape(-1, w_shape[0])
    else:
        win = np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(1, 2))   # [s, 4, 4, c, 3, 3]
        win = np.repeat(win, 2, axis=3)                             # multiplier 2: channel oc reads oc // 2
        errors = np.einsum("nhwcij,ijc->nhwc", win, dw[0]).reshape(-1, w_shape[3])
    node = Node(op, "layer", ("x", "w", "b"), ("y",), {})
    mean_x = x.reshape(-1, x_shape[-1]).mean(axis=0)
    assert np.allclose(_mean_error(node, w, wq, q, mean_x), errors.mean(axis=0), rtol=1e-9, atol=1e-9)


def test_quantize_weights_int4_on_the_command_line(tmp_path):
    model, ((xtr, _), _) = _digits(tmp_path)
    np.save(tmp_path / "cal.npy", xtr[:50])
    p = run_cli("quantize", model, "--calibration", tmp_path / "cal.npy", "-o", tmp_path / "w4.tflite",
                "--weights", "int4")
    assert p.returncode == 0, p.stderr
    assert "int4 weights" in p.stdout and "SQNR" in p.stdout
    assert load_model(tmp_path / "w4.tflite").tensors
    bad = run_cli("quantize", model, "--calibration", tmp_path / "cal.npy", "-o", tmp_path / "x.tflite",
                  "--weights", "int4", "--keep-int8", "no_such_layer")
    assert bad.returncode == 2 and "no_such_layer" in bad.stderr and "inspect" in bad.stderr
    bad = run_cli("quantize", model, "--calibration", tmp_path / "cal.npy", "-o", tmp_path / "x.tflite",
                  "--weights", "int4", "--activations", "int16")
    assert bad.returncode == 2 and "int8 activations" in bad.stderr
    assert not (tmp_path / "x.tflite").exists()


def test_an_exported_library_carries_the_int4_kernels_it_calls(tmp_path):
    # The export copies the kernel sources by the headers the model's C includes: every mc_
    # function the packed kernels call is defined by a source of the exported tree.
    g = _merged(seed=23)
    cm = mc.compile(write_tflite(g), "mps2-an386", options=mc.CompileOptions(flash_budget=1))
    mc.export([cm], tmp_path / "export", format="make", names=["w4"])
    sources = sorted((tmp_path / "export").rglob("*.c"))
    assert any(p.name == "mc_gemm_s4_dsp.c" for p in sources) and any(p.name == "mc_copy.c" for p in sources)
    cflags = list(mc.board("mps2-an386").target.cflags)
    includes = sorted({f"-I{p.parent}" for p in (tmp_path / "export").rglob("*.h")})
    defined, undefined = set(), set()
    for k, src in enumerate(sources):
        obj = tmp_path / f"o{k}.o"
        subprocess.run(["arm-none-eabi-gcc", *cflags, "-std=c99", "-Wall", "-Wextra", "-Werror", "-O2", *includes,
                        "-c", str(src), "-o", str(obj)], check=True)
        for line in subprocess.run(["arm-none-eabi-nm", str(obj)], capture_output=True, text=True,
                                   check=True).stdout.splitlines():
            kind, sym = line.split()[-2:]
            (undefined if kind == "U" else defined).add(sym)
    missing = sorted(s for s in undefined - defined if s.startswith("mc_"))
    assert not missing, missing
