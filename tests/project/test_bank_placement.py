"""Multi-bank placement end to end (docs/memory.md, "Memory banks"): a model whose arena does
not fit the `ram` bank of a test board is split over it and the block RAM that QEMU's
mps2-an386 really maps at 0x01000000, deploys bit-exact on the twin, and is refused with the
banks' sizes when the block RAM is taken away; one bank that suffices changes nothing."""

import dataclasses

import pytest

import microcompile as mc
from microcompile.errors import BoardError, DoesNotFit
from microcompile.project.placement import placement
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.target import load_board
from support.multi_op_models import _Model, quantize_graph


def _graph():
    """Two 3x3 convolutions of one 32x32x8 input added: 17 KiB of arena at its peak (the input,
    one convolution's output and the other's, 8 KiB each, less what runs in place)."""
    m = _Model("banks_float32", seed=3)
    x = m.input("image", (1, 32, 32, 8))
    r = m.op("add", (m.conv(x, 8, 3, "a", act="RELU"), m.conv(x, 8, 3, "b")), "add")
    d = m.depthwise(r, 3, "down", stride=2, act="RELU6")
    f = m.op("reshape", (m.avgpool(d, 16, "pool"),), "flatten", shape=(1, 8))
    return quantize_graph(m.graph([m.fc(f, 4, "logits")]), "banks_int8")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    path = tmp_path_factory.mktemp("banks") / "banks_int8.tflite"
    path.write_bytes(write_tflite(_graph()))
    return path


def _an386(ram_kib: int | None = 20, block_ram: bool = True):
    """mps2-an386 with its SSRAM2/3 bank cut to `ram_kib` (a test board: the emulated machine
    has 4 MiB there) and with or without its 16 KiB block RAM."""
    board = load_board("mps2-an386")
    banks = tuple(dataclasses.replace(b, size=ram_kib * 1024) if b.name == "SSRAM23" and ram_kib else b
                  for b in board.mcu.banks if block_ram or b.name != "BLOCKRAM")
    return dataclasses.replace(board, mcu=dataclasses.replace(board.mcu, banks=banks))


def test_one_bank_that_suffices_changes_nothing(model, tmp_path):
    full = mc.compile(model, load_board("mps2-an386"))
    one = mc.compile(model, _an386(None, block_ram=False))
    pinned = mc.compile(model, _an386(), options=mc.CompileOptions(arena_region="SSRAM23"))
    for cm in (full, one, pinned):
        assert "arena_banks" not in cm.manifest and not cm.artifact.compiled.plan.banks
    assert full.manifest == one.manifest == pinned.manifest
    texts = [(cm.artifact.directory / "model.c").read_text() for cm in (full, one, pinned)]
    assert texts[0] == texts[1] == texts[2] and ".bss.mc_bank" not in texts[0]


def test_split_plan_puts_the_io_in_the_primary_arena(model):
    cm = mc.compile(model, _an386())
    plan = cm.artifact.compiled.plan
    assert plan.arena_bytes + 4096 + 2048 <= 20 * 1024 < plan.lower_bound + 4096
    assert cm.manifest["arena_banks"] == {"BLOCKRAM": plan.bank_bytes["BLOCKRAM"]} and plan.bank_bytes["BLOCKRAM"] > 0
    graph = cm.artifact.compiled.graph
    assert all(plan.bank(t) == "" for t in graph.inputs + graph.outputs)
    source = (cm.artifact.directory / "model.c").read_text()
    assert ('static uint8_t mc_arena_blockram[%d] __attribute__((section(".bss.mc_bank.BLOCKRAM"), aligned(16)));'
            % plan.bank_bytes["BLOCKRAM"]) in source
    assert "(mc_arena_blockram + " in source
    assert f"{plan.bank_bytes['BLOCKRAM']:,} in BLOCKRAM" in str(cm.memory_report())   # inspect --memory


@pytest.mark.qemu
def test_split_arena_deploys_bit_exact_on_the_twin(model, tmp_path):
    cm = mc.compile(model, _an386())
    result = cm.deploy(tmp_path / "p", link=mc.Link(emulate=True))
    assert result.report["verified"]                 # the twin's outputs equal the reference interpreter
    banks = {b["name"]: b for b in result.fit.banks}
    plan = cm.artifact.compiled.plan
    assert banks["BLOCKRAM"]["items"] == {"arena": plan.bank_bytes["BLOCKRAM"]}
    assert banks["SSRAM23"]["items"]["arena"] == plan.arena_bytes
    assert f"arena@BLOCKRAM {plan.bank_bytes['BLOCKRAM']:,}" in result.fit.format()
    report = result.report                          # --report
    assert report["arena_banks"] == {"BLOCKRAM": plan.bank_bytes["BLOCKRAM"]}
    assert report["arena_bytes"] == plan.arena_bytes
    assert report["fit"]["ram"]["arena@BLOCKRAM"] == plan.bank_bytes["BLOCKRAM"]
    linker = (tmp_path / "p" / "linker.ld").read_text()
    assert "*(.bss.mc_bank.BLOCKRAM)" in linker and "} > BLOCKRAM" in linker


