"""Weights that fit the board: int16 weights (and ADD tables) are a per-kernel choice against
the flash, fastest first while they fit (schedule/widening.py), and --flash-budget overrides
the board's flash.

  * the choice itself (pure): order by instructions saved per extra byte, stop at the budget;
  * with no flash to spare every kernel keeps the model's int8 weights, and the weights are no
    larger than the model's own tensors plus biases and requantization constants;
  * on the mps2-an386 twin, a budget that lets only some kernels widen gives a bit-exact
    firmware that fits the budget, and the report names the widened kernels;
  * widening never raises the arena: a conv whose int16 im2col columns would lift its step
    above the int8 plan's peak keeps int8 weights;
  * a budget that is not a number of bytes is a user error (exit 2).
"""

import json
import subprocess
import sys

import pytest

from support import flows
from microcompile.frontend import load_model
from microcompile.ir import ops
from microcompile.project.mapfile import section_sizes
from microcompile.schedule.widening import Candidate, choose_wide
from tests.conftest import model_path
from support.qemu_cases import assert_matches_litert


def test_widening_never_raises_the_arena():
    # Single convolutions: the conv's step is the peak, and the wide variant's int16 columns
    # are larger than the int8 ones, so it may widen only where they fit under that peak.
    from support import op_cases
    from microcompile.compiler import schedule_and_plan
    from microcompile.target.board import load_board
    from microcompile.transform import pipeline

    board = load_board("mps2-an386")
    widened_somewhere = False
    for case in op_cases.cases("conv2d", "int8", 24, seed=1):
        g = pipeline.run(op_cases.build_graph(case))
        _, plan, _, widened, _, _ = schedule_and_plan(g, board)
        _, narrow_plan, _, none, _, _ = schedule_and_plan(g, board, flash_budget=1)
        assert not none
        assert plan.arena_bytes <= narrow_plan.arena_bytes, (case, sorted(widened))
        widened_somewhere |= bool(widened)
    assert widened_somewhere          # the rule leaves the cases where widening fits


def test_choice_is_fastest_first_within_the_budget():
    cands = [Candidate("fc", 1000, 100, 200), Candidate("conv", 9000, 100, 200), Candidate("dw", 2000, 10, 20),
             Candidate("same", 5, 50, 50), Candidate("tiny", 10, 1, 2)]
    assert choose_wide(cands, 0, None) == {"fc", "conv", "dw", "tiny"}   # no limit: all that cost flash
    fixed = 40
    narrow = fixed + 100 + 100 + 10 + 50 + 1
    assert choose_wide(cands, fixed, narrow) == set()                    # no room at all
    assert choose_wide(cands, fixed, narrow + 9) == {"tiny"}             # dw needs 10 more bytes, tiny 1
    assert choose_wide(cands, fixed, narrow + 10) == {"dw"}              # 200 instructions per byte
    assert choose_wide(cands, fixed, narrow + 110) == {"dw", "conv"}     # then conv, 90 per byte
    # fc (10 per byte, 100 bytes) no longer fits, tiny (10 per byte, 1 byte) still does
    assert choose_wide(cands, fixed, narrow + 111) == {"dw", "conv", "tiny"}
    assert choose_wide(cands, fixed, narrow + 211) == {"dw", "conv", "fc", "tiny"}


def _own_bytes(path) -> int:
    g = load_model(path)
    channels = sum(g.tensors[n.outputs[0]].shape[-1] for n in g.nodes if ops.get(n.op).quant == "weighted")
    return sum(t.nbytes for t in g.tensors.values() if t.is_const) + 8 * channels


def test_no_room_keeps_the_models_int8_weights():
    """ResNet-8: int8 convolutions (unpadded where padding would cost bytes) and ADDs without
    tables; benchmarks/memory.py checks all three int8 models."""
    path = model_path("pretrainedResnet_quant")
    narrow = flows.plan_model(path, "mps2-an386", flash_budget=1)
    assert not narrow.widened
    assert narrow.manifest["weights_bytes"] <= _own_bytes(path)
    roomy = flows.plan_model(path, "mps2-an386")
    assert roomy.widened and roomy.manifest["weights_bytes"] > narrow.manifest["weights_bytes"]


@pytest.mark.qemu
def test_partial_widening_is_exact_and_fits(tmp_path):
    path = model_path("kws_ref_model")
    budget = 64 * 1024
    result = flows.deploy(path, "mps2-an386", tmp_path / "kws", emulate=True, flash_budget=budget,
                           progress=lambda s: None)
    r = result.report
    # exact against LiteRT, not only against our interpreter (r["verified"])
    assert_matches_litert(path, result.inputs, result.outputs, "kws with partial widening on mps2-an386")
    assert r["verified"]
    assert r["flash_bytes"] <= budget
    assert 0 < len(r["widened_kernels"]) < 9 and r["widened_bytes"] > 0
    assert r["flash_weights_bytes"] + r["flash_code_bytes"] + r["flash_other_bytes"] == r["flash_bytes"]
    # the widened ones are the convolutions, whose weights serve most pixels per byte
    assert all("conv2d" in k for k in r["widened_kernels"])
    # binary weights (.incbin of model_weights.bin): still one named symbol per constant, of its
    # size, in the linker's map, and together the weight flash the report gives
    constants = json.loads((tmp_path / "kws" / "manifest.json").read_text())["constants"]
    sizes = section_sizes(tmp_path / "kws" / "firmware.map")
    assert constants and all(sizes.get(f".rodata.{c['symbol']}") == c["bytes"] for c in constants), \
        [(c, sizes.get(f".rodata.{c['symbol']}")) for c in constants]
    # the report's figure is the linked span: the symbols plus their alignment padding only
    assert 0 <= r["flash_weights_bytes"] - sum(c["bytes"] for c in constants) < 4 * len(constants)


def test_flash_budget_must_be_bytes(tmp_path):
    p = subprocess.run([sys.executable, "-m", "microcompile", "deploy", str(model_path("ad01_int8")), "--board=stm32",
                        "--flash-budget", "lots", "-o", str(tmp_path / "p")], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 2 and "Traceback" not in p.stderr
    assert "--flash-budget 'lots' is not a number of bytes" in p.stderr
