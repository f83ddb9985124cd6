"""Template-free schedules (schedule/sketch.py): the compute blocks read from a loop nest, the
sketches derived from them, and every sketch of every kernel outside the hand-written spaces
computing what the lowered loops compute, also with its output written over its input at the
shift memory/inplace.py allows (the in-place rules hold for every point of the space)."""

from __future__ import annotations

import numpy as np
import pytest

from support.inplace_check import aliased_run
from support.lower_cases import (build_graph, cases, hybrid_conv_graph, lowered_model, random_inputs, reference,
                                 same_results)
from support import multi_op_models as M
from microcompile.ir import ops
from microcompile.lower import lower_node
from microcompile.memory.inplace import node_shifts
from microcompile.schedule import InvalidConfig, ScheduleError, apply_config, default_config, knob_space
from microcompile.schedule.cache import cache_write
from microcompile.schedule.sketch import MAX_UNROLL_STEPS, blocks
from microcompile.target import load_board
from microcompile.tir.nodes import Allocate, BinOp, For, Select, walk

DSP = load_board("mps2-an386").target
PLAIN = load_board("mps2-an385").target          # no FPU: float convolutions are loops here



@pytest.fixture(scope="module")
def funcs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sketch")
    out = []
    for name in ("dscnn_int8", "dscnn_float32"):
        path = M.write(name, tmp)
        for target in ((DSP, PLAIN) if name == "dscnn_float32" else (DSP,)):
            out += [(name, target, n, f) for n, f in lowered_model(path, target)
                    if knob_space(f, target).family == "sketch"]
    return out


def _node(funcs, model, op, target=DSP):
    return next(f for name, t, n, f in funcs if name == model and n.op == op and t is target)


def test_blocks_are_read_from_the_nest(funcs):
    pool = _node(funcs, "dscnn_int8", "average_pool2d")
    (b,) = blocks(pool)
    assert b.acc == "acc" and b.loop == "c" and b.extent == 28           # a reduction around its accumulator
    dw = _node(funcs, "dscnn_float32", "depthwise_conv2d")                # float: not the int8 family
    assert knob_space(dw, DSP).family == "sketch"
    assert len(blocks(dw)) >= 4 and all(b.acc is not None and b.loop.startswith("ic_") for b in blocks(dw))
    add = _case_func("add", "float32")
    assert [b.acc for b in blocks(add)] == [None]                          # elementwise: one flat loop
    conv = _node(funcs, "dscnn_float32", "conv2d", PLAIN)               # no FPU: a float conv's loops
    assert any(b.acc is not None and len(b.chain) >= 3 for b in blocks(conv))


def test_the_space_is_derived_from_the_nest(funcs):
    pool = _node(funcs, "dscnn_int8", "average_pool2d")       # 28 channels: tiles 2 and 4
    names = knob_space(pool, DSP).knobs[0].domain
    assert names[0] == "lowered" and {"tile2", "tile4", "tile4@scratch"} <= set(names)
    assert "tile8" not in names and "fuse" not in names        # the window's index is not affine in (ow, c)
    add = _case_func("add", "float32")                           # float: not the int8 tables' family
    names = knob_space(add, DSP).knobs[0].domain                 # one flat loop: nothing to fuse
    assert "fuse" not in names and not any("@scratch" in n for n in names)   # no accumulator to place
    assert default_config(add, DSP)["sketch"] == "lowered"                 # no reduction to tile


def test_a_tiled_reduction_keeps_its_accumulators_in_a_local_tile(funcs):
    pool = _node(funcs, "dscnn_int8", "average_pool2d")
    f, trace = apply_config(pool, DSP, {"sketch": "tile4", "unroll_max_extent": 8})
    tiles = [n.buffer for n in walk(f.body) if isinstance(n, Allocate) and n.buffer.shape == (4,)]
    assert [(t.scope, t.dtype) for t in tiles] == [("local", "int32")]
    assert f.scratch_bytes == pool.scratch_bytes
    # the tile loop runs inside the window's loops, unrolled: one tap feeds four channels
    red = next(n for n in walk(f.body) if isinstance(n, For) and n.var.name == "c_i_1")
    assert red.kind == "unrolled" and not any(isinstance(c, For) for c in walk(red.body))
    kh = next(n for n in walk(f.body) if isinstance(n, For) and n.var.name == "kh")
    assert any(isinstance(c, For) and c.var.name == "c_i_1" for c in walk(kh.body))
    f2, _ = apply_config(pool, DSP, {"sketch": "tile4@scratch", "unroll_max_extent": 8})
    assert f2.scratch_bytes >= 16 and not any(isinstance(n, Allocate) and n.buffer.shape for n in walk(f2.body))
    assert [d.primitive for d in trace.decisions][:2] == ["split", "cache_write"] and "reorder" in str(trace.decisions)


