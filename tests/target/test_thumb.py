"""The Thumb decoder against encodings from arm-none-eabi-as 2.40 (objdump's halfword order)."""

from __future__ import annotations

import pytest

from microcompile.target.thumb import decode


def code(halfwords: str) -> bytes:
    """ "e9d0 4500" (objdump) -> the bytes in memory (each halfword little-endian)."""
    return b"".join(int(h, 16).to_bytes(2, "little") for h in halfwords.split())


CASES = [  # (objdump halfwords, assembly, kind, words, cond, writes_pc)
    ("1888", "adds r0, r1, r2", "alu", 1, False, False),
    ("6813", "ldr r3, [r2]", "load", 1, False, False),
    ("6001", "str r1, [r0]", "store", 1, False, False),
    ("e9d0 4500", "ldrd r4, r5, [r0]", "load", 2, False, False),
    ("e9c0 4502", "strd r4, r5, [r0, #8]", "store", 2, False, False),
    ("f850 6021", "ldr.w r6, [r0, r1, lsl #2]", "load", 1, False, False),
    ("480f", "ldr r0, [pc, #60]", "load", 1, False, False),
    ("9802", "ldr r0, [sp, #8]", "load", 1, False, False),
    ("9002", "str r0, [sp, #8]", "store", 1, False, False),
    ("e851 0f00", "ldrex r0, [r1]", "load", 1, False, False),
    ("e841 0200", "strex r2, r0, [r1]", "store", 1, False, False),
    ("c81e", "ldmia r0!, {r1-r4}", "ldm", 4, False, False),
    ("b530", "push {r4, r5, lr}", "stm", 3, False, False),
    ("bd30", "pop {r4, r5, pc}", "ldm", 3, False, True),
    ("f85d fb04", "ldr.w pc, [sp], #4", "branch", 1, False, True),
    ("d1fe", "bne .", "branch", 1, True, True),
    ("e7fe", "b .", "branch", 1, False, True),
    ("b108", "cbz r0, +6", "branch", 1, True, True),
    ("f000 f83e", "bl foo", "branch", 1, False, True),
    ("4770", "bx lr", "branch", 1, False, True),
    ("46f7", "mov pc, lr", "branch", 1, False, True),
    ("e8df f000", "tbb [pc, r0]", "table_branch", 1, False, True),
    ("fb01 f002", "mul.w r0, r1, r2", "mul", 1, False, False),
    ("fb01 3002", "mla r0, r1, r2, r3", "mla", 1, False, False),
    ("fb82 0103", "smull r0, r1, r2, r3", "lmul", 1, False, False),
    ("fbc2 0103", "smlal r0, r1, r2, r3", "lmla", 1, False, False),
    ("fbe2 0103", "umlal r0, r1, r2, r3", "lmla", 1, False, False),
    ("fbc2 01c3", "smlald r0, r1, r2, r3", "lmla", 1, False, False),
    ("fb21 3002", "smlad r0, r1, r2, r3", "dsp_mul", 1, False, False),
    ("fb11 3002", "smlabb r0, r1, r2, r3", "dsp_mul", 1, False, False),
    ("fb51 f002", "smmul r0, r1, r2", "dsp_mul", 1, False, False),
    ("fb91 f0f2", "sdiv r0, r1, r2", "div", 1, False, False),
    ("fbb1 f0f2", "udiv r0, r1, r2", "div", 1, False, False),
    ("bf08", "it eq", "it", 1, False, False),
    ("bf00", "nop", "nop", 1, False, False),
    ("fa2f f081", "sxtb16 r0, r1", "alu", 1, False, False),
    ("f301 0007", "ssat r0, #8, r1", "alu", 1, False, False),
    ("eb01 00c2", "add.w r0, r1, r2, lsl #3", "alu", 1, False, False),
    ("f240 40d2", "movw r0, #1234", "alu", 1, False, False),
    ("f3bf 8f5f", "dmb sy", "barrier", 1, False, False),
    ("f890 f000", "pld [r0]", "nop", 1, False, False),
    ("ecbd 8a02", "vpop {s16-s17}", "vfp_ldm", 2, False, False),
    ("ecb0 0a04", "vldmia r0!, {s0-s3}", "vfp_ldm", 4, False, False),
    ("ed2d 8a02", "vpush {s16-s17}", "vfp_stm", 2, False, False),
    ("ed90 0a00", "vldr s0, [r0]", "vfp_load", 1, False, False),
    ("ed80 0a00", "vstr s0, [r0]", "vfp_store", 1, False, False),
    ("ee30 0a81", "vadd.f32 s0, s1, s2", "vfp", 1, False, False),
    ("ee20 0a81", "vmul.f32 s0, s1, s2", "vfp", 1, False, False),
    ("eeb4 0a60", "vcmp.f32 s0, s1", "vfp", 1, False, False),
    ("ee10 0a10", "vmov r0, s0", "vfp", 1, False, False),
    ("eea0 0a81", "vfma.f32 s0, s1, s2", "vfp_mac", 1, False, False),
    ("ee00 0a81", "vmla.f32 s0, s1, s2", "vfp_mac", 1, False, False),
    ("ee80 0a81", "vdiv.f32 s0, s1, s2", "vfp_div", 1, False, False),
    ("eeb1 0ae0", "vsqrt.f32 s0, s1", "vfp_div", 1, False, False),
]

