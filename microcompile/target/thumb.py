"""A small Thumb/Thumb-2 decoder: the instruction classes the cycle model prices
(microcompile/target/cycles.py), read from an instruction's bytes as QEMU executed them.

It is no disassembler: it says what kind of work an instruction is (`Insn.kind`), how many
words a multiple load or store moves, whether it writes the PC, and which core registers it
reads and writes, for the hazard rules (load-use, back-to-back loads, multiply latency).
An encoding it does not recognise is an "alu" instruction of one cycle, the commonest case.

Encodings: Armv7-M / Armv8-M ARM (A5.2 16-bit, A5.3 32-bit), Armv8.1-M for the low-overhead
loops and Helium (checked against arm-none-eabi-as 2.40, tests/target/test_thumb.py).
"""

from __future__ import annotations

from dataclasses import dataclass

PC, LR, SP = 15, 14, 13

# kinds, and what they are
KINDS = {
    "alu": "data processing, moves, shifts, saturation, packing, compares (1 cycle)",
    "it": "IT (folded onto a neighbour on Armv7-M and later)",
    "load": "single LDR/LDRB/LDRH/LDRSB/LDRSH/LDREX (words=2 for LDRD)",
    "store": "single STR/STRB/STRH/STREX (words=2 for STRD)",
    "ldm": "LDM/POP (words registers)",
    "stm": "STM/PUSH (words registers)",
    "branch": "B, BL, BX, BLX, CBZ/CBNZ (cond says it may fall through)",
    "table_branch": "TBB/TBH",
    "mul": "MUL",
    "mla": "MLA/MLS",
    "lmul": "SMULL/UMULL",
    "lmla": "SMLAL/UMLAL and the long DSP accumulates (SMLALD, SMLALxy)",
    "dsp_mul": "the 16x16 and dual 16-bit multiplies and accumulates (SMLAD, SMLABB, SMULBB, SMMUL, ...)",
    "div": "SDIV/UDIV",
    "vfp": "scalar floating-point arithmetic (VADD, VSUB, VMUL, VABS, VNEG, VCVT, VCMP, VMOV)",
    "vfp_mac": "VMLA, VMLS, VNMLA, VNMLS, VFMA, VFMS, VFNMA, VFNMS",
    "vfp_div": "VDIV, VSQRT",
    "vfp_load": "VLDR", "vfp_store": "VSTR",
    "vfp_ldm": "VLDM/VPOP (words registers)", "vfp_stm": "VSTM/VPUSH (words registers)",
    "mve": "a Helium data-processing instruction (one 128-bit vector operation)",
    "mve_mem": "a Helium vector load or store",
    "lob_start": "DLS/DLSTP/WLS/WLSTP (a low-overhead loop start)",
    "lob_end": "LE/LETP (a low-overhead loop end)",
    "barrier": "DMB/DSB/ISB",
    "nop": "NOP, hints",
}


@dataclass(frozen=True)
class Insn:
    kind: str
    size: int                          # 2 or 4 bytes
    words: int = 1                     # registers moved by a multiple load/store
    cond: bool = False                 # a branch that may fall through (Bcond, CBZ, LE, WLS)
    writes_pc: bool = False
    reads: frozenset = frozenset()     # core registers read (0..15)
    writes: frozenset = frozenset()    # core registers written
    addr: frozenset = frozenset()      # the address registers of a load or store


def halfwords(data: bytes) -> tuple[int, int | None]:
    hw1 = data[0] | data[1] << 8
    hw2 = data[2] | data[3] << 8 if len(data) >= 4 else None
    return hw1, hw2


def insn_size(hw1: int) -> int:
    """2 or 4: a halfword 0b11101, 0b11110 or 0b11111 in bits 15:11 starts a 32-bit instruction."""
    return 4 if (hw1 >> 11) in (0b11101, 0b11110, 0b11111) else 2


def decode(data: bytes, mve: bool = False) -> Insn:
    """The class of the Thumb instruction in `data` (2 or 4 bytes, memory order). `mve`: the
    core has Armv8.1-M's low-overhead loops and Helium (they share encodings with others)."""
    if len(data) not in (2, 4):
        raise ValueError(f"a Thumb instruction is 2 or 4 bytes, not {len(data)}")
    hw1, hw2 = halfwords(data)
    if insn_size(hw1) == 2:
        if len(data) != 2:
            raise ValueError(f"0x{hw1:04x} is a 16-bit instruction")
        return _decode16(hw1)
    if hw2 is None:
        raise ValueError(f"0x{hw1:04x} starts a 32-bit instruction")
    return _decode32(hw1, hw2, mve)


