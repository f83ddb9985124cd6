"""The tuner's findings folded into the default schedules (issue 10), under issue 12's arena:

  * a fully connected layer's int16 weights are chosen against the flash budget alone, for
    every size of layer (no fixed cap): widened with room to spare, int8 without;
  * a conv2d kernel off the arena's peak gets a larger im2col block within its slack, and the
    arena never grows for it (a block that would raise it is refused after re-planning).
"""

import sys
from pathlib import Path

from support import flows
from microcompile.frontend import load_model
from microcompile.ir import Graph, Node
from microcompile.ir.verify import verify
from microcompile.schedule import blocks
from microcompile.lower import lower_node
from microcompile.schedule.gemm_schedule import COL_BYTES_MAX, schedule_dense_gemm
from microcompile.target import load_board
from microcompile.transform import pipeline
from microcompile.compiler import schedule_and_plan
from tests.conftest import model_path

from support.op_cases import build_graph, cases  # noqa: E402

BOARD = "mps2-an386"


def _two_fc_graph() -> Graph:
    """x[1,1024] -> fc (64 units) -> fc (512 units): the first layer sets the arena's peak (its
    1 KiB input), so an int16 copy of that input would raise it; the second's int16 weights take
    64 KiB (over the old 32 KiB cap)."""
    base = dict(cases("fully_connected", "int8", 1, seed=2)[0], bias=False, keep_num_dims=False)
    g1 = build_graph(dict(base, in_shape=(1, 1024), units=64))
    g2 = build_graph(dict(base, in_shape=(1, 64), units=512, seed=base["seed"] + 1))
    ren = {"x": "h", "w": "w2", "out": "y"}
    tensors = dict(g1.tensors)
    tensors.update({ren[n]: t.replace(name=ren[n], quant=g1.tensors["out"].quant if n == "x" else t.quant)
                    for n, t in g2.tensors.items() if n in ren})
    tensors["h"] = g1.tensors["out"].replace(name="h")
    n1 = g1.nodes[0].replace(name="fc1", outputs=("h",))
    n2 = Node("fully_connected", "fc2", ("h", "w2", ""), ("y",), dict(g2.nodes[0].attrs))
    return verify(Graph("two_fc", {k: v for k, v in tensors.items() if k != "out"}, (n1, n2), ("x",), ("y",)))


def _plan(graph, board=BOARD, flash_budget=None):
    return schedule_and_plan(pipeline.run(graph), load_board(board), flash_budget)


def test_a_large_fully_connected_layer_widens_when_the_flash_allows():
    g = _two_fc_graph()
    kernels, plan, _, widened, _, _ = _plan(g)
    # int16 weights: one more byte per weight; the first layer too, as the mixed kernel reads its
    # int8 input in place (an int16 copy of it, 2 KiB, would have raised the arena); an int16
    # copy of an input only where the arena has room for it (schedule/blocks.py)
    assert widened == {"fc1": 1024 * 64, "fc2": 512 * 64}
    for name in ("fc1", "fc2"):
        f = next(f for n, f, _ in kernels if n.name == name)
        assert any(b.dtype == "int16" and b.scope == "const" for b in f.buffers)
    f1 = next(f for n, f, _ in kernels if n.name == "fc1")
    assert not any(b.dtype == "int16" and b.scope == "scratch" for b in f1.buffers)
    weights = sum(b.nbytes for _, f, _ in kernels for b in f.buffers if b.scope == "const")
    narrow = weights - 1024 * 64 - 512 * 64
    # room for the 32 KiB extra of fc2 but not the 64 KiB of fc1: fc2 alone; no room: neither;
    # the arena is the same in all three
    _, mid_plan, _, mid, _, _ = _plan(g, flash_budget=narrow + 40 * 1024 + 1024 * 2 + 8192 + 1024)
    assert mid == {"fc2": 512 * 64}
    _, tight_plan, _, tight, _, _ = _plan(g, flash_budget=narrow + 16 * 1024 + 1024 * 2 + 8192)
    assert tight == {}
    assert tight_plan.arena_bytes == mid_plan.arena_bytes == plan.arena_bytes
    # and the schedule itself no longer caps the int16 weights (its `wide` default is the DSP's)
    board = load_board(BOARD)
    pg = pipeline.run(g)
    func = lower_node(pg, next(n for n in pg.nodes if n.name == "fc2"), board.target)
    sch = schedule_dense_gemm(func, board.target)
    assert ("w", "int16") in [d.args for d in sch.trace.decisions if d.primitive == "pack_constant"]


def _fc_softmax_graph() -> Graph:
    """x[1,64] -> fc (4096 units: 256 KiB of int8 weights) -> softmax: the softmax's step is the
    arena's peak, so the fully connected layer may widen as far as the flash allows."""
    base = dict(cases("fully_connected", "int8", 1, seed=2)[0], bias=False, keep_num_dims=False)
    g1 = build_graph(dict(base, in_shape=(1, 64), units=4096))
    sm = build_graph(dict(cases("softmax", "int8", 1)[0], shape=(1, 4096), beta=1.0))
    tensors = dict(g1.tensors)
    tensors["z"] = sm.tensors["out"].replace(name="z")
    n2 = Node("softmax", "sm", ("out",), ("z",), dict(sm.nodes[0].attrs))
    return verify(Graph("fc_softmax", tensors, (g1.nodes[0], n2), ("x",), ("z",)))


