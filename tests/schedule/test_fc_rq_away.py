"""The fused fully connected kernel mc_gemm_p4_rq_away_dsp_s16 (runtime_c/kernels/dsp/mc_gemm_dsp.c):
its one-SMLAL form of LiteRT's single rounding away from zero equals the reference arithmetic on
random and extreme sums, multipliers, shifts and offsets (ties included); its records follow
mc_gemm.h; it is refused where the shift leaves the high word (31 - shift < 33) and the layer
keeps its int32 tile; fc_input=int16 takes it and keeps results on the loop-IR interpreter; on
the Cortex-M4 twin layers with power-of-two scales (frequent ties) equal LiteRT byte for byte,
the assembly's whole panels and the C rows of a partial last one."""

from __future__ import annotations

import numpy as np
import pytest

from support.lower_cases import build_graph, cases, matches, random_inputs, run_lowered

from microcompile.ir import fixedpoint as fp
from microcompile.lower import lower_node
from microcompile.schedule import apply_config, default_config
from microcompile.target import load_board
from microcompile.tir.intrinsics_gemm import RQ_AWAY_KERNEL, rq_away_records, rq_away_refusal
from microcompile.tir.nodes import Call, IntImm, rewrite
from microcompile.tir.printer import tir_str

DSP = load_board("mps2-an386").target


def _kernel_arithmetic(x, mult, hp, sh):
    """P4_RQ_AWAY as the assembly does it: SMLAL onto (H' + s : s), the high word shifted."""
    x, mult = np.asarray(x, np.int64), np.asarray(mult, np.int64)
    s = x >> 63                                                   # 0 or -1, as x >> 31 on a word
    start = (((hp + s) & 0xFFFFFFFF) << 32) | (s & 0xFFFFFFFF)
    total = (start.astype(np.uint64) + (x * mult).astype(np.uint64)).astype(np.int64)   # wraps as SMLAL
    return (total >> 32).astype(np.int32).astype(np.int64) >> sh


def test_the_one_smlal_form_equals_the_reference_rounding():
    rng = np.random.default_rng(7)
    for _ in range(200):
        shift = int(rng.integers(-24, -1))                       # t = 31 - shift in 33 .. 55
        mult = int(rng.integers(1 << 30, 1 << 31))
        off = int(rng.integers(-128, 128))
        x = np.concatenate([rng.integers(-(1 << 31), 1 << 31, 300), [-(1 << 31), (1 << 31) - 1, 0, -1, 1]])
        # exact ties of x * M at 2^(t-1): ties away from zero must go outward on both signs
        t = 31 - shift
        tie_m = 1 << 20
        ties = np.array([(2 * q + 1) << (t - 21) for q in range(-4, 4)], np.int64) // 2
        assert rq_away_refusal(mult, shift, off) is None
        rec = rq_away_records([0], [mult], [shift], off)
        hp, sh = int(rec[8]), int(rec[9])
        assert sh == t - 32 and hp == (1 << (t - 33)) + off * (1 << (t - 32))
        for xs, m in ((x, mult), (ties, tie_m)):
            want = np.asarray(fp.multiply_by_quantized_multiplier_single_round_away(xs, m, shift), np.int64) + off
            np.testing.assert_array_equal(_kernel_arithmetic(xs, m, hp, sh), want)