MVE_CASES = [  # on a core with Armv8.1-M's loops and Helium (the M55)
    ("ecb0 1f04", "vldrw.u32 q0, [r0], #16", "mve_mem", False),
    ("ed91 2e88", "vldrb.s16 q1, [r1, #8]", "mve_mem", False),
    ("ed82 1f00", "vstrw.32 q0, [r2]", "mve_mem", False),
    ("fc90 1f00", "vld20.32 {q0, q1}, [r0]", "mve_mem", False),
    ("eef0 0f22", "vmladava.s8 r0, q0, q1", "mve", False),
    ("ef22 0844", "vadd.i32 q0, q1, q2", "mve", False),
    ("ee23 0e43", "vmla.s32 q0, q1, r3", "mve", False),
    ("ef02 0c54", "vfma.f32 q0, q1, q2", "mve", False),
    ("fe71 0f4d", "vpst", "nop", False),
    ("f002 e801", "vctp.8 r2", "nop", False),
    ("f042 e001", "dls lr, r2", "lob_start", False),
    ("f002 e001", "dlstp.8 lr, r2", "lob_start", False),
    ("f042 c80f", "wls lr, r2, +0x22", "lob_start", True),
    ("f00f c803", "le lr, -6", "lob_end", True),
    ("f01f c805", "letp lr, -10", "lob_end", True),
    ("d1fe", "bne .", "branch", True),
    ("f000 f83e", "bl foo", "branch", False),
]


@pytest.mark.parametrize("hw,asm,kind,words,cond,writes_pc", CASES, ids=[c[1] for c in CASES])
def test_decode(hw, asm, kind, words, cond, writes_pc):
    insn = decode(code(hw))
    assert (insn.kind, insn.words, insn.cond, insn.writes_pc) == (kind, words, cond, writes_pc), asm
    assert insn.size == len(code(hw))


@pytest.mark.parametrize("hw,asm,kind,cond", MVE_CASES, ids=[c[1] for c in MVE_CASES])
def test_decode_helium_and_loops(hw, asm, kind, cond):
    insn = decode(code(hw), mve=True)
    assert (insn.kind, insn.cond) == (kind, cond), asm


def test_registers_for_the_hazard_rules():
    ldr = decode(code("6813"))                 # ldr r3, [r2]
    assert ldr.reads == {2} and ldr.writes == {3}
    ldrd = decode(code("e9d0 4500"))           # ldrd r4, r5, [r0]
    assert ldrd.reads == {0} and ldrd.writes == {4, 5}
    mla = decode(code("fb01 3002"))            # mla r0, r1, r2, r3
    assert mla.reads == {1, 2, 3} and mla.writes == {0}
    pop = decode(code("bd30"))
    assert pop.writes == {4, 5, 13, 15}


def test_a_wrong_length_is_an_error():
    with pytest.raises(ValueError):
        decode(code("e9d0"))                   # the first half of a 32-bit instruction
    with pytest.raises(ValueError):
        decode(code("1888 1888"))              # two 16-bit instructions