def test_the_board_flash_decides_a_large_fully_connected_layers_weights():
    """256 KiB of int8 weights: widening adds 256 KiB more, which a 512 KiB part (nucleo-f446re)
    cannot hold and a 4 MiB one (mps2-an386) can; the arena is the same on both."""
    g = _fc_softmax_graph()
    fc = g.nodes[0].name
    kernels, big_plan, _, big, _, _ = _plan(g, BOARD)
    _, small_plan, _, small, _, _ = _plan(g, "nucleo-f446re")
    # the softmax's exp table (1 KiB, 400 instructions saved per element) fits both
    assert big == {fc: 4096 * 64, "sm": 1024} and small == {"sm": 1024}
    assert big_plan.arena_bytes == small_plan.arena_bytes


def test_ad01_fits_the_512k_part_and_the_4m_one_widens_at_least_as_much():
    path = model_path("ad01_int8")
    small = flows.plan_model(path, "nucleo-f446re")
    large = flows.plan_model(path, BOARD)
    flash = load_board("nucleo-f446re").mcu.flash.size
    assert small.manifest["weights_bytes"] + 8192 < flash
    assert set(small.widened) <= set(large.widened)
    assert small.plan.arena_bytes == large.plan.arena_bytes == 1024


def _without_growth(monkeypatch, path):
    with monkeypatch.context() as m:
        m.setattr(blocks, "larger_block", lambda *a: None)
        return _plan(load_model(path))


def test_larger_im2col_blocks_use_the_slack_and_never_grow_the_arena(monkeypatch):
    path = model_path("pretrainedResnet_quant")
    kernels0, plan0, *_ = _without_growth(monkeypatch, path)
    kernels, plan, *_ = _plan(load_model(path))
    assert plan.arena_bytes == plan0.arena_bytes
    caps = {n.name: blocks.col_bytes_max(t) for n, _, t in kernels if n.op == "conv2d"}
    assert set(caps.values()) >= {COL_BYTES_MAX["dsp"]}
    grown = [n for n, c in caps.items() if c > COL_BYTES_MAX["dsp"]]
    assert len(grown) >= 4, caps
    scratch0 = {n.name: f.scratch_bytes for n, f, _ in kernels0}
    assert all(f.scratch_bytes > scratch0[n.name] for n, f, _ in kernels if n.name in grown)


def test_a_block_that_would_raise_the_arena_is_refused(monkeypatch):
    """Offer every conv the largest block whatever its slack: the re-plan must refuse those
    that raise the arena (kws: its pointwise convs' 25-column blocks, 3.2 KiB, do not fit)."""
    path = model_path("kws_ref_model")
    _, plan0, *_ = _without_growth(monkeypatch, path)
    real = blocks.larger_block
    monkeypatch.setattr(blocks, "larger_block", lambda func, target, wide, f, t, slack:
                        real(func, target, wide, f, t, 1 << 20))
    kernels, plan, *_ = _plan(load_model(path))
    assert plan.arena_bytes == plan0.arena_bytes
    # and without the forced offer nothing fits kws's slack: its default plan is unchanged
    monkeypatch.setattr(blocks, "larger_block", real)
    kernels1, plan1, *_ = _plan(load_model(path))
    assert all(blocks.col_bytes_max(t) in (None, COL_BYTES_MAX["dsp"]) for _, _, t in kernels1)
    assert plan1.arena_bytes == plan0.arena_bytes


def test_records_are_replayed_as_they_are():
    """A tuned kernel keeps its trace: the slack rule changes only default schedules."""
    g = pipeline.run(load_model(model_path("pretrainedResnet_quant")))
    board = load_board(BOARD)
    kernels, *_ = schedule_and_plan(g, board)
    from microcompile.autotune.workload import workload_key
    node = next(n for n, _, t in kernels if n.op == "conv2d" and blocks.col_bytes_max(t) > COL_BYTES_MAX["dsp"])
    func = lower_node(g, next(n for n in g.nodes if n.name == node.name), board.target)
    from microcompile.schedule import apply_config, default_config
    _, trace = apply_config(func, board.target, default_config(func, board.target, True))
    tuned = {workload_key(node, func, board.target): trace}
    kernels2, *_ = schedule_and_plan(g, board, tuned=tuned)
    assert next(t for n, _, t in kernels2 if n.name == node.name) == trace


def test_the_tuners_default_point_is_what_deploy_builds():
    """The tuner measures each workload's default point as the bar a record must beat: for a
    conv whose block the driver grew, that point carries the grown cap, so replaying it gives
    the kernel deploy builds without records (not the 1 KiB block)."""
    from microcompile.autotune import run as tuning
    from microcompile.schedule import apply_config
    board = load_board(BOARD)
    compiled, workloads = tuning.lowered_workloads(model_path("pretrainedResnet_quant"), board)
    built = {n.name: (f, t) for n, f, t in compiled.kernels}
    grown = [w for w in workloads if w.family == "conv2d" and len(w.nodes) == 1
             and blocks.col_bytes_max(built[w.nodes[0]][1]) > COL_BYTES_MAX["dsp"]]
    assert len(grown) >= 4
    for w in grown:
        assert w.default["col_bytes_max"] == blocks.col_bytes_max(built[w.nodes[0]][1])
        f, _ = apply_config(w.func, board.target, w.default)
        assert f.scratch_bytes == built[w.nodes[0]][0].scratch_bytes
