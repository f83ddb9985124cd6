"""Whole MLPerf Tiny models, deployed end to end, against TFLite's reference kernels.

Each model runs on 3 random inputs on the host (gcc), on mps2-an386 (QEMU) and on the
stm32 board's QEMU twin. int8 outputs must be byte-equal to LiteRT BUILTIN_REF; float32
within 1e-5 relative (microcompile.ir.compare). One project per (model, board): later
inputs only recompile test_input.c.
"""

import json
import subprocess
import sys

import numpy as np
import pytest

from support import flows
from microcompile.errors import BoardError
from microcompile.ir.compare import compare
from tests.conftest import ALL_MODELS, model_path
from tests.litert_ref import make_interpreter, run_reference

# Float models draw inputs from the range their int8 twin's input quantization declares.
INT8_TWIN = {"kws_ref_model_float32": "kws_ref_model", "pretrainedResnet": "pretrainedResnet_quant",
             "ad01_fp32": "ad01_int8"}
# The NUCLEO-F446RE has 512 KiB flash and 128 KiB SRAM. ad01_fp32 holds 1 MiB of float
# weights; float ResNet-8 needs three live 32x32x16 float maps (64 KiB each) at a residual.
TOO_BIG = {("ad01_fp32", "stm32"): r"flash.*512 KiB", ("pretrainedResnet", "stm32"): r"RAM|128 KiB"}

BOARDS = [pytest.param("host", id="host"),
          pytest.param("mps2-an386", id="mps2-an386", marks=pytest.mark.qemu),
          pytest.param("stm32", id="stm32-twin", marks=pytest.mark.qemu)]


def random_inputs(model: str, count: int, seed: int = 1234) -> list[dict[str, np.ndarray]]:
    rng = np.random.default_rng(seed)
    details = make_interpreter(model_path(model).read_bytes()).get_input_details()
    twin = make_interpreter(model_path(INT8_TWIN[model]).read_bytes()).get_input_details() if model in INT8_TWIN else None
    cases = []
    for _ in range(count):
        case = {}
        for k, d in enumerate(details):
            q = rng.integers(-128, 128, size=d["shape"]).astype(np.int8)
            if twin is None:
                case[d["name"]] = q
            else:
                scale, zp = twin[k]["quantization"]
                case[d["name"]] = ((q.astype(np.float32) - zp) * scale).astype(np.float32)
        cases.append(case)
    return cases


@pytest.mark.heavy
@pytest.mark.parametrize("board", BOARDS)
@pytest.mark.parametrize("model", ALL_MODELS)
def test_model_matches_tflite_reference(model, board, tmp_path):
    path = model_path(model)
    project_dir = tmp_path / "project"
    if (model, board) in TOO_BIG:
        with pytest.raises(BoardError, match=TOO_BIG[model, board]):
            flows.deploy(path, board, project_dir, emulate=True, progress=lambda s: None)
        return
    for k, inputs in enumerate(random_inputs(model, 3)):
        (name, x), = inputs.items()
        np.save(tmp_path / f"x{k}.npy", x)
        result = flows.deploy(path, board, project_dir, emulate=board != "host",
                               input_path=tmp_path / f"x{k}.npy", progress=lambda s: None)
        reference = run_reference(path.read_bytes(), inputs)
        for out_name, ref in reference.items():
            dev = result.outputs[out_name]
            if ref.dtype == np.int8:
                assert dev.tobytes() == ref.tobytes(), f"{model} on {board}, input {k}: {out_name} differs from LiteRT"
            else:
                c = compare(dev, ref)
                assert c.equal, f"{model} on {board}, input {k}: {out_name} {c}"
        assert result.report["verified"], result.report["outputs"]
        if board != "host":
            assert result.report["instructions"] > 0


@pytest.mark.qemu
def test_cli_deploy_writes_output_and_report(tmp_path):
    path = model_path("kws_ref_model")
    x = random_inputs("kws_ref_model", 1, seed=7)[0]
    np.save(tmp_path / "x.npy", next(iter(x.values())))
    cmd = [sys.executable, "-m", "microcompile", "deploy", str(path), "--board=mps2-an386", "--emulate",
           "--input", str(tmp_path / "x.npy"), "--output", str(tmp_path / "y.npy"),
           "--report", str(tmp_path / "report.json"), "-o", str(tmp_path / "kws")]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "outputs match reference: yes" in p.stdout
    report = json.loads((tmp_path / "report.json").read_text())
    for key, kind in [("model", str), ("board", str), ("verified", bool), ("arena_bytes", int), ("flash_bytes", int),
                      ("ram_bytes", int), ("instructions", int), ("layers", list), ("arena_lower_bound_bytes", int),
                      ("flash_code_bytes", int), ("flash_weights_bytes", int), ("stack_bytes", int),
                      ("widened_kernels", list)]:
        assert isinstance(report[key], kind), key
    # The memory keys (docs/report.md): the arena never below its bound, flash split in two,
    # the weights as linked (mps2-an386 has room: every kernel that can widen did).
    assert report["arena_lower_bound_bytes"] <= report["arena_bytes"]
    assert report["flash_code_bytes"] + report["flash_weights_bytes"] + report["flash_other_bytes"] == report["flash_bytes"]
    assert report["flash_other_bytes"] >= 490          # the embedded 49x10 int8 input at least
    assert report["flash_weights_bytes"] >= report["weights_bytes"] - 64 and report["widened_kernels"]
    assert 200 < report["stack_bytes"] < 4096
    assert report["model"] == "kws_ref_model" and report["board"] == "mps2-an386" and report["verified"]
    assert sum(layer["macs"] for layer in report["layers"]) == 2_656_768
    assert all(set(layer) >= {"name", "op", "macs"} for layer in report["layers"])
    y = np.load(tmp_path / "y.npy")
    assert y.tobytes() == next(iter(run_reference(path.read_bytes(), x).values())).tobytes()
    # The project rebuilds with plain make, no microcompile involved.
    subprocess.run(["make", "-C", str(tmp_path / "kws"), "clean"], check=True, capture_output=True)
    m = subprocess.run(["make", "-C", str(tmp_path / "kws")], capture_output=True, text=True)
    assert m.returncode == 0, m.stdout + m.stderr
    assert (tmp_path / "kws" / "firmware.elf").is_file() and (tmp_path / "kws" / "firmware.hex").is_file()


def test_deploy_to_real_board_without_probe(tmp_path):
    """No probe attached: it builds, then says where the firmware is and how to flash or emulate."""
    path = model_path("ad01_int8")
    p = subprocess.run([sys.executable, "-m", "microcompile", "deploy", str(path), "--board=stm32",
                        "-o", str(tmp_path / "ad01")], capture_output=True, text=True, timeout=600)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    assert "firmware.elf" in p.stderr and "--emulate" in p.stderr
    assert (tmp_path / "ad01" / "firmware.elf").is_file()