def _regs(*rs) -> frozenset:
    return frozenset(r for r in rs if r is not None)


def _reglist(mask: int) -> frozenset:
    return frozenset(r for r in range(16) if mask >> r & 1)


def _decode16(h: int) -> Insn:
    lo3, mid3 = h & 7, h >> 3 & 7
    top6 = h >> 10
    if top6 < 0b010000:                       # shift, add, sub, mov, cmp (immediate / register)
        if h >> 11 == 0b00011:               # ADD/SUB register or 3-bit immediate
            rm = None if h >> 10 & 1 else h >> 6 & 7
            return Insn("alu", 2, reads=_regs(mid3, rm), writes=_regs(lo3))
        if h >> 13 == 0:                      # LSL/LSR/ASR immediate
            return Insn("alu", 2, reads=_regs(mid3), writes=_regs(lo3))
        rd = h >> 8 & 7                       # MOV/CMP/ADD/SUB 8-bit immediate
        op = h >> 11 & 3
        return Insn("alu", 2, reads=_regs(None if op == 0 else rd), writes=_regs(None if op == 1 else rd))
    if top6 == 0b010000:                      # data processing register
        op = h >> 6 & 0xF
        if op == 0b1101:                      # MULS
            return Insn("mul", 2, reads=_regs(lo3, mid3), writes=_regs(lo3))
        compare = op in (0b1000, 0b1010, 0b1011)
        return Insn("alu", 2, reads=_regs(lo3, mid3), writes=_regs(None if compare else lo3))
    if top6 == 0b010001:                      # special data, BX, BLX
        op = h >> 8 & 3
        rm = h >> 3 & 0xF
        rdn = (h >> 4 & 8) | lo3
        if op == 0b11:                        # BX / BLX
            return Insn("branch", 2, writes_pc=True, reads=_regs(rm), writes=_regs(LR if h >> 7 & 1 else None))
        if op == 0b01:                        # CMP high
            return Insn("alu", 2, reads=_regs(rdn, rm))
        writes_pc = rdn == PC
        reads = _regs(rm) if op == 0b10 else _regs(rdn, rm)
        return Insn("branch" if writes_pc else "alu", 2, writes_pc=writes_pc, reads=reads, writes=_regs(rdn))
    if h >> 11 == 0b01001:                    # LDR literal
        return Insn("load", 2, reads=_regs(PC), writes=_regs(h >> 8 & 7), addr=_regs(PC))
    if h >> 12 == 0b0101:                     # load/store register offset
        op = h >> 9 & 7
        rm = h >> 6 & 7
        if op <= 0b010:                       # STR, STRH, STRB
            return Insn("store", 2, reads=_regs(lo3, mid3, rm), addr=_regs(mid3, rm))
        return Insn("load", 2, reads=_regs(mid3, rm), writes=_regs(lo3), addr=_regs(mid3, rm))
    if h >> 13 == 0b011 or h >> 12 == 0b1000:  # LDR/STR(B) immediate, LDRH/STRH immediate
        if h >> 11 & 1:
            return Insn("load", 2, reads=_regs(mid3), writes=_regs(lo3), addr=_regs(mid3))
        return Insn("store", 2, reads=_regs(lo3, mid3), addr=_regs(mid3))
    if h >> 12 == 0b1001:                     # LDR/STR SP-relative
        rt = h >> 8 & 7
        if h >> 11 & 1:
            return Insn("load", 2, reads=_regs(SP), writes=_regs(rt), addr=_regs(SP))
        return Insn("store", 2, reads=_regs(SP, rt), addr=_regs(SP))
    if h >> 12 == 0b1010:                     # ADR, ADD rd, SP, #imm
        return Insn("alu", 2, reads=_regs(SP if h >> 11 & 1 else PC), writes=_regs(h >> 8 & 7))
    if h >> 12 == 0b1011:
        return _misc16(h)
    if h >> 12 == 0b1100:                     # LDM/STM
        rn = h >> 8 & 7
        regs = _reglist(h & 0xFF)
        if h >> 11 & 1:
            return Insn("ldm", 2, words=len(regs), reads=_regs(rn), writes=regs | {rn})
        return Insn("stm", 2, words=len(regs), reads=regs | {rn}, writes=_regs(rn))
    if h >> 12 == 0b1101:                     # B<cond>, UDF, SVC
        if h >> 9 & 7 == 0b111:
            return Insn("alu", 2)
        return Insn("branch", 2, cond=True, writes_pc=True)
    if h >> 11 == 0b11100:                    # B
        return Insn("branch", 2, writes_pc=True)
    return Insn("alu", 2)


