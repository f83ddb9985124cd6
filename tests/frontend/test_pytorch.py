"""The PyTorch frontend: torch.export programs, .pt2 files and modules, float and PT2E int8.

Fixtures are tests/fixtures/pytorch/*.pt2 with their torch outputs (make_pt2_models.py says
how they were made); ResNet-18 is built here (45 MB of weights is no fixture). Float models
must equal torch within 1e-5 of the output's largest magnitude on the host and in QEMU; the
PT2E MobileNet must agree with the PT2E model run in torch within one quantization step on
99% of the elements, with an SQNR against the float model within 1 dB of the PT2E model's own.
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="not-installed: torch (the torch extra)")

import microcompile as mc  # noqa: E402
from microcompile.errors import ModelFormatError, UnsupportedOpError, UserError  # noqa: E402

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pytorch"
FLOAT = ["mobilenet_v2", "squeezenet1_1", "kws_transformer", "tiny_vit"]
QEMU_BOARD = "mps2-an386"


def fixture(name: str) -> tuple[Path, dict]:
    return FIXTURES / f"{name}.pt2", dict(np.load(FIXTURES / f"{name}.npz"))


def assert_close(got: np.ndarray, want: np.ndarray) -> None:
    assert got.shape == want.shape
    worst = float(np.abs(got.astype(np.float64) - want).max())
    assert worst <= 1e-5 * float(np.abs(want).max()), f"max |diff| {worst:.3g}, |want| max {np.abs(want).max():.3g}"


def sqnr(reference: np.ndarray, x: np.ndarray) -> float:
    reference, x = reference.astype(np.float64), x.astype(np.float64)
    return float(10 * np.log10((reference ** 2).sum() / ((reference - x) ** 2).sum()))


@pytest.mark.parametrize("name", FLOAT)
def test_the_committed_outputs_are_what_this_torch_computes(name):
    """The fixtures' reference outputs still hold for the installed torch (loaded as torch would)."""
    path, d = fixture(name)
    with torch.no_grad():
        y = torch.export.load(path).module()(torch.from_numpy(d["x"])).numpy()
    assert_close(y, d["y"])


@pytest.mark.heavy
@pytest.mark.parametrize("name", FLOAT)
def test_a_float_fixture_deploys_on_the_host_and_equals_torch(name, tmp_path):
    path, d = fixture(name)
    cm = mc.compile(path, "host")
    assert_close(cm.reference([d["x"]])[0], d["y"])
    result = cm.deploy(tmp_path / "p", inputs=d["x"])
    assert result.verified, result.report["outputs"]
    assert_close(result.outputs[cm.graph.outputs[0]], d["y"])


@pytest.mark.qemu
@pytest.mark.heavy
@pytest.mark.parametrize("name", FLOAT)
def test_a_float_fixture_runs_in_qemu_and_equals_torch(name, tmp_path):
    path, d = fixture(name)
    cm = mc.compile(path, QEMU_BOARD)
    result = cm.deploy(tmp_path / "p", inputs=d["x"], emulate=True)
    assert result.verified, result.report["outputs"]
    assert_close(result.outputs[cm.graph.outputs[0]], d["y"])


@pytest.mark.qemu
@pytest.mark.heavy
def test_the_pt2e_mobilenet_is_int8_in_qemu_and_agrees_with_torch(tmp_path):
    path, d = fixture("mobilenet_v2_pt2e")
    cm = mc.compile(path, QEMU_BOARD)
    ops = {(n.op, cm.graph.tensors[n.outputs[0]].dtype) for n in cm.graph.nodes}
    float_kernels = {op for op, dtype in ops if dtype == "float32" and op != "dequantize"}
    assert not float_kernels, f"left float: {float_kernels}"      # every layer folded into int8
    final = next(n for n in cm.graph.nodes if n.outputs[0] == cm.graph.outputs[0])
    assert final.op == "dequantize"
    step = cm.graph.tensors[final.inputs[0]].quant.scale[0]
    # The accuracy over all eight images on the reference; the twin runs two of them and must
    # equal it (each 110 KB float input takes about 5 s over the emulated UART).
    ours = np.concatenate([cm.reference([d["x_test"][i:i + 1]])[0] for i in range(len(d["x_test"]))])
    with cm.emulate(tmp_path / "agent") as dev:
        for i in (0, 5):
            np.testing.assert_array_equal(dev.run(d["x_test"][i:i + 1])[0], ours[i:i + 1])
    off = np.abs(ours - d["y_test"]) > step * 1.0001
    assert off.mean() <= 0.01, f"{off.sum()} of {off.size} elements more than one step from PT2E"
    ours_db, theirs_db = sqnr(d["y_float"], ours), sqnr(d["y_float"], d["y_test"])
    assert ours_db >= theirs_db - 1.0, (ours_db, theirs_db)