def test_a_local_tile_is_bounded(funcs):
    conv = _node(funcs, "dscnn_float32", "conv2d", PLAIN)
    b = next(b for b in blocks(conv) if b.acc is not None and len(b.chain) >= 3)
    with pytest.raises(ScheduleError, match="over 16; place it in scratch"):
        cache_write(conv, b.acc, b.chain[0], "local")          # a tile of the whole output plane
    with pytest.raises(ScheduleError, match="neither scratch nor local"):
        cache_write(conv, b.acc, b.loop, "stack")
    assert cache_write(conv, b.acc, b.chain[0]).scratch_bytes > conv.scratch_bytes   # scratch: no cap


def _case_func(op, dtype, seed=5):
    g = build_graph(cases(op, dtype, 1, seed=seed)[0])
    return lower_node(g, g.nodes[0], DSP)


def test_fuse_keeps_indices_affine():
    mul = _case_func("mul", "float32")          # a broadcasting multiply over nested loops
    assert "fuse" in knob_space(mul, DSP).knobs[0].domain
    f, trace = apply_config(mul, DSP, {"sketch": "fuse", "unroll_max_extent": 4})
    assert any(d.primitive == "fuse" for d in trace.decisions)
    assert not any(isinstance(n, BinOp) and n.op in ("div", "mod") for n in walk(f.body))
    same_results(mul, f)


def test_tensorize_where_a_micro_kernel_matches():
    cat = _case_func("concatenation", "float32")     # runs of floats: the copy kernel
    assert "tensorize" in knob_space(cat, DSP).knobs[0].domain
    f, trace = apply_config(cat, DSP, {"sketch": "tensorize", "unroll_max_extent": 4})
    assert {d.args[1] for d in trace.decisions if d.primitive == "tensorize"} == {"mc_copy_f32"}
    same_results(cat, f)


def test_unroll_upward_is_bounded(funcs):
    conv = _node(funcs, "dscnn_float32", "conv2d", PLAIN)
    f, _ = apply_config(conv, PLAIN, {"sketch": "tile4", "unroll_max_extent": 8})
    for n in walk(f.body):
        if isinstance(n, For) and n.kind == "unrolled":
            steps = n.extent
            for c in walk(n.body):
                if isinstance(c, For):
                    steps *= c.extent
            assert steps <= MAX_UNROLL_STEPS


def test_every_sketch_computes_the_same(funcs):
    tried, seen = 0, set()
    for name, target, node, func in funcs:
        if (node.op, target.core) in seen:          # one kernel of each op and core
            continue
        seen.add((node.op, target.core))
        for sketch in knob_space(func, target).knobs[0].domain:
            for unroll in ((0, 8) if sketch == "tile2" else (8,)):
                scheduled, _ = apply_config(func, target, {"sketch": sketch, "unroll_max_extent": unroll})
                same_results(func, scheduled)
                tried += 1
    assert tried > 30, tried


def test_a_sketch_outside_the_space_is_refused(funcs):
    pool = _node(funcs, "dscnn_int8", "average_pool2d")
    with pytest.raises(InvalidConfig, match="outside its domain"):
        apply_config(pool, DSP, {"sketch": "fuse+tile2", "unroll_max_extent": 4})


# The in-place rules (memory/inplace.py) under every sketch: each kernel of an op with an in-place
# trait that the sketch family schedules runs with its output over its input at the allowed shift.
IN_PLACE = [c for op in ("average_pool2d", "mean", "mul", "depthwise_conv2d", "dequantize")
            for dt in ("int8", "float32") for c in cases(op, dt, 1, seed=11)
            if ops.inplace_kind(op) is not None]


def _check_sketches_in_place(g, target, seed):
    node = g.nodes[0]
    func = lower_node(g, node, target)
    if knob_space(func, target).family != "sketch":
        return 0
    ins = random_inputs(g, seed)
    ref = reference(g, ins)
    checked = 0
    for sketch in knob_space(func, target).knobs[0].domain:
        # a tile in scratch runs the local tile's loops; partitions keep the order of iterations:
        # one combination of each stands for the rest
        if "@scratch" in sketch or (sketch.startswith("part+") and sketch not in ("part+tile2", "part+fuse+tile2")):
            continue
        f, _ = apply_config(func, target, {"sketch": sketch, "unroll_max_extent": 8})
        for y, x, shift in node_shifts(g, node):
            if shift is None or g.tensors[x].is_const:
                continue
            got = aliased_run(g, f, ins, x, shift)
            ok = np.array_equal(got, ref) if got.dtype != np.float32 else \
                np.allclose(got, ref, rtol=1e-5, atol=1e-6 * max(float(np.abs(ref).max()), 1e-30))
            assert ok, (node.op, sketch, x, shift)
            checked += 1
    return checked


