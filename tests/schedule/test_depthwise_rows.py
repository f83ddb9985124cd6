"""The whole-layer int8 3x3 depthwise kernel (schedule/depthwise_intrin.py: depthwise_rows,
runtime_c/kernels/dsp/mc_depthwise_rows_dsp.c): every case of PLAN (strides 1 and 2, SAME
and VALID, odd channel counts, per-tensor and per-channel scales, activations, batches) is one
call that computes what the numpy interpreter computes, the trace replays, layers it cannot
take keep the per-pixel kernels; and, under QEMU, the C kernel on the Cortex-M4, M7 and M33
twins is bit-exact with the interpreter and LiteRT on all of them at once."""

from __future__ import annotations

import numpy as np
import pytest

from support.lower_cases import build_graph, depthwise_case, matches, random_inputs, reference, run_lowered

from microcompile.ir.fixedpoint import multiply_by_quantized_multiplier
from microcompile.lower import lower_node
from microcompile.schedule import Trace
from microcompile.schedule.depthwise_intrin import default_rows_block, schedule_depthwise
from microcompile.tir import nodes as tir
from microcompile.tir.intrinsics_depthwise import ROWS_KERNEL, rows_pairs, rows_records
from microcompile.tir.printer import tir_str


class _Dsp:
    dsp, arch = True, "armv7e-m"


# name -> overrides of depthwise_case("3x3-s1-same"): H = hw, W = hw + 1 (op_cases).
PLAN = {
    "s1-same": dict(hw=6, cin=8, stride=1, padding="SAME"),
    "s1-valid-odd-channels": dict(hw=5, cin=7, stride=1, padding="VALID", activation="RELU6"),
    "s2-same-odd-hw": dict(hw=9, cin=5, stride=2, padding="SAME"),
    "s2-valid": dict(hw=8, cin=12, stride=2, padding="VALID", activation="NONE"),
    "s2-same-even-hw": dict(hw=6, cin=3, stride=2, padding="SAME", per_channel=False),
    "s1-tall-kws-like": dict(hw=4, cin=12, stride=1, padding="SAME", batch=1, activation="RELU"),
    "two-channels": dict(hw=5, cin=2, stride=1, padding="SAME", batch=2),
    "s1-odd-width-no-clamp": dict(hw=4, cin=9, stride=1, padding="SAME", activation="NONE"),
    # an even width with whole groups of four channels: the runs of pair columns end one pair
    # before the right padding (MobileNetV2's 48-wide rows read the next row's first pixel)
    "s1-even-width-runs": dict(hw=7, cin=8, stride=1, padding="SAME"),
    "s2-even-width-runs": dict(hw=9, cin=12, stride=2, padding="SAME", activation="RELU6"),
    # stride 2 takes outputs in pairs (dw_pair2), an odd row's last alone: even and odd widths,
    # whole groups of four channels and tails, widths 2 and 3
    "s2-even-width-16": dict(hw=11, cin=16, stride=2, padding="SAME", activation="RELU6"),
    "s2-odd-width-tail": dict(hw=12, cin=6, stride=2, padding="SAME", activation="NONE"),
    "s2-valid-odd-width-tail": dict(hw=10, cin=13, stride=2, padding="VALID"),
    "s2-width-two": dict(hw=3, cin=4, stride=2, padding="SAME", activation="RELU"),
    "s2-width-three-blocks": dict(hw=4, cin=20, stride=2, padding="SAME"),
}


def _graph_case(name: str, seed: int = 0) -> dict:
    return dict(depthwise_case("3x3-s1-same", "int8", seed=seed), multiplier=1, kernel=3, dilation=1,
                rect=False, pot_scales=False, **PLAN[name])


def _graph(name: str, seed: int = 0):
    return build_graph(_graph_case(name, seed))


def _calls(f):
    return [n.name for n in tir.walk(f.body) if isinstance(n, tir.Call) and n.name.startswith("mc_depthwise")]


@pytest.mark.parametrize("block", [0, 8])
@pytest.mark.parametrize("name", PLAN)
def test_one_call_matches_interpreter(name, block):
    g = _graph(name, seed=5)
    f = lower_node(g, g.nodes[0])
    sch = schedule_depthwise(f, _Dsp(), rows_block=block)
    assert _calls(sch.func) == [ROWS_KERNEL]
    ring = next(b for b in sch.func.buffers if b.scope == "scratch")
    cb = min(block or 1000, g.tensors["x"].shape[3])
    pairs = rows_pairs(g.tensors["out"].shape[2], PLAN[name]["stride"])
    assert ring.size == 3 * cb * pairs + (cb + 3) // 4
    assert not any(isinstance(n, tir.For) for n in tir.walk(sch.func.body))
    ins = random_inputs(g, 7)
    assert matches(run_lowered(g, sch.func, ins), reference(g, ins))
    assert tir_str(Trace.loads(sch.trace.dumps()).apply(f)) == tir_str(sch.func)


@pytest.mark.parametrize("override", [dict(kernel=5), dict(dilation=2), dict(multiplier=3, cin=2)])
def test_other_layers_keep_the_per_pixel_kernels(override):
    case = {**depthwise_case("3x3-s1-same", "int8", seed=1), "multiplier": 1, "rect": False, "pot_scales": False,
            **override}
    g = build_graph(case)
    f = lower_node(g, g.nodes[0])
    sch = schedule_depthwise(f, _Dsp())
    assert ROWS_KERNEL not in (_calls(sch.func) if sch else [])
    assert schedule_depthwise(f, None) is None or ROWS_KERNEL not in _calls(schedule_depthwise(f, None).func)