@pytest.mark.heavy
@pytest.mark.slow      # a minute: an accuracy comparison, not a correctness check
def test_our_ptq_of_the_float_mobilenet_is_no_worse_than_onnxruntimes(tmp_path):
    """mc.quantize on the torch program vs onnxruntime's quantize_static (QDQ, per-channel int8
    weights, int8 activations) of the same program written as ONNX, both calibrated on the
    same 16 images and scored against the float model on 8 others."""
    ort = pytest.importorskip("onnxruntime", reason="not-installed: onnxruntime")
    from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

    from microcompile.frontend.pytorch import read_pt2
    from microcompile.frontend.pytorch.aten import decompositions, to_onnx

    path, _ = fixture("mobilenet_v2")
    d = np.load(FIXTURES / "mobilenet_v2_pt2e.npz")
    calibration, test, y_float = d["calibration"], d["x_test"], d["y_float"]

    q = mc.quantize(torch.export.load(path), calibration=calibration)
    cm = mc.compile(q, "host")
    ours = np.concatenate([cm.reference([test[i:i + 1]])[0] for i in range(len(test))])

    import onnx
    model = to_onnx(read_pt2(path).run_decompositions(decompositions()), "mobilenet_v2")
    onnx.save(model, tmp_path / "float.onnx")

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.items = iter([{"x": calibration[i:i + 1]} for i in range(len(calibration))])

        def get_next(self):
            return next(self.items, None)

    quantize_static(str(tmp_path / "float.onnx"), str(tmp_path / "int8.onnx"), Reader(), quant_format=QuantFormat.QDQ,
                    per_channel=True, activation_type=QuantType.QInt8, weight_type=QuantType.QInt8)
    session = ort.InferenceSession(str(tmp_path / "int8.onnx"), providers=["CPUExecutionProvider"])
    theirs = np.concatenate([session.run(None, {"x": test[i:i + 1]})[0] for i in range(len(test))])
    ours_db, theirs_db = sqnr(y_float, ours), sqnr(y_float, theirs)
    assert ours_db >= theirs_db - 1.0, (ours_db, theirs_db)


def test_a_module_compiles_with_example_inputs_and_nhwc_io(tmp_path):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3, padding=1), torch.nn.BatchNorm2d(4), torch.nn.ReLU6(),
                            torch.nn.Conv2d(4, 4, 3, stride=2, groups=4), torch.nn.Hardswish()).eval()
    with torch.no_grad():
        m[1].running_mean.uniform_(-1, 1)
        m[1].running_var.uniform_(0.5, 2)
    x = torch.randn(1, 3, 12, 12)
    want = m(x).detach().numpy()
    cm = mc.compile(m, "host", example_inputs=(x,))
    assert cm.inputs[0].shape == (1, 3, 12, 12) and cm.outputs[0].shape == want.shape
    assert_close(cm.reference([x.numpy()])[0], want)
    nhwc = mc.compile(m, "host", example_inputs=(x,), options=mc.CompileOptions(input_layout="nhwc"))
    assert nhwc.inputs[0].shape == (1, 12, 12, 3)
    assert not any(n.op == "transpose" for n in nhwc.graph.nodes)   # none left at the edges
    assert_close(nhwc.reference([x.numpy().transpose(0, 2, 3, 1)])[0], want.transpose(0, 2, 3, 1))
    assert nhwc.deploy(tmp_path / "p", inputs=x.numpy().transpose(0, 2, 3, 1)).verified


