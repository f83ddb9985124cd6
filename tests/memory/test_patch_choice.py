"""--patch (compiler/patches.py): auto takes a stage only where the arena shrinks, the user's
stage is refused with exit 2 when it is not a chain; and the planner's in-place rules
(memory/plan.py): the first kernel may write over the graph input, and a plan never uses a
rule that makes its arena larger than the same planners without it."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.cli_run import run_cli_inprocess
from support.multi_op_models import MODELS
from support.patch_chains import chain
from microcompile.compiler.compile import plan_model
from microcompile.compiler.options import CompileOptions
from microcompile.compiler.patches import candidates, parse_patch
from microcompile.errors import UserError
from microcompile.report.memory import format_memory
from microcompile.memory import aliases, best_order, concat_slices, overlap_rules, plan_memory
from microcompile.memory.liveness import analyze, valid_overlaps
from microcompile.memory.plan import best_offsets
from microcompile.memory.planner import check_no_overlap
from microcompile.compiler.compile import read_model
from microcompile.target import load_board
from microcompile.transform import pipeline
from microcompile.transform.patch_stage import StageSpec

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "mobilenets"
V2 = FIXTURES / "mobilenet_v2_035_96_int8.tflite"
BOARD = load_board("mps2-an386")


@pytest.fixture(scope="module")
def v2_auto():
    return plan_model(V2, BOARD)


def test_auto_takes_a_stage_that_more_than_halves_mobilenet_v2s_arena(v2_auto):
    cm = v2_auto
    choice = cm.patch
    assert choice.spec is not None and choice.mode == "auto"
    assert sum(n.op == "patch_stage" for n in cm.graph.nodes) == 1
    assert cm.plan.arena_bytes == choice.arena_with and 2 * choice.arena_with <= choice.arena_without
    off = plan_model(V2, BOARD, CompileOptions(patch="off"))
    assert off.plan.arena_bytes == choice.arena_without and off.patch.spec is None
    assert not any(n.op == "patch_stage" for n in off.graph.nodes)


def test_auto_leaves_a_model_without_large_maps_alone():
    g = pipeline.run(MODELS["dscnn_int8"]())
    assert candidates(g) == []
    cm = plan_model(g, BOARD)
    assert cm.patch.spec is None and not any(n.op == "patch_stage" for n in cm.graph.nodes)


def test_the_users_stage_is_taken_as_written():
    cm = plan_model(V2, BOARD, CompileOptions(patch=parse_patch("7x1@depthwise_conv_2d_6")))
    body = next(n for n in cm.graph.nodes if n.op == "patch_stage").attrs["body"]
    # FIRST is the start of the chain; 7 bands of 24 rows are 6 bands of 4 rows
    assert cm.patch.spec == StageSpec("conv_2d_1", "depthwise_conv_2d_6", 6)
    assert (body.nodes[0].name, body.nodes[-1].name, body.rows, len(body.bands)) == \
        ("conv_2d_1", "depthwise_conv_2d_6", 4, 6)
    assert str(cm.patch.spec) == "6x1@conv_2d_1:depthwise_conv_2d_6"


@pytest.mark.parametrize("text", ["", "3", "0x1@conv", "x1@conv", "3x2@conv", "3x1@a:b:c", "all"])
def test_a_malformed_patch_is_a_user_error(text):
    with pytest.raises(UserError, match="--patch"):
        parse_patch(text)


@pytest.mark.parametrize("patch, says", [
    ("4x1@nope", "are not one chain"),
    ("4x1@conv_2d_8:conv_2d_7", "are not one chain"),
    ("99x1@conv_2d_1:depthwise_conv_2d_6", "99 bands"),
    ("2x3@conv_2d_1", "bands of full rows"),
])
def test_the_cli_refuses_a_stage_that_is_not_one_with_exit_2(patch, says):
    r = run_cli_inprocess("inspect", V2, "--memory", "--patch", patch)
    assert r.returncode == 2 and says in r.stderr and "hint:" in r.stderr, r.stderr


def test_inspect_memory_names_the_stage_and_the_arena_without_it(v2_auto):
    text = format_memory(v2_auto)          # what `inspect --memory` prints under the layer table
    line = next(ln for ln in text.splitlines() if ln.startswith("patch stage (auto): conv_2d_1.."))
    assert "bands of 1 output row" in line and "windows" in line
    assert "bytes with the stage" in text and " without (" in text
    off = run_cli_inprocess("inspect", V2, "--memory", "--patch", "off")
    assert "patch stage: none (--patch off)" in off.stdout


def _rules_and_reqs(g):
    slices = {t: a for t, (_, a) in concat_slices(g).items()}
    alias = aliases(g, slices)
    rules = overlap_rules(g, alias)
    g = g.replace(nodes=best_order(g, {}, rules, alias))
    reqs = analyze(g, {}, alias)
    return g, rules, reqs, slices


def test_the_first_kernel_may_write_over_the_graph_input():
    """A graph input is in the arena before step 0: a stride-2 chain's first convolution may
    write its output over it (it could not before: the input was born at the same step)."""
    g = pipeline.run(chain(3, int8=True))
    g, rules, reqs, slices = _rules_and_reqs(g)
    x = g.inputs[0]
    assert next(r for r in reqs if r.name == x).given
    assert any(o.src == x for o in valid_overlaps(reqs, rules))


def test_fewer_rules_when_a_chain_of_them_drifts():
    """MobileNetV1 0.25: every in-place rule taken, its window kernels' chain drifts down the
    arena; the plan with the rules that pay is a third smaller (kernels' scratch left out
    here), uses only those, and passes the overlap check under every rule."""
    g = pipeline.run(read_model(FIXTURES / "mobilenet_v1_025_96_int8.tflite"))
    g, rules, reqs, slices = _rules_and_reqs(g)
    plan = plan_memory(g, overlaps=rules, slices=slices)
    every = best_offsets(reqs, tuple(valid_overlaps(reqs, rules)))[0]
    assert plan.arena_bytes < 0.7 * every, (every, plan.arena_bytes)
    assert plan.used is not None and set(plan.used) < set(plan.overlaps)
    check_no_overlap(list(plan.buffers), plan.offsets, list(plan.overlaps))
    assert plan.lower_bound <= plan.arena_bytes
    # the report lists the rules the plan uses, not every legal one
    assert len(plan.to_json()["in_place"]) == len(plan.used)