def test_records_follow_the_documented_layout():
    bias, mult, shift = [5, -6, 7, 8, 9], [1 << 30, 3 << 29, 1 << 30, 5 << 28, 1 << 30], [-2, -3, -4, -5, -9]
    rec = rq_away_records(bias, mult, shift, -3).reshape(2, 16)
    assert list(rec[0, :4]) == bias[:4] and list(rec[1, :4]) == [9, 0, 0, 0]
    assert list(rec[0, 4:8]) == mult[:4] and rec[1, 4] == mult[4]
    for i, s in enumerate(shift):
        t = 31 - s
        assert list(rec[i // 4, 8 + 2 * (i % 4):10 + 2 * (i % 4)]) == [(1 << (t - 33)) - 3 * (1 << (t - 32)), t - 32]


@pytest.mark.parametrize("mult,shift,off,why", [
    (1 << 30, 0, 0, "31 - shift >= 33"), (1 << 30, -1, 0, "31 - shift >= 33"),
    (-5, -4, 0, "multiplier outside"), (1 << 30, -30, 127, "overflow the 64-bit sum"),
    (1 << 30, -25, -128, "overflow the 64-bit sum")])
def test_refused_outside_its_form(mult, shift, off, why):
    assert why in rq_away_refusal([mult], [shift], off)


def _fc(seed: int, rows: int, k: int, units: int, per_channel: bool, act: str = "RELU"):
    case = dict(cases("fully_connected", "int8", 1, seed=seed)[0], in_shape=(rows, k), units=units,
                per_channel=per_channel, bias=True, keep_num_dims=False, pot_scales=True, activation=act)
    return build_graph(case)


# k % 8 == 0 (fused; m % 4 != 0: the assembly's panels and the C rows) and not (the tile)
SHAPES = [(1, 8, 4, False, "NONE"), (2, 16, 8, True, "RELU"), (1, 37, 13, True, "RELU6"),
          (3, 64, 12, False, "NONE"), (1, 130, 33, True, "RELU"), (1, 24, 6, False, "RELU"),
          (1, 40, 10, True, "RELU6"), (2, 48, 17, False, "NONE")]


@pytest.mark.parametrize("rows,k,units,per_channel,act", SHAPES)
def test_fc_input_int16_fuses_the_requantization(rows, k, units, per_channel, act):
    """Where k is a multiple of 8 (the kernel's assembly; a partial last panel runs its C rows);
    otherwise the int32 tile and the int16 panel kernel."""
    g = _fc(rows * 1000 + k, rows, k, units, per_channel, act)
    f = lower_node(g, g.nodes[0])
    got, _ = apply_config(f, DSP, {**default_config(f, DSP, True), "fc_input": "int16"})
    text = tir_str(got)
    if k % 8:
        assert RQ_AWAY_KERNEL not in text and "mc_gemm_p4_dsp_s16(" in text, text
    else:
        assert f"{RQ_AWAY_KERNEL}(" in text and "acc_tile" not in text, text
    for seed in (1, 2, 3):
        ins = random_inputs(g, seed)
        assert matches(run_lowered(g, got, ins), run_lowered(g, f, ins))


def test_a_shift_outside_the_form_keeps_the_tile():
    g = _fc(5, 1, 32, 8, False)
    f = lower_node(g, g.nodes[0])

    def big_scale(n):       # a scale ratio of at least 1/2 (shift >= -1): t <= 32
        if isinstance(n, Call) and n.name == "mc_mul_by_qm_single_round_away":
            return Call(n.name, (n.args[0], n.args[1], IntImm(-1)), n.dtype)
        return None
    f = type(f)(f.name, f.buffers, rewrite(f.body, big_scale), dict(f.attrs))
    got, _ = apply_config(f, DSP, {**default_config(f, DSP, True), "fc_input": "int16"})
    assert RQ_AWAY_KERNEL not in tir_str(got) and "mc_gemm_p4_dsp_s16(" in tir_str(got)


@pytest.mark.qemu
def test_fused_fc_matches_litert_on_qemu(tmp_path):
    """The layers next to a large one (whose step sets the arena, so theirs have room for the
    widened input row) take the fused kernel; LiteRT equality is asserted by deploy_graph."""
    from support.qemu_cases import deploy_graph, merge_graphs
    graphs = [_fc(90 + i, *shape) for i, shape in enumerate(SHAPES)] + [_fc(99, 1, 1024, 512, False)]
    g = merge_graphs(graphs, "fused_fc")
    inputs = {}
    for i, sub in enumerate(graphs):
        inputs.update({f"g{i}.{name}": a for name, a in random_inputs(sub, 70 + i).items()})
    report = deploy_graph(g, inputs, "mps2-an386", tmp_path)
    assert report["verified"], report["outputs"]
    model_c = (tmp_path / "project" / "model" / "model.c").read_text()
    # (the planner keeps the int8 row where the widened one would move the arena: one of them here)
    fused = sum(1 for shape in SHAPES if shape[1] % 8 == 0)
    assert fused - 1 <= model_c.count(f"{RQ_AWAY_KERNEL}(") <= fused, model_c.count(f"{RQ_AWAY_KERNEL}(")


def test_fewer_than_four_units_keep_the_tile():
    """No whole panel of four rows: the kernel would run only its C rows (MobileNet's 2-class head)."""
    g = _fc(6, 1, 256, 2, False)
    f = lower_node(g, g.nodes[0])
    got, _ = apply_config(f, DSP, {**default_config(f, DSP, True), "fc_input": "int16"})
    assert RQ_AWAY_KERNEL not in tir_str(got) and "mc_gemm_p4_dsp_s16(" in tir_str(got)