def test_hardsigmoid_silu_and_an_adaptive_pool_to_2x2_equal_torch():
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.Hardsigmoid(), torch.nn.Conv2d(4, 4, 1),
                            torch.nn.SiLU(), torch.nn.AdaptiveAvgPool2d(2)).eval()
    x = torch.randn(1, 3, 10, 10)
    assert_close(mc.compile(m, "host", example_inputs=(x,)).reference([x.numpy()])[0], m(x).detach().numpy())
    with pytest.raises(UnsupportedOpError, match="uneven windows"):
        mc.compile(torch.nn.AdaptiveAvgPool2d(3), "host", example_inputs=(torch.randn(1, 2, 8, 8),))


def test_the_cli_quantizes_a_pt2_file(tmp_path):
    path, _ = fixture("mobilenet_v2")
    np.save(tmp_path / "cal.npy", np.load(FIXTURES / "mobilenet_v2_pt2e.npz")["calibration"][:4])
    p = subprocess.run([sys.executable, "-m", "microcompile", "quantize", str(path), "--calibration",
                        str(tmp_path / "cal.npy"), "-o", str(tmp_path / "m_int8.tflite")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    g = mc.inspect(tmp_path / "m_int8.tflite").graph
    assert sum(n.op == "conv2d" and g.tensors[n.outputs[0]].dtype == "int8" for n in g.nodes) >= 30


def test_attention_with_is_causal_and_constant_masks_equals_torch(tmp_path):
    F = torch.nn.functional

    class Attention(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("keep", (torch.rand(6, 6) > 0.3) | torch.eye(6, dtype=torch.bool))
            self.register_buffer("bias", torch.randn(6, 6))
            self.qkv = torch.nn.Linear(8, 24)

        def forward(self, x):
            q, k, v = self.qkv(x).reshape(1, 6, 3, 2, 4).permute(2, 0, 3, 1, 4)
            return (F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    + F.scaled_dot_product_attention(q, k, v, attn_mask=self.keep)
                    + F.scaled_dot_product_attention(q, k, v, attn_mask=self.bias))

    torch.manual_seed(4)
    m, x = Attention().eval(), torch.randn(1, 6, 8)
    cm = mc.compile(m, "host", example_inputs=(x,))
    want = m(x).detach().numpy()
    assert_close(cm.reference([x.numpy()])[0], want)
    assert cm.deploy(tmp_path / "p", inputs=x.numpy()).verified

    class RuntimeMask(torch.nn.Module):
        def forward(self, q, mask):
            return F.scaled_dot_product_attention(q, q, q, attn_mask=mask)

    with pytest.raises(UnsupportedOpError, match="runtime mask"):
        mc.compile(RuntimeMask(), "host", example_inputs=(torch.randn(1, 2, 4, 8), torch.zeros(4, 4)))


@pytest.mark.parametrize("mask", ["none", "causal-bool", "float", "masked-fill"])
def test_nn_multihead_attention_equals_torch_and_runs_fused(mask, tmp_path):
    """nn.MultiheadAttention as PyTorch exports it (in-projection, heads split by views,
    scaled_dot_product_attention, out-projection): its constant masks, built with zeros_like
    and masked_fill in the program, are evaluated at import; every head runs as one fused
    attention kernel (the mask read a query row at a time) in host C, equal to torch."""

    class Mha(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.mha = torch.nn.MultiheadAttention(16, 4, batch_first=True)
            causal = torch.triu(torch.ones(7, 7, dtype=torch.bool), 1)
            self.register_buffer("mask", causal if mask != "float" else torch.randn(7, 7))

        def forward(self, x):
            m = None if mask == "none" else self.mask
            if mask == "masked-fill":     # an additive mask the program builds itself
                m = torch.zeros_like(self.mask, dtype=torch.float32).masked_fill(self.mask, float("-inf"))
            return self.mha(x, x, x, attn_mask=m, need_weights=False)[0]

    torch.manual_seed(5)
    m, x = Mha().eval(), torch.randn(1, 7, 16)
    cm = mc.compile(m, "host", example_inputs=(x,))
    assert [n.op for n in cm.graph.nodes].count("attention") == 1
    want = m(x).detach().numpy()
    assert_close(cm.reference([x.numpy()])[0], want)
    r = cm.deploy(tmp_path / "p", inputs=x.numpy())
    assert r.verified
    assert_close(r.outputs[cm.graph.outputs[0]], want)


def test_mask_ops_fold_on_constants_and_shapes_and_are_refused_on_values():
    class Fill(torch.nn.Module):          # ones_like reads only x's shape: it folds
        def forward(self, x):
            return torch.ones_like(x) + x

    x = torch.randn(1, 4)
    assert_close(mc.compile(Fill(), "host", example_inputs=(x,)).reference([x.numpy()])[0], (x + 1).numpy())

    class Equal(torch.nn.Module):         # eq reads x's values: refused, named
        def forward(self, x):
            return torch.where(torch.eq(x, 0.5), x, 2 * x)

    with pytest.raises(UnsupportedOpError, match="aten.eq.Scalar of a run-time tensor"):
        mc.compile(Equal(), "host", example_inputs=(torch.randn(4, 4),))


def test_a_module_without_example_inputs_is_a_clear_error():
    with pytest.raises(UserError, match="example inputs"):
        mc.compile(torch.nn.ReLU(), "host")


def test_unsupported_aten_ops_are_named_all_at_once(tmp_path):
    class Odd(torch.nn.Module):
        def forward(self, x):
            return torch.cumsum(torch.sin(x), dim=1)

    with pytest.raises(UnsupportedOpError, match=r"2 ATen op\(s\).*aten\.cumsum\.default, aten\.sin\.default"):
        mc.compile(Odd(), "host", example_inputs=(torch.randn(1, 4),))
    program = torch.export.export(Odd(), (torch.randn(1, 4),))
    torch.export.save(program, tmp_path / "odd.pt2")
    p = subprocess.run([sys.executable, "-m", "microcompile", "inspect", str(tmp_path / "odd.pt2")],
                       capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "aten.cumsum.default" in p.stdout and "UNSUPPORTED" in p.stdout


def test_the_cli_deploys_a_pt2_file(tmp_path):
    path, d = fixture("kws_transformer")
    np.save(tmp_path / "x.npy", d["x"])
    p = subprocess.run([sys.executable, "-m", "microcompile", "deploy", str(path), "--board", "host",
                        "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy"),
                        "-o", str(tmp_path / "p")], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert_close(np.load(tmp_path / "y.npy"), d["y"])


def test_a_pt2_that_holds_a_pickle_is_refused_before_torch_reads_it(tmp_path):
    """torch.export.load unpickles opaque constants with plain pickle: such an archive never
    reaches it, and every torch.load it makes is weights-only."""
    path, _ = fixture("kws_transformer")
    hostile = tmp_path / "hostile.pt2"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(hostile, "w") as dst:
        for item in src.infolist():
            dst.writestr(item, src.read(item.filename))
        root = src.namelist()[0].split("/")[0]
        dst.writestr(f"{root}/data/constants/opaque_obj_0", b"cos\nsystem\n(S'touch pwned'\ntR.")
    with pytest.raises(ModelFormatError, match="pickled Python object"):
        mc.compile(hostile, "host")
    assert not Path("pwned").exists()


def test_a_pt2_whose_tensors_are_pickles_of_code_is_refused(tmp_path):
    """An old-style archive whose state dict is a pickle that would call os.system: the forced
    weights-only load refuses it, with exit 2 and no traceback."""
    payload = tmp_path / "payload.pkl"
    payload.write_bytes(b"cos\nsystem\n(S'touch " + str(tmp_path / "pwned").encode() + b"'\ntR.")
    hostile = tmp_path / "old.pt2"
    path, _ = fixture("kws_transformer")
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(hostile, "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename.endswith("/data/weights/weight_0"):
                continue
            dst.writestr(item, data)
        root = src.namelist()[0].split("/")[0]
        dst.writestr(f"{root}/serialized_exported_program.json", b"{}")
        dst.writestr(f"{root}/serialized_state_dict.pt", payload.read_bytes())
        dst.writestr(f"{root}/serialized_constants.pt", payload.read_bytes())
        dst.writestr(f"{root}/serialized_example_inputs.pt", payload.read_bytes())
        dst.writestr(f"{root}/version", b"8.0")
    p = subprocess.run([sys.executable, "-m", "microcompile", "inspect", str(hostile)], capture_output=True, text=True)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert not (tmp_path / "pwned").exists()


def test_a_pt2_that_unpacks_to_gigabytes_is_refused_before_torch_reads_it(tmp_path):
    bomb = tmp_path / "bomb.pt2"
    with zipfile.ZipFile(bomb, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("m/archive_format", b"pt2")
        with z.open("m/data/weights/weight_0", "w", force_zip64=True) as f:
            chunk = bytes(1 << 24)
            for _ in range(80):          # 1.25 GiB of zeros, a few MB on disk
                f.write(chunk)
    assert bomb.stat().st_size < 8 << 20
    with pytest.raises(ModelFormatError, match="unpacks to"):
        mc.compile(bomb, "host")


def test_a_pt2_that_is_not_a_zip_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.pt2"
    bad.write_bytes(b"not a zip at all")
    p = subprocess.run([sys.executable, "-m", "microcompile", "inspect", str(bad)], capture_output=True, text=True)
    assert p.returncode == 2 and "not a zip archive" in p.stderr and "Traceback" not in p.stderr


def test_without_torch_a_pt2_is_a_clear_error(tmp_path):
    path, _ = fixture("kws_transformer")
    code = ("import sys; sys.modules['torch'] = None\n"
            "from microcompile.cli import main\n"
            f"sys.exit(main(['inspect', {str(path)!r}]))")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert p.returncode == 2 and "needs torch" in p.stderr and "microcompile[torch]" in p.stderr, p.stderr


class BasicBlock(torch.nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        nn = torch.nn
        self.c1, self.b1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
        self.c2, self.b2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
        self.down = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                     if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x):
        return torch.relu(self.b2(self.c2(torch.relu(self.b1(self.c1(x))))) + self.down(x))


class ResNet18(torch.nn.Module):
    """He et al. 2015, the 18-layer network (basic blocks 2-2-2-2), 10 classes."""

    def __init__(self, classes: int = 10):
        super().__init__()
        nn = torch.nn
        self.stem = nn.Sequential(nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
                                  nn.MaxPool2d(3, 2, 1))
        widths, blocks, cin = (64, 128, 256, 512), [], 64
        for i, w in enumerate(widths):
            blocks += [BasicBlock(cin, w, 1 if i == 0 else 2), BasicBlock(w, w, 1)]
            cin = w
        self.blocks = nn.Sequential(*blocks)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1), 1))


@pytest.mark.heavy
def test_resnet18_at_64x64_deploys_on_the_host_and_equals_torch(tmp_path):
    torch.manual_seed(3)
    m = ResNet18()
    m.train()
    with torch.no_grad():
        for _ in range(3):
            m(torch.randn(4, 3, 64, 64))
    m.eval()
    x = torch.randn(1, 3, 64, 64)
    with torch.no_grad():
        want = m(x).numpy()
    torch.export.save(torch.export.export(m, (x,)), tmp_path / "resnet18.pt2")
    cm = mc.compile(tmp_path / "resnet18.pt2", "host")
    result = cm.deploy(tmp_path / "p", inputs=x.numpy())
    assert result.verified
    assert_close(result.outputs[cm.graph.outputs[0]], want)
