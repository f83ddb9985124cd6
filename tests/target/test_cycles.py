"""The cycle model, one test per timing rule, on short sequences counted by hand from the
TRM tables (microcompile/target/cycles.py lists the rules). No QEMU: a block is priced from
its bytes and its counts as the profile plugin reports them."""

from __future__ import annotations

import pytest

from microcompile.target import load_board
from microcompile.target.cycles import BlockRun, MemorySystem, core_timing, estimate, memory_system
from test_thumb import code

M0P, M3, M4, M7, M33, M55 = (core_timing(c) for c in
                             ("cortex-m0plus", "cortex-m3", "cortex-m4f", "cortex-m7f", "cortex-m33f", "cortex-m55"))
ZERO_WAIT = MemorySystem(clock_hz=100_000_000)

ADDS = "1888"           # adds r0, r1, r2
ADDS_R4 = "19ac"        # adds r4, r5, r6 (independent of ADDS)
ADDS_USE_R3 = "1898"    # adds r0, r3, r2 (reads ldr r3's result)
LDR_R3 = "6813"         # ldr r3, [r2]
LDR_R1 = "6851"         # ldr r1, [r2, #4]
LDR_VIA_R3 = "681a"     # ldr r2, [r3]      (its address is LDR_R3's result)
STR = "6001"            # str r1, [r0]
BNE = "d1fe"
B = "e7fe"
POP_PC = "bd30"         # pop {r4, r5, pc}


def cycles(core, *insns, count=1, taken=0, fall=0, mem=ZERO_WAIT, misses=0, code_lines=0, mve=False) -> int:
    block = BlockRun(0x1000, tuple(code(i) for i in insns), count, taken, fall, misses, misses)
    return estimate([block], core, mem, code_lines, mve).cycles


def test_one_cycle_per_data_processing_instruction():
    assert cycles(M4, ADDS, ADDS_R4, ADDS) == 3
    assert cycles(M4, ADDS, count=10) == 10


def test_a_single_load_or_store_costs_two_cycles():
    assert cycles(M4, LDR_R3, ADDS) == 2 + 1
    assert cycles(M4, STR, ADDS) == 2 + 1
    assert cycles(M0P, LDR_R3) == 2


def test_neighbouring_loads_and_stores_pipeline_on_m3_m4_m33():
    for core in (M3, M4, M33):
        assert cycles(core, LDR_R3, LDR_R1, STR) == 2 + 1 + 1
    assert cycles(M0P, LDR_R3, LDR_R1, STR) == 2 + 2 + 2      # Armv6-M does not pipeline them


def test_a_load_whose_address_is_the_previous_load_does_not_pipeline():
    assert cycles(M4, LDR_R3, LDR_VIA_R3) == 2 + 2


def test_ldrd_is_one_plus_n():
    assert cycles(M4, "e9d0 4500") == 1 + 2                  # ldrd r4, r5, [r0]


def test_ldm_stm_push_pop_are_one_plus_n():
    assert cycles(M4, "c81e") == 1 + 4                       # ldmia r0!, {r1-r4}
    assert cycles(M4, "b530") == 1 + 3                       # push {r4, r5, lr}
    assert cycles(M4, POP_PC, count=1, taken=1) == 1 + 3 + 2  # pop with pc: 1 + N + P


def test_a_taken_branch_refills_the_pipeline():
    # adds; bne: ten passes, nine taken: 10 * (1 + 1) + 9 * P
    assert cycles(M4, ADDS, BNE, count=10, taken=9, fall=1) == 20 + 9 * 2
    assert cycles(M0P, ADDS, BNE, count=10, taken=9, fall=1) == 20 + 9 * 1
    assert cycles(M4, B, count=5, taken=5) == 5 * (1 + 2)    # always taken
    assert cycles(M4, "e8df f000", count=3, taken=3) == 3 * (2 + 2)   # tbb: 2 + P


def test_multiply_and_divide_latencies_by_core():
    mla, smull, smlal, smlad, sdiv = "fb01 3002", "fb82 0103", "fbc2 0103", "fb21 3002", "fb91 f0f2"
    assert [cycles(M4, i) for i in (mla, smull, smlal, smlad)] == [1, 1, 1, 1]
    assert [cycles(M3, i) for i in (mla, smull, smlal)] == [2, 4, 5]    # TRM: 2, 3..5, 4..7
    assert cycles(M4, sdiv) == 7                                         # 2..12: the midpoint
    assert cycles(M4, "fb01 f002") == 1                                  # mul