def test_every_sketch_keeps_the_in_place_rules():
    checked = sum(_check_sketches_in_place(build_graph(c), DSP, c["seed"]) for c in IN_PLACE)
    checked += _check_sketches_in_place(hybrid_conv_graph(seed=3), PLAIN, 4)
    assert checked >= 20, checked


def test_part_takes_the_padding_tests_out_of_the_interior():
    """part: the hybrid convolution's output rows and columns are cut where the padding tests
    are decided (the partition primitive, again inside each part: the copies take the suffix
    _q where _p is taken); the interior region reads the input with no test at all."""
    g = hybrid_conv_graph(seed=3)
    conv = lower_node(g, g.nodes[0], PLAIN)
    names = knob_space(conv, PLAIN).knobs[0].domain
    assert {"part", "part+tile4"} <= set(names)
    f, trace = apply_config(conv, PLAIN, {"sketch": "part+tile4", "unroll_max_extent": 4})
    cuts = [d.args for d in trace.decisions if d.primitive == "partition"]
    assert [c[0] for c in cuts][:2] == ["oh", "ow"] and len(cuts) == 4          # oh, then ow in each of its parts
    regions = [n for n in walk(f.body)
               if isinstance(n, For) and n.var.name.startswith("oc") and n.var.name.endswith("_o")]
    assert len(regions) == 9
    selects = [sum(1 for x in walk(r) if isinstance(x, Select)) for r in regions]
    assert selects.count(0) == 1 and all(selects[i] for i in range(9) if i != selects.index(0))
    assert any("_q" in n.var.name for n in walk(f.body) if isinstance(n, For))
    same_results(conv, f)


def _synthetic(extra):
    """A float reduction y[c] = sum_k x[4c + k], with `extra` statements after its output store."""
    from microcompile.tir.nodes import Buffer, FloatImm, IntImm, Load, PrimFunc, SeqStmt, Store, Var
    from microcompile.tir.nodes import BinOp as B

    x = Buffer("x", "float32", (32,), "arena", tensor="x")
    y = Buffer("y", "float32", (8,), "arena", tensor="y")
    z = Buffer("z", "float32", (8,), "arena", tensor="z")
    c, k = Var("c"), Var("k")
    acc = Buffer("acc", "float32", (), "local")
    stmts = (acc.store(FloatImm(0.0)),
             For(k, 4, acc.store(B("add", acc.load(), Load(x, B("add", B("mul", c, IntImm(4)), k))))),
             Store(y, c, acc.load())) + tuple(extra(x, z, c))
    return PrimFunc("k", (x, y, z), For(c, 8, Allocate(acc, SeqStmt(stmts))), {"op": "synthetic"}), z


def test_a_statement_after_the_output_store_keeps_the_block_untiled():
    """A tile writes its outputs after all its reads only when the output store is the block's
    last statement: a block that reads the input after it (found by a review) is no reduction
    block, so no tile could let that read see a later element's output over its input."""
    from microcompile.schedule import default_schedule
    from microcompile.tir.nodes import IntImm, Load, Store
    from microcompile.tir.nodes import BinOp as B

    plain, _ = _synthetic(lambda x, z, c: ())
    assert [b.acc for b in blocks(plain)] == ["acc"] and "tile4" in knob_space(plain, DSP).knobs[0].domain
    late, _ = _synthetic(lambda x, z, c: (Store(z, c, Load(x, B("add", c, IntImm(1)))),))
    assert all(b.acc is None for b in blocks(late))
    assert default_config(late, DSP)["sketch"] == "lowered"
    _, trace = default_schedule(late, DSP)
    assert not any(d.primitive in ("split", "cache_write") for d in trace.decisions)


def test_a_loop_name_that_a_tile_would_take_falls_back_to_lowered():
    """split names its loops <loop>_o and <loop>_i: where a kernel already binds one (found by a
    review), the tile does not apply and the default stays the lowered loops, no crash."""
    from microcompile.schedule import default_schedule
    from microcompile.tir.nodes import FloatImm, PrimFunc, SeqStmt, Store, Var

    f, z = _synthetic(lambda x, z, c: ())
    ci = Var("c_i")
    g = PrimFunc("k", f.buffers, SeqStmt((f.body, For(ci, 8, Store(z, ci, FloatImm(1.0))))), f.attrs)
    assert default_config(g, DSP)["sketch"] == "lowered"
    out, _ = default_schedule(g, DSP)
    same_results(g, out)
