"""Patch stages (ir/ops_patch.py, lower/patch.py): a chain run band by band equals the chain
run whole, over random chains (odd sizes, strides 2, SAME and VALID padding, dilation, depth
multiplier 2, pools, ReLU) and band heights: int8 byte for byte, float32 within 1e-5 of the
largest output. In C on the host, with the output written over the input at the planner's
shift, and on the Cortex-M4 and M55 twins against LiteRT (one firmware per board)."""

from __future__ import annotations

import numpy as np
import pytest

from support.c_harness import run_on_host
from support.inplace_check import check_in_place
from support.patch_chains import bands, chain, inputs, whole_chain
from support.qemu_cases import assert_matches_litert, merge_graphs, merged_inputs
from microcompile import api
from microcompile.frontend.tflite.writer import write_tflite
from microcompile.ir.compare import compare
from microcompile.ir.ops_patch import vertical
from microcompile.lower import lower_node
from microcompile.reference import interp
from microcompile.schedule import default_schedule
from microcompile.target import load_board
from microcompile.transform.patch_stage import StageSpec, chains, make_stage

SEEDS = range(12)
CASES = [(chain(s, int8=s % 3 != 2), 1 + s % 3) for s in SEEDS]


def _check(got, want, where: str) -> None:
    c = compare(np.asarray(got).reshape(want.shape), want)
    assert c.equal, f"{where}: {c}"


def test_every_row_is_made_once_and_read_from_its_window():
    """The schedule: each op writes the rows of its output at most once, bands in order; each
    band reads rows of its input that are in the window (made, not yet dropped) and pads only
    past the image border."""
    for g, rows in CASES:
        body = whole_chain(g, rows).nodes[0].attrs["body"]
        k = len(body.nodes)
        for j in range(k):
            made = [r for b in body.bands for r in range(*b.out[j])]
            # in order, once each; all of the stage's output, and of a tensor inside it the rows
            # the next op reads (a stride may leave the last rows unread: they are not made)
            assert made == list(range(len(made))), (g.name, j)
            assert len(made) == body.height(j + 1) if j == k - 1 else len(made) <= body.height(j + 1)
        done = [0] * (k + 1)
        for b in body.bands:
            for j in range(k):
                (n0, n1), (o0, o1) = b.need[j], b.out[j]
                if o1 <= o0:
                    continue
                kh, s, d, top = vertical(body.graph, body.nodes[j])
                assert n0 - b.pads[j][0] == o0 * s - top and n1 + b.pads[j][1] == (o1 - 1) * s - top + (kh - 1) * d + 1
                assert b.pads[j][0] == 0 or n0 == 0
                assert b.pads[j][1] == 0 or n1 == body.height(j)
                if j:
                    made = max(done[j], b.out[j - 1][1])       # rows of tensor j made by the band's end
                    assert b.start[j - 1] <= n0 and n1 <= made, (g.name, j, b)
            for j in range(k):
                done[j + 1] = max(done[j + 1], b.out[j][1])


def test_the_host_c_equals_the_chain_run_whole(tmp_path):
    staged = [whole_chain(g, rows) for g, rows in CASES]
    results = run_on_host(staged, tmp_path)
    for (g, rows), (out, case) in zip(CASES, results):
        want = interp.run(g, case.inputs)[g.outputs[0]]
        _check(out, want, f"{g.name} in bands of {rows}")


def test_the_output_written_over_the_input_is_exact():
    """The planner may put the stage's output write_shift bytes above its input (below when
    negative): run the kernel with one buffer for both and compare."""
    target = load_board("mps2-an386").target
    for k, (g, rows) in enumerate(CASES):
        staged = whole_chain(g, rows)
        assert staged.nodes[0].attrs["body"].write_shift() is not None
        check_in_place(staged, target, k)


