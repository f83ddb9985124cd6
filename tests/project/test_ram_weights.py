"""--weights-in-ram (compiler/ram_weights.py): which kernels' constants mc_init copies from
flash to RAM, and the copy itself: bit-exact on the M4 twin with the copies in its second RAM
bank (the linker's .weights_ram_BLOCKRAM, the fit report's weights_ram@BLOCKRAM), and fewer
estimated cycles when the same run is priced with a flash that has wait states (the L4R5's)."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest

from support.cli_run import run_cli_inprocess
from support.multi_op_models import MODELS
import microcompile as mc
from microcompile.api import parse_weights_in_ram
from microcompile.compiler import ram_weights
from microcompile.compiler.compile import plan_model
from microcompile.compiler.options import CompileOptions
from microcompile.errors import UserError
from microcompile.target import load_board
from microcompile.target.cycles import memory_system

MODELS_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "models"
KWS = MODELS_DIR / "kws_ref_model.tflite"


def _kws():
    if not KWS.is_file():
        pytest.skip(f"models: {KWS} is absent (../shared/models)")
    return KWS


def test_auto_copies_nothing_where_flash_has_no_wait_states():
    cm = plan_model(MODELS["dscnn_int8"](), load_board("mps2-an386"), CompileOptions(weights_in_ram="auto"))
    assert cm.ram_weights.banks == {} and "no wait states" in cm.ram_weights.reason
    assert "ram_weights" not in cm.manifest


def test_auto_copies_the_hottest_kernels_first_where_flash_is_slow():
    """nucleo-l4r5zi: 5 wait states at 120 MHz; its 640 KiB of SRAM takes every kernel."""
    board = load_board("nucleo-l4r5zi")
    assert memory_system(board).flash_wait_states == 5
    cm = plan_model(_kws(), board, CompileOptions(weights_in_ram="auto"))
    with_consts = [n.name for n, f, _ in cm.kernels if ram_weights._const_bytes(f)]
    assert sorted(cm.ram_weights.banks) == sorted(with_consts)
    assert set(cm.ram_weights.banks.values()) == {""}        # the one RAM bank: the arena's
    assert cm.manifest["ram_weights"]["banks"][""] == cm.ram_weights.bytes


def test_a_byte_budget_takes_the_kernels_that_read_their_weights_most():
    board = load_board("mps2-an386")
    full = plan_model(_kws(), board)
    heat = {n.name: int(f.attrs.get("macs", 0)) / ram_weights._const_bytes(f)
            for n, f, _ in full.kernels if ram_weights._const_bytes(f)}
    cm = plan_model(_kws(), board, CompileOptions(weights_in_ram=16 * 1024))
    chosen = cm.ram_weights.banks
    assert chosen and cm.ram_weights.bytes <= 16 * 1024
    assert set(chosen.values()) == {"BLOCKRAM"}              # the bank besides the arena's first
    hottest = max(heat, key=heat.get)
    assert hottest in chosen
    # nothing left out fitted in what was left
    left = 16 * 1024 - cm.ram_weights.bytes
    skipped = [n for n in heat if n not in chosen and heat[n] > min(heat[c] for c in chosen)]
    assert all(ram_weights._const_bytes(f) > left for n, f, _ in full.kernels if n.name in skipped)


def test_the_arena_s_pinned_bank_and_unemulated_banks_are_respected():
    """--arena-region BLOCKRAM: the copies take only what the arena leaves of BLOCKRAM;
    netduinoplus2's CCM, which QEMU does not emulate, takes no copies; the RAM bank keeps the
    stack, the state and RAM_RESERVE."""
    an386 = load_board("mps2-an386")
    pinned = plan_model(_kws(), an386, CompileOptions(weights_in_ram=16 * 1024, arena_region="BLOCKRAM"))
    in_blockram = pinned.manifest["ram_weights"]["banks"].get("BLOCKRAM", 0)
    assert in_blockram + pinned.plan.arena_bytes <= 16 * 1024      # what the arena leaves there
    assert pinned.manifest["ram_weights"]["banks"].get("", 0) > 0  # the rest in the RAM bank
    netduino = load_board("netduinoplus2")
    assert "CCM" in netduino.emulator.unmapped
    cm = plan_model(_kws(), netduino, CompileOptions(weights_in_ram=4096))
    assert "CCM" not in cm.ram_weights.banks.values()
    room = dict(ram_weights._room(netduino, cm.plan, None))
    ram = netduino.mcu.ram
    assert room[""] == ram.size - cm.plan.arena_bytes - cm.plan.state_bytes - 4096 - ram_weights.RAM_RESERVE


def test_options_refuse_a_budget_that_is_not_bytes():
    for bad in ("16K", 0, -5, True, 1.5):
        with pytest.raises(UserError, match="weights_in_ram"):
            CompileOptions(weights_in_ram=bad)


def test_an_exported_library_copies_the_same_weights(tmp_path):
    cm = mc.compile(_kws(), "mps2-an386", options=mc.CompileOptions(weights_in_ram=16 * 1024))
    out = cm.export(tmp_path / "lib")
    sources = "".join(p.read_text() for p in (tmp_path / "lib").rglob("*.c") if "models" in p.parts)
    assert "load_weights" in sources and ".bss.mc_weights.BLOCKRAM" in sources
    assert out is not None


@pytest.mark.parametrize("text", ["fast", "12Q", "-1"])
def test_a_malformed_budget_is_refused_with_exit_2(text):
    with pytest.raises(UserError, match="--weights-in-ram"):
        parse_weights_in_ram(text)
    r = run_cli_inprocess("inspect", _kws(), "--memory", "--weights-in-ram", text)
    assert r.returncode == 2 and "--weights-in-ram" in r.stderr


@pytest.mark.qemu
def test_the_copies_are_exact_and_save_flash_cycles(tmp_path):
    """kws on the M4 twin with 16 KiB of its weights copied to BLOCKRAM: bit-exact, placed by
    the linker in the bank, and priced with the L4R5's flash (5 wait states) the run costs
    fewer estimated cycles than with every weight in flash."""
    from microcompile.deploy.estimate import run_estimated

    mem = memory_system(load_board("nucleo-l4r5zi"))
    cycles = {}
    for budget in ("off", 16 * 1024):
        cm = mc.compile(_kws(), "mps2-an386", options=mc.CompileOptions(weights_in_ram=budget))
        result = cm.deploy(tmp_path / str(budget), emulate=True)
        assert result.verified
        if budget != "off":
            report = result.report
            assert report["weights_in_ram_bytes"] == cm.manifest["ram_weights"]["banks"]["BLOCKRAM"] > 8192
            code = (tmp_path / str(budget) / "model" / "model.c").read_text()
            assert "__attribute__((section(\".bss.mc_weights.BLOCKRAM\")" in code
            # each chosen kernel reads its RAM copies; its flash constants only the copy reads
            copied = [r["symbol"] for r in cm.manifest["constants"] if f"{r['symbol']}_ram[" in code]
            assert copied
            for sym in copied:
                assert code.count(f"{sym}_ram") >= 3            # defined, copied, read by its kernel
                assert len(re.findall(rf"\b{sym}\b", code)) == 1  # the flash image: the copy only
        with tempfile.TemporaryDirectory() as tmp:
            built = cm.build(Path(tmp) / "p", emulate=True).built
            _, est = run_estimated(built.project_dir, built.board, len(built.compiled.kernels), mem, timeout=600)
        cycles[budget] = (est.cycles, est.parts.get("flash", 0), est.instructions)
    (off, off_flash, off_instr), (ram, ram_flash, ram_instr) = cycles["off"], cycles[16 * 1024]
    assert off_instr == ram_instr                      # the same code, the same run
    assert ram_flash < 0.8 * off_flash and ram < off, cycles