def test_default_block_fits_the_ring_cap():
    """A kws-like layer (4x5x64: kws's 5 columns and 64 channels): a ring of 3 rows x 4 pairs
    x 4 bytes per channel fits ROWS_BYTES_MAX (1 KiB) for 16 channels per pass; a small layer
    takes all its channels at once; a 49-wide one (25 pairs, 300 bytes a channel) not even 8, so
    it keeps the per-pixel kernels (compiler/plan.py grows blocks where the arena has slack)."""
    g = build_graph(dict(_graph_case("s1-tall-kws-like"), hw=4, cin=64))
    f = lower_node(g, g.nodes[0])
    assert g.tensors["x"].shape == (1, 4, 5, 64) and default_rows_block(f) == 16
    sch = schedule_depthwise(f, _Dsp())
    assert next(b for b in sch.func.buffers if b.scope == "scratch").size * 4 == 3 * 4 * 16 * 4 + 16
    small = _graph("s2-valid")
    assert default_rows_block(lower_node(small, small.nodes[0])) == 0
    wide = build_graph(dict(_graph_case("s1-same"), hw=48, cin=8))
    fw = lower_node(wide, wide.nodes[0])
    assert default_rows_block(fw) is None and ROWS_KERNEL not in _calls(schedule_depthwise(fw, _Dsp()).func)


def test_blocks_grow_into_slack_only():
    """schedule/blocks.py: with room in the arena a layer takes all its channels per pass, and a
    row too wide for the default cap switches from the per-pixel kernels to the ring; without,
    nothing changes."""
    from microcompile.schedule import blocks
    from microcompile.target.board import load_board
    target = load_board("mps2-an386").target
    for case, block in ((dict(_graph_case("s1-tall-kws-like"), hw=4, cin=64), 16),
                        (dict(_graph_case("s1-same"), hw=48, cin=8), None)):
        g = build_graph(case)
        f = lower_node(g, g.nodes[0], target)
        sch = schedule_depthwise(f, target)
        assert default_rows_block(f) == block
        assert blocks.larger_block(f, target, True, sch.func, sch.trace, 64) is None
        grown, trace = blocks.larger_block(f, target, True, sch.func, sch.trace, 1 << 20)
        assert _calls(grown) == [ROWS_KERNEL] and ("depthwise_rows_block", 0) in [d.args for d in trace.decisions]


def test_records_arithmetic_is_tflite_double_rounding():
    """SUB, SMMLAR, ASR, SSAT on the records' K equals MultiplyByQuantizedMultiplier + offset."""
    rng = np.random.default_rng(3)
    for e in (1, 2, 7, 13, 21):
        mult, off = int(rng.integers(2**30, 2**31)), int(rng.integers(-128, 128))
        rec = rows_records(np.zeros((3, 3, 1)), np.zeros(1), np.array([mult]), np.array([e]), off)
        k = int(rec[8])
        acc = np.concatenate([rng.integers(-2**29, 2**29, 4000), np.arange(-600, 600)]).astype(np.int64)
        s = ((2 * acc * mult + 2**31) >> 32) + k - (acc < 0)
        want = np.clip(multiply_by_quantized_multiplier(acc, mult, -e) + off, -128, 127)
        assert np.array_equal(np.clip(s >> e, -128, 127), want)
    assert rows_records(np.zeros((3, 3, 1)), np.zeros(1), np.array([2**30]), np.array([25]), 100) is None


@pytest.mark.qemu
@pytest.mark.parametrize("board", ["mps2-an386", "mps2-an500", "mps2-an505"])     # Cortex-M4, M7, M33
def test_rows_kernel_on_dsp_cores_matches_interpreter(board, tmp_path, monkeypatch):
    """Every PLAN case in one firmware, through the compiler's own planning (outputs planned over
    inputs where the window rule allows), compared with the interpreter and LiteRT. Layers of
    more than 8 channels run 8 channels per pass (several blocks and a partial last one); as
    planned today the 9-channel one sits 64 bytes before its input, not a whole number of
    pixels, so the kernel takes its pixel-by-pixel path (rows_direct) there."""
    from support.qemu_cases import deploy_graph, merge_graphs, merged_inputs
    from microcompile.schedule import blocks, depthwise_intrin

    def block(f):
        geo = depthwise_intrin.rows_geometry(f)
        return None if geo is None else (8 if f.buffers[0].shape[3] > 8 else 0)
    monkeypatch.setattr(depthwise_intrin, "default_rows_block", block)
    monkeypatch.setattr(blocks, "_larger_rows_block", lambda *args: None)     # keep the 8-channel passes
    graphs = [_graph(name, seed=11 + k) for k, name in enumerate(PLAN)]
    g = merge_graphs(graphs, "dw_rows")
    inputs = merged_inputs([random_inputs(sub, 70 + k) for k, sub in enumerate(graphs)])
    report = deploy_graph(g, inputs, board, tmp_path)
    assert report["verified"], report["outputs"]
    # The compiler keeps a layer's int8 loops where any wide variant would raise its arena (the
    # VALID case here): every other layer is one call, one of them in blocks of 8 and 4 channels.
    code = (tmp_path / "project" / "model" / "model.c").read_text()
    assert code.count(ROWS_KERNEL + "(") >= len(PLAN) - 1 and 'knob("depthwise_rows_block", 8)' in code