def _misc16(h: int) -> Insn:
    if h >> 8 & 0xF in (0b0001, 0b0011, 0b1001, 0b1011):   # CBZ/CBNZ
        return Insn("branch", 2, cond=True, writes_pc=True, reads=_regs(h & 7))
    if h >> 9 & 7 == 0b010:                   # PUSH
        regs = _reglist(h & 0xFF) | ({LR} if h >> 8 & 1 else set())
        return Insn("stm", 2, words=len(regs), reads=regs | {SP}, writes=_regs(SP))
    if h >> 9 & 7 == 0b110:                   # POP
        regs = _reglist(h & 0xFF) | ({PC} if h >> 8 & 1 else set())
        return Insn("ldm", 2, words=len(regs), writes_pc=PC in regs, reads=_regs(SP), writes=regs | {SP})
    if h >> 8 & 0xF == 0b1111:                # IT and hints
        return Insn("it" if h & 0xF else "nop", 2)
    if h >> 8 & 0xF == 0b1110:                # BKPT
        return Insn("alu", 2)
    return Insn("alu", 2, reads=_regs(h >> 3 & 7), writes=_regs(h & 7))   # SXTH, REV, ADD SP, CPS...


def _decode32(hw1: int, hw2: int, mve: bool) -> Insn:
    op1 = hw1 >> 11 & 3
    op2 = hw1 >> 4 & 0x7F
    rn = hw1 & 0xF
    if op2 >> 6 and op1 in (0b01, 0b11):      # coprocessor space: floating point, Helium
        return _coprocessor(hw1, hw2, mve)
    if op1 == 0b01:
        if op2 >> 5 == 0b00 and not op2 >> 2 & 1:   # load/store multiple
            return _ldm32(hw1, hw2)
        if op2 >> 5 == 0b00:                  # load/store dual, exclusive, table branch
            return _dual32(hw1, hw2)
        rd, rm = hw2 >> 8 & 0xF, hw2 & 0xF    # data processing (shifted register)
        return Insn("alu", 4, reads=_regs(None if rn == PC else rn, rm), writes=_regs(None if rd == PC else rd))
    if op1 == 0b10:
        if hw2 >> 15:
            return _branch32(hw1, hw2, mve)
        rd = hw2 >> 8 & 0xF                   # data processing (immediate)
        return Insn("alu", 4, reads=_regs(None if rn == PC else rn), writes=_regs(None if rd == PC else rd))
    rt, rm = hw2 >> 12 & 0xF, hw2 & 0xF
    if op2 >> 4 == 0b000 and not op2 & 1:     # store single
        offset_reg = rm if hw1 >> 7 & 1 == 0 and hw2 >> 6 & 0x3F == 0 else None
        return Insn("store", 4, reads=_regs(rn, rt, offset_reg), addr=_regs(rn, offset_reg))
    if op2 >> 5 == 0b00:                      # loads (byte, halfword, word) and preload hints
        offset_reg = rm if rn != PC and hw1 >> 7 & 1 == 0 and hw2 >> 6 & 0x3F == 0 else None
        if rt == PC:
            return Insn("nop" if op2 >> 1 & 3 != 0b10 else "branch", 4, writes_pc=op2 >> 1 & 3 == 0b10,
                        reads=_regs(rn, offset_reg))
        return Insn("load", 4, reads=_regs(rn, offset_reg), writes=_regs(rt), addr=_regs(rn, offset_reg))
    rd = hw2 >> 8 & 0xF
    if op2 >> 4 == 0b010:                     # data processing (register): shifts, extends, SIMD add, CLZ
        return Insn("alu", 4, reads=_regs(rn if rn != PC else None, rm), writes=_regs(rd))
    if op2 >> 3 == 0b0110:                    # multiply, multiply accumulate, absolute difference
        return _mul32(hw1, hw2)
    if op2 >> 3 == 0b0111:                    # long multiply, long multiply accumulate, divide
        return _lmul32(hw1, hw2)
    return Insn("alu", 4)