def test_a_constant_that_differs_by_row_ends_the_chain(tmp_path):
    """An elementwise op with a whole [1,H,W,C] constant (a band would read its first rows) is
    no part of a stage; one with a constant per channel is, and stays exact."""
    from support.multi_op_models import _Model

    for shape, joins in (((1, 9, 5, 3), False), ((1, 1, 1, 3), True)):
        m = _Model("const_rows", 11)
        x = m.conv(m.input("x", (1, 9, 5, 2)), 3, 3, "conv")
        c = m.const("c", np.random.default_rng(1).normal(0, 1, shape).astype(np.float32))
        g = m.graph([m.op("add", (x, c), "add")])
        assert (len(chains(g)) == 1) == joins, shape
        if joins:
            [(out, case)] = run_on_host([make_stage(g, StageSpec("conv", "add", 9))], tmp_path)
            _check(out, interp.run(g, case.inputs)["add"], "conv + add per channel in 9 bands")


def test_a_stage_is_only_a_chain():
    g, _ = CASES[0]
    with pytest.raises(ValueError, match="is not a chain"):
        make_stage(g, StageSpec(g.nodes[-1].name, g.nodes[0].name, 1))
    with pytest.raises(ValueError, match="bands"):
        make_stage(g, StageSpec(g.nodes[0].name, g.nodes[-1].name, 10 ** 6))
    assert [n.name for n in chains(g)[0]] == [n.name for n in g.nodes]


def test_the_stage_lowers_to_runs_of_bands_with_shared_scratch():
    """Bands that do the same share one loop; the parts' scratch shares one region; the
    windows hold a few rows, not the tensors."""
    g, _ = CASES[0]
    staged = whole_chain(g, 1)
    node = staged.nodes[0]
    body = node.attrs["body"]
    f = lower_node(staged, node, load_board("mps2-an386").target)
    runs = f.attrs["row_parts"].runs
    assert sum(r.count for r in runs) == len(body.bands) and len(runs) < len(body.bands)
    inner = sum(body.graph.tensors[body.tensor(t)].nbytes for t in range(1, len(body.nodes)))
    assert body.window_bytes() < inner
    # the parts run one after another: their scratch shares one region after the windows
    scheduled = default_schedule(f, load_board("mps2-an386").target)[0]
    parts = [b for b in scheduled.buffers if b.scope == "scratch" and not b.name.startswith("win_")]
    assert len(scheduled.attrs["scratch_union"]) >= 2 and parts
    assert scheduled.scratch_bytes < body.window_bytes() + sum(-(-b.nbytes // 16) * 16 for b in parts)


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps3-an547"])
def test_the_int8_stages_on_cortex_m_equal_litert(tmp_path, board):
    """Each chain staged (its own band height), compiled for the twin with the DSP or Helium
    kernels, against LiteRT BUILTIN_REF on the chain as TFLite has it."""
    graphs = [g for g, _ in CASES if g.tensors[g.inputs[0]].dtype == "int8"][:6]
    merged = merge_graphs(graphs, "patch_chains")
    staged = merged
    for k, g in enumerate(graphs):
        staged = make_stage(staged, StageSpec(f"g{k}.{g.nodes[0].name}", f"g{k}.{g.nodes[-1].name}",
                                              bands(g, 1 + k % 3)))
    assert sum(n.op == "patch_stage" for n in staged.nodes) == len(graphs)
    ins = merged_inputs([inputs(g, k) for k, g in enumerate(graphs)])
    model = tmp_path / "chains.tflite"
    model.write_bytes(write_tflite(merged))
    np.savez(tmp_path / "inputs.npz", **ins)
    cm = api.compile(staged, board, options=api.CompileOptions(patch="off"))
    result = cm.deploy(tmp_path / "project", inputs=tmp_path / "inputs.npz", link=api.Link(emulate=True))
    assert result.report["verified"]
    assert_matches_litert(model, ins, result.outputs, f"staged chains on {board}")
    assert (tmp_path / "project" / "model" / "model.c").read_text().count(", op patch_stage") == len(graphs)
