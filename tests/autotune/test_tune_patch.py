"""The patch stage as a searched choice (autotune/patch_search.py, issue 27): `tune` with --patch
auto measures the model without a stage and with the best-ranked stages on the twin, writes one
record per choice with its count and arena, picks the smallest arena within PATCH_BUDGET of the
count without a stage, tunes the kernels of that graph, and `--records` applies the choice where
--patch is auto (and not where the user named one)."""

from __future__ import annotations

import pytest

from support.multi_op_models import _Model, quantize_graph
from microcompile.autotune import read_records, select
from microcompile.autotune.records import environment, pick_patch
from microcompile.compiler.compile import plan_model
from microcompile.compiler.options import CompileOptions
from microcompile.compiler.patches import PATCH_BUDGET, patch_key, patch_trace, ranked
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.target import load_board
from microcompile.transform import pipeline
from microcompile.transform.patch_stage import StageSpec

BOARD = load_board("mps2-an386")


def _expanding(int8: bool = True):
    """A 32x24 image widened to 24 channels (18 KiB), then a stride-2 depthwise and a 1x1: the wide map
    sets the arena, which a stage over the first two layers shrinks."""
    m = _Model("expanding", 11)
    x = m.input("x", (1, 32, 24, 3))
    x = m.conv(x, 24, 3, "wide", 1, 1, "SAME", "RELU")
    x = m.depthwise(x, 3, "down", 2, 1, 1, "SAME", "RELU")
    x = m.conv(x, 8, 1, "narrow", 1, 1, "VALID", "NONE")
    g = m.graph([x])
    return quantize_graph(g, g.name) if int8 else g


def _rec(choice: str, count: int, arena: int, unit: str = "instructions", status: str = "ok") -> dict:
    spec = "off" if choice == "off" else StageSpec("a", "b", int(choice.split("x")[0]))
    return {"workload": "patch:x", "family": "patch", "config": {"patch": choice}, "count": count, "arena": arena,
            "unit": unit, "status": status, "trace": patch_trace(spec).to_json()}


def test_the_pick_is_the_smallest_arena_within_the_budget():
    off = _rec("off", 1000, 9000)
    cheap = _rec("4x1@a:b", 1000 + int(1000 * PATCH_BUDGET), 5000)          # at the limit: taken
    smaller = _rec("8x1@a:b", 1000 + int(1000 * PATCH_BUDGET) + 1, 4000)   # over it: not
    assert pick_patch([off, cheap, smaller])["config"]["patch"] == "4x1@a:b"
    assert pick_patch([off, smaller]) is off
    assert pick_patch([cheap, smaller]) is None                            # no "off" measured
    assert pick_patch([_rec("off", 1, 9000, status="failed"), cheap]) is None
    # a unit measured on a real board (cycles) decides over QEMU's instructions
    cyc = [_rec("off", 500, 9000, "cycles"), _rec("4x1@a:b", 900, 5000, "cycles")]
    assert pick_patch([off, cheap, *cyc])["config"]["patch"] == "off"


def test_a_recorded_choice_replaces_auto_and_only_auto():
    g = pipeline.run(_expanding())
    specs = [spec for _, spec, _, _ in ranked(g)]
    assert len(specs) >= 2, specs
    auto = plan_model(_expanding(), BOARD)
    assert auto.patch.spec is not None and auto.patch.mode == "auto"
    other = next(s for s in specs if str(s) != str(auto.patch.spec))
    key = patch_key(g)
    tuned = plan_model(_expanding(), BOARD, CompileOptions(tuned={key: patch_trace(other)}))
    assert str(tuned.patch.spec) == str(other) and tuned.patch.mode == f"{other} (tuned)"
    off = plan_model(_expanding(), BOARD, CompileOptions(tuned={key: patch_trace("off")}))
    assert off.patch.spec is None and not any(n.op == "patch_stage" for n in off.graph.nodes)
    # the user's --patch wins over a record, and a record of another graph is not applied
    user = plan_model(_expanding(), BOARD, CompileOptions(patch="off", tuned={key: patch_trace(other)}))
    assert user.patch.spec is None
    foreign = plan_model(_expanding(), BOARD, CompileOptions(tuned={"patch:0123456789abcdef": patch_trace("off")}))
    assert str(foreign.patch.spec) == str(auto.patch.spec)


@pytest.mark.qemu
def test_tune_measures_the_choices_and_records_apply_the_pick(tmp_path):
    import microcompile as mc

    model = tmp_path / "expanding.tflite"
    model.write_bytes(write_tflite(_expanding()))
    records = tmp_path / "tune.jsonl"
    mc.tune(mc.compile(model, "mps2-an386"), trials=2, records=records)
    recs, _ = read_records(records)
    patch = [r for r in recs if r["family"] == "patch"]
    choices = {r["config"]["patch"] for r in patch}
    assert "off" in choices and len(choices) >= 2, choices
    assert all(r["status"] == "ok" and r["count"] > 0 and r["arena"] > 0 for r in patch), patch
    best = pick_patch(patch)
    assert best is not None
    # the stage's parts are not a knob space of their own: no kernel record replays on it
    assert not any(r["family"] != "patch" and "patch_stage" in r["workload"] for r in recs)
    sel = select(recs, environment(BOARD))
    assert sel.best[best["workload"]]["config"] == best["config"]
    compiled = mc.compile(model, "mps2-an386", records=records)
    report = compiled.deploy(tmp_path / "project", emulate=True).report
    assert report["verified"]
    want = best["config"]["patch"]
    got = compiled.artifact.compiled.patch
    assert got.mode == ("off (tuned)" if want == "off" else f"{want} (tuned)"), got
    assert report["arena_bytes"] == best["arena"]