def _ldm32(hw1: int, hw2: int) -> Insn:
    rn = hw1 & 0xF
    regs = _reglist(hw2)
    wback = {rn} if hw1 >> 5 & 1 else set()
    if hw1 >> 4 & 1:                           # LDM / POP.W
        return Insn("ldm", 4, words=len(regs), writes_pc=PC in regs, reads=_regs(rn), writes=regs | wback)
    return Insn("stm", 4, words=len(regs), reads=regs | {rn}, writes=frozenset(wback))


def _dual32(hw1: int, hw2: int) -> Insn:
    """A5.3.5: op1 = hw1[8:7], op2 = hw1[5:4], op3 = hw2[7:4]."""
    rn, rt, rt2 = hw1 & 0xF, hw2 >> 12 & 0xF, hw2 >> 8 & 0xF
    op1, op2, op3 = hw1 >> 7 & 3, hw1 >> 4 & 3, hw2 >> 4 & 0xF
    if op1 == 0b00 and op2 == 0b00:                   # STREX
        return Insn("store", 4, reads=_regs(rn, rt), writes=_regs(rt2), addr=_regs(rn))
    if op1 == 0b00 and op2 == 0b01:                   # LDREX
        return Insn("load", 4, reads=_regs(rn), writes=_regs(rt), addr=_regs(rn))
    if op1 == 0b01 and op2 == 0b00:                   # STREXB/H
        return Insn("store", 4, reads=_regs(rn, rt), writes=_regs(hw2 & 0xF), addr=_regs(rn))
    if op1 == 0b01 and op2 == 0b01 and op3 in (0, 1):   # TBB/TBH
        return Insn("table_branch", 4, writes_pc=True, reads=_regs(rn, hw2 & 0xF))
    if op1 == 0b01 and op2 == 0b01:                   # LDREXB/H
        return Insn("load", 4, reads=_regs(rn), writes=_regs(rt), addr=_regs(rn))
    wback = {rn} if hw1 >> 5 & 1 else set()
    if op2 & 1:                                       # LDRD
        return Insn("load", 4, words=2, reads=_regs(rn), writes=_regs(rt, rt2) | wback, addr=_regs(rn))
    return Insn("store", 4, words=2, reads=_regs(rn, rt, rt2), writes=frozenset(wback), addr=_regs(rn))


def _branch32(hw1: int, hw2: int, mve: bool) -> Insn:
    # Armv8.1-M low-overhead loops and branch future: hw2 = 11x0 ... 1 (BLX's space in Armv7-M)
    if mve and hw1 >> 7 == 0b111100000 and hw2 >> 12 & 0b1101 == 0b1100 and hw2 & 1:
        if hw2 == 0xE001:                             # DLS, DLSTP
            return Insn("lob_start", 4, reads=_regs(hw1 & 0xF), writes=_regs(LR))
        if hw2 >> 12 == 0b1100 and hw1 & 0xF == 0xF:  # LE, LETP
            return Insn("lob_end", 4, cond=True, writes_pc=True, reads=_regs(LR), writes=_regs(LR))
        if hw2 >> 12 == 0b1100:                       # WLS, WLSTP
            return Insn("lob_start", 4, cond=True, writes_pc=True, reads=_regs(hw1 & 0xF), writes=_regs(LR))
        return Insn("nop", 4)                          # branch future (BF, BFX, BFL, BFCSEL)
    if hw2 >> 12 & 0b101 == 0b000:                     # B<cond>.W, or misc control
        if hw1 >> 7 & 7 == 0b111:
            if hw1 >> 4 & 0x3F == 0b111011:           # DSB, DMB, ISB
                return Insn("barrier", 4)
            if hw1 >> 4 & 0x3F == 0b111010:           # hints: NOP.W, WFI, ...
                return Insn("nop", 4)
            return Insn("alu", 4, reads=_regs(hw1 & 0xF), writes=_regs(hw2 >> 8 & 0xF))   # MSR, MRS
        return Insn("branch", 4, cond=True, writes_pc=True)
    if hw2 >> 12 & 0b101 == 0b001:                     # B.W
        return Insn("branch", 4, writes_pc=True)
    if hw2 >> 12 & 0b101 == 0b101:                     # BL
        return Insn("branch", 4, writes_pc=True, writes=_regs(LR))
    return Insn("alu", 4)