def test_it_folds():
    assert cycles(M4, "bf08", "3001") == 1                   # it eq; addeq r0, #1
    assert cycles(M0P, "bf08", "3001") == 2


def test_fpu_timings_m4():
    assert cycles(M4, "ee30 0a81") == 1                      # vadd.f32
    assert cycles(M4, "eea0 0a81") == 3                      # vfma.f32
    assert cycles(M4, "ee80 0a81") == 14                     # vdiv.f32
    assert cycles(M4, "ed90 0a00") == 2                      # vldr
    assert cycles(M4, "ecbd 8a02") == 1 + 2                  # vpop {s16-s17}
    assert cycles(M7, "eea0 0a81") == 1                      # pipelined on the M7


def test_load_use_stall_on_m7():
    assert cycles(M7, LDR_R3, ADDS_USE_R3) == 1 + 1 + 1      # load, stall, add
    assert cycles(M4, LDR_R3, ADDS_USE_R3) == 2 + 1          # the M4's 2-cycle load covers it


def test_m7_dual_issue():
    assert cycles(M7, ADDS, ADDS_R4) == 1                    # independent: one cycle for both
    assert cycles(M7, ADDS, "1840") == 2                     # adds r0, r0, r1 reads r0: no pair
    assert cycles(M7, LDR_R3, LDR_R1) == 2                   # one load/store pipe
    assert cycles(M7, "fb01 f002", "fb01 f002") == 2         # one multiplier
    assert cycles(M7, ADDS, ADDS_R4, ADDS, ADDS_R4) == 2     # pairs do not chain


def test_m7_mispredicts_at_each_loop_exit():
    # adds + bne pair (1 cycle a pass), 9 taken at P = 1, one exit mispredicted
    assert cycles(M7, ADDS, BNE, count=10, taken=9, fall=1) == 10 + 9 + M7.mispredict


def test_helium_dual_beat_and_overlap():
    vldrw, vmladava = "ecb0 1f04", "eef0 0f22"
    assert cycles(M55, vmladava, vmladava, mve=True) == 2 + 2    # same group: no overlap
    assert cycles(M55, vldrw, vmladava, mve=True) == 2 + 1       # load then MAC: overlap


def test_low_overhead_loop_costs_its_first_pass_only():
    vldrw, vmladava, le = "ecb0 1f04", "eef0 0f22", "f00f c803"
    # 100 passes, QEMU counts LE on each; the loop body overlaps around the loop: 1 + 1 a pass;
    # LE costs 1 + P once per run of the loop
    assert cycles(M55, vldrw, vmladava, le, count=100, taken=99, fall=1, mve=True) == 200 + 3
    assert cycles(M55, "f042 e001", mve=True) == 1                             # dls
    assert cycles(M55, "f042 c80f", count=2, taken=1, fall=1, mve=True) == 2 + 2   # wls, taken once


def test_flash_wait_states_on_data_misses_and_code_lines():
    l4 = MemorySystem(clock_hz=120_000_000, flash_wait_states=5, flash_read_bytes=8, cache_lines=8,
                      cache_line_bytes=32)
    assert l4.miss_penalty == 5 * 4                          # a 32-byte line is four 64-bit reads
    assert cycles(M4, LDR_R3, mem=l4, misses=3) == 2 + 3 * 20
    assert cycles(M4, ADDS, mem=l4, code_lines=2) == 1 + 2 * 20
    assert cycles(M4, LDR_R3, mem=ZERO_WAIT, misses=3) == 2


def test_the_boards_memory_systems():
    l4 = memory_system(load_board("nucleo-l4r5zi"))
    assert (l4.clock_hz, l4.flash_wait_states, l4.flash_read_bytes, l4.cache_lines) == (120_000_000, 5, 8, 8)
    h7 = memory_system(load_board("nucleo-h743zi"))
    assert h7.flash_wait_states == 2 * 2                     # 2 AXI clocks at half the core clock
    assert memory_system(load_board("mps2-an386")).flash_wait_states == 0


def test_estimate_counts_instructions_and_parts():
    blocks = [BlockRun(0, (code(ADDS), code(BNE)), 10, 9, 1), BlockRun(8, (code(LDR_R3),), 0)]
    est = estimate(blocks, M4, ZERO_WAIT)
    assert est.instructions == 20
    assert est.parts == {"pipeline": 20, "branches": 18, "flash": 0}
    assert est.ms(100_000_000) == pytest.approx(38 / 1e5)


def test_unknown_core():
    with pytest.raises(ValueError, match="no cycle model"):
        core_timing("cortex-a53")