def test_refused_without_the_second_bank(model, tmp_path):
    cm = mc.compile(model, _an386(block_ram=False))
    assert "arena_banks" not in cm.manifest
    with pytest.raises(DoesNotFit) as info:
        cm.build(tmp_path / "p", emulate=True)
    msg = str(info.value) + " " + str(info.value.hint)
    assert info.value.exit_code == 2
    assert "ram bank SSRAM23 needs" in msg and "mps2-an386 has 20 KiB" in msg
    assert "split over a board's RAM banks" in msg and "its one RAM bank is SSRAM23 20 KiB" in msg
    assert "a RAM bank the chip has that boards/mcus/mps2-an386.toml does not declare yet" in msg


def test_pin_keeps_one_arena_and_is_refused(model, tmp_path):
    cm = mc.compile(model, _an386(), options=mc.CompileOptions(arena_region="SSRAM23"))
    with pytest.raises(DoesNotFit, match="ram bank SSRAM23 needs"):
        cm.build(tmp_path / "p", emulate=True, options=mc.BuildOptions(arena_region="SSRAM23"))


def test_trace_builds_refuse_a_split_arena(model, tmp_path):
    cm = mc.compile(model, _an386())
    with pytest.raises(mc.UserError, match="split over banks SSRAM23, BLOCKRAM"):
        cm.build(tmp_path / "p", trace=True)


@pytest.mark.qemu
def test_agent_runs_a_split_arena_and_lists_only_primary_tensors(model, tmp_path):
    """The agent runs the model (inputs and outputs are in the primary arena); GET_TENSOR reads
    the primary arena only, so a tensor in another bank is not in its table."""
    cm = mc.compile(model, _an386())
    plan = cm.artifact.compiled.plan
    result = cm.deploy(tmp_path / "p", agent=True, link=mc.Link(emulate=True))
    assert result.report["verified"]
    agent = (tmp_path / "p" / "main.c").read_text()
    banked = [k for k in cm.manifest["kernels"] for o in k["outputs"] if o.get("bank")]
    assert banked and all(o["bank"] == "BLOCKRAM" and plan.bank(o["name"]) == "BLOCKRAM"
                          for k in banked for o in k["outputs"] if o.get("bank"))
    assert all(f'"{o["name"]}"' not in agent for k in banked for o in k["outputs"] if o.get("bank"))
    assert f'"{cm.manifest["outputs"][0]["name"]}"' in agent


def test_export_with_bsp_maps_the_banks(model, tmp_path):
    cm = mc.compile(model, _an386())
    cm.export(tmp_path / "lib", format="make", bsp=True, name="net")
    linker = (tmp_path / "lib" / "bsp" / "linker.ld").read_text()
    assert "*(.bss.mc_bank.BLOCKRAM)" in linker
    source = next((tmp_path / "lib").rglob("net.c")).read_text()
    assert '.bss.mc_bank.BLOCKRAM' in source and "(net_arena_blockram + " in source


def test_a_bank_arena_qemu_does_not_map_is_refused_under_emulation():
    board = load_board("netduinoplus2")
    assert placement(board, arena_banks=("CCM",)).arena_banks == ("CCM",)
    with pytest.raises(BoardError, match="does not emulate CCM"):
        placement(board, emulated=True, arena_banks=("CCM",))
    with pytest.raises(BoardError, match="has no bank 'DTCM'"):
        placement(board, arena_banks=("DTCM",))


def test_tightly_coupled_ram_takes_the_scratch_first(model, tmp_path):
    """nucleo-f746zg with its SRAM cut to 20 KiB (a test board): the split puts the kernels'
    scratch in the 64 KiB DTCM (fast = true) before any tensor, and the firmware links
    (no twin: built, never run)."""
    board = load_board("nucleo-f746zg")
    banks = tuple(dataclasses.replace(b, size=20 * 1024) if b.name == "SRAM" else b for b in board.mcu.banks)
    cm = mc.compile(model, dataclasses.replace(board, mcu=dataclasses.replace(board.mcu, banks=banks)))
    plan = cm.artifact.compiled.plan
    scratch = [b.name for b in plan.buffers if b.name.startswith("scratch:")]
    assert scratch and all(plan.bank(s) == "DTCM" for s in scratch)
    assert set(plan.bank_bytes) == {"DTCM"} and plan.bank_bytes["DTCM"] <= 64 * 1024
    fw = cm.build(tmp_path / "p")
    linker = (tmp_path / "p" / "linker.ld").read_text()
    assert ".arena_DTCM (NOLOAD)" in linker and "*(.bss.mc_bank.DTCM) . = ALIGN(4); } > DTCM" in linker
    banks = {b["name"]: b for b in fw.fit.banks}
    assert fw.fit.fits and banks["DTCM"]["items"] == {"arena": plan.bank_bytes["DTCM"]}
    assert banks["SRAM"]["items"]["arena"] == plan.arena_bytes