def _mul32(hw1: int, hw2: int) -> Insn:
    op1, op2 = hw1 >> 4 & 7, hw2 >> 4 & 3
    rn, ra, rd, rm = hw1 & 0xF, hw2 >> 12 & 0xF, hw2 >> 8 & 0xF, hw2 & 0xF
    acc = ra != PC
    if op1 == 0b000 and op2 == 0b00:
        return Insn("mla" if acc else "mul", 4, reads=_regs(rn, rm, ra if acc else None), writes=_regs(rd))
    if op1 == 0b000 and op2 == 0b01:                   # MLS
        return Insn("mla", 4, reads=_regs(rn, rm, ra), writes=_regs(rd))
    if op1 == 0b111:                                   # USAD8, USADA8
        return Insn("alu", 4, reads=_regs(rn, rm, ra if acc else None), writes=_regs(rd))
    return Insn("dsp_mul", 4, reads=_regs(rn, rm, ra if acc else None), writes=_regs(rd))


def _lmul32(hw1: int, hw2: int) -> Insn:
    op1 = hw1 >> 4 & 7
    rn, rdlo, rdhi, rm = hw1 & 0xF, hw2 >> 12 & 0xF, hw2 >> 8 & 0xF, hw2 & 0xF
    if op1 in (0b001, 0b011):                          # SDIV, UDIV
        return Insn("div", 4, reads=_regs(rn, rm), writes=_regs(rdhi))
    if op1 in (0b000, 0b010):                          # SMULL, UMULL
        return Insn("lmul", 4, reads=_regs(rn, rm), writes=_regs(rdlo, rdhi))
    return Insn("lmla", 4, reads=_regs(rn, rm, rdlo, rdhi), writes=_regs(rdlo, rdhi))   # SMLAL, UMLAL, ...


def _coprocessor(hw1: int, hw2: int, mve: bool) -> Insn:
    """Floating point (coprocessors 10 and 11) and Helium (the coprocessor 14/15 spaces and
    the Advanced-SIMD-like 0xEF/0xFF space on a core with MVE)."""
    cp = hw2 >> 8 & 0xF
    top = hw1 >> 8
    if mve and (top in (0xEF, 0xFF) or cp in (0xE, 0xF)):
        if top == 0xFE and hw2 == 0x0F4D:                # VPST: sets up predication, no vector work
            return Insn("nop", 4)
        if top in (0xEC, 0xED, 0xFC, 0xFD):
            return Insn("mve_mem", 4, reads=_regs(hw1 & 0xF))
        return Insn("mve", 4)
    if cp >> 1 != 0b101:
        return Insn("alu", 4)
    if top in (0xEC, 0xED):                            # VLDR, VSTR, VLDM, VSTM, VPUSH, VPOP, VMOV 2 regs
        rn = hw1 & 0xF
        if hw1 >> 5 & 0xF == 0b0010 and not hw1 >> 8 & 1:   # VMOV between two core registers and D/S
            return Insn("vfp", 4, reads=_regs(hw2 >> 12 & 0xF, rn))
        load = hw1 >> 4 & 1
        if hw1 >> 8 & 1 and not hw1 >> 5 & 1:         # VLDR / VSTR (P=1, W=0)
            return Insn("vfp_load" if load else "vfp_store", 4, reads=_regs(rn))
        count = hw2 & 0xFF
        words = count if cp == 0xA else count // 2 * 2
        return Insn("vfp_ldm" if load else "vfp_stm", 4, words=max(words, 1), reads=_regs(rn),
                    writes=_regs(rn if hw1 >> 5 & 1 else None))
    if top != 0xEE or hw2 >> 4 & 1:                   # register transfers (VMOV core <-> S, VMRS)
        return Insn("vfp", 4, reads=_regs(hw2 >> 12 & 0xF))
    opc1 = hw1 >> 4 & 0b1011
    if opc1 in (0b0000, 0b0001, 0b1001, 0b1010):      # VMLA/VMLS, VNMLA/VNMLS, VFNMA/VFNMS, VFMA/VFMS
        return Insn("vfp_mac", 4)
    if opc1 == 0b1000:                                  # VDIV
        return Insn("vfp_div", 4)
    if opc1 == 0b1011 and hw1 & 0xF == 0b0001 and hw2 >> 6 & 3 == 0b11:   # VSQRT
        return Insn("vfp_div", 4)
    return Insn("vfp", 4)
