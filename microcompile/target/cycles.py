"""The cycle estimate: an exact instruction trace (what QEMU executed, block by block, with
each block's count, how often its final branch was taken, and its data reads from flash)
priced with each core's published instruction timings and the board's memory system.

An estimate is never a measurement. QEMU counts instructions exactly; what turns them into
cycles here is a model with known gaps (docs/cycles.md): operand-dependent timings (SDIV/UDIV)
take a midpoint, branch refill is the TRM's middle value, caches are modelled for data reads
from flash only, and the M7's dual issue and the M55's beat overlap are approximations. On a
real board `profile` reads DWT->CYCCNT.

The rules, each with a test in tests/target/test_cycles.py:
  - every instruction costs 1 cycle unless a rule below says otherwise;
  - a single load or store costs `load` (2 on Armv6-M/Armv7-M), `load + words - 1` for
    LDRD/STRD; right after another single load or store it pipelines and costs
    `load_pipelined` (1 on M3/M4), unless its address registers are the first one's result;
  - LDM/STM/PUSH/POP cost 1 + N; writing the PC adds the refill P;
  - a taken branch costs 1 + P (P = `branch_refill`), an untaken one 1; TBB/TBH 2 + P;
  - a load followed by an instruction that reads its result stalls `load_use` cycles;
  - MUL, MLA/MLS, SMULL/UMULL, SMLAL/UMLAL, DSP multiplies, SDIV/UDIV: the core's table;
  - FPU: arithmetic `vfp`, multiply-accumulate `vfp_mac`, VDIV/VSQRT `vfp_div`, VLDR/VSTR
    `load`, VLDM/VSTM/VPUSH/VPOP 1 + N;
  - IT is folded (0 cycles) on cores that fold it;
  - M7 dual issue: two neighbouring simple instructions issue together (one cycle for the pair)
    when the second does not read the first's result and they do not both need the one
    load/store or multiply pipe; a conditional branch mispredicts on each change of direction,
    counted as min(taken, fall-through) (loop exits), at `mispredict` cycles;
  - Helium on a dual-beat M55: a vector instruction (4 beats) takes 2 cycles, 1 when it
    overlaps the previous vector instruction of the other group (memory vs arithmetic);
    VPST and VCTP set up predication and cost 1;
  - low-overhead loops: LE/LETP cost 1 + P once per loop run (the first pass; later passes
    are free on the hardware, though QEMU counts each), DLS 1, WLS 1 (+ P when taken);
  - flash: a data read from flash that misses the modelled line buffer or cache costs the
    wait states of each flash read the line fill needs; instruction fetch from flash costs the
    same once per code line per window (the loops are assumed to fit in the I-cache/ART).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from microcompile.target.thumb import Insn, decode

SIMPLE = {"alu", "nop", "mul", "mla", "dsp_mul", "load", "store", "vfp", "it"}
MEMORY = {"load", "store"}
MULTIPLY = {"mul", "mla", "dsp_mul", "lmul", "lmla"}


@dataclass(frozen=True)
class CoreTiming:
    """Cycle costs of one core's instruction classes (microcompile/target/thumb.py KINDS)."""

    core: str
    source: str               # where the figures come from
    load: int = 2             # a single load or store on its own
    load_pipelined: int = 2   # ... right after another single load or store
    load_use: int = 0         # stall when the next instruction reads a loaded register
    branch_refill: int = 2    # P: pipeline refill of a taken branch
    mispredict: int = 0       # a mispredicted conditional branch (cores with a predictor)
    mul: int = 1
    mla: int = 1
    lmul: int = 1
    lmla: int = 1
    dsp_mul: int = 1
    div: int = 7              # SDIV/UDIV: 2..12 cycles by the operands; the midpoint
    vfp: int = 1
    vfp_mac: int = 3
    vfp_div: int = 14
    it: int = 0               # IT folds onto its neighbour
    dual_issue: bool = False
    mve_cycles: int = 0       # cycles of one 4-beat Helium instruction (2 on a dual-beat M55)


CORES = {
    "cortex-m0": CoreTiming("cortex-m0", "Cortex-M0 TRM (DDI0432C) 3.3: loads/stores 2, taken branch 2 (BL 4, "
                            "POP with PC 4+N), LDM/STM 1+N; MUL 1 (the fast multiplier; 32 with the small one)",
                            branch_refill=1, it=1),
    "cortex-m0plus": CoreTiming("cortex-m0plus", "Cortex-M0+ TRM (DDI0484C) 3.3: loads/stores 2, taken branch 2 "
                                "(BL 3, POP with PC 3+N), LDM/STM 1+N; MUL 1 (the fast multiplier)",
                                branch_refill=1, it=1),
    "cortex-m3": CoreTiming("cortex-m3", "Cortex-M3 TRM (DDI0337I) Table 3.1: LDR 2 (1 pipelined), P 1..3 (2 "
                            "taken), MLA 2, SMULL/UMULL 3..5, SMLAL/UMLAL 4..7, SDIV 2..12 (midpoints)",
                            load_pipelined=1, mla=2, lmul=4, lmla=5),
    "cortex-m4f": CoreTiming("cortex-m4f", "Cortex-M4 TRM (100166) Table 3-1: LDR 2 (1 pipelined), P 1..3 (2 "
                             "taken), MUL/MLA/SMULL/SMLAL/SMLAD 1, SDIV 2..12; FPU Table 7-1: VADD/VMUL 1, "
                             "VMLA/VFMA 3, VDIV/VSQRT 14, VLDR 2, VLDM 1+N",
                             load_pipelined=1),
    # Arm publishes no instruction timing table for the M33: its 3-stage pipeline is taken
    # to price instructions as the M4's does (an assumption; see the docs).
    "cortex-m33f": CoreTiming("cortex-m33f", "assumed equal to the Cortex-M4's Table 3-1 (Arm publishes no "
                              "Cortex-M33 cycle table)", load_pipelined=1),
    # The M7 (6 stages, dual issue, branch prediction): Arm publishes no full table either;
    # loads issue in one cycle with a result one cycle later, FP MACs are pipelined.
    "cortex-m7f": CoreTiming("cortex-m7f", "Cortex-M7 TRM (DDI0489F) 1.2 pipeline and dual-issue rules; per-"
                             "instruction costs assumed (load 1 + 1 load-use, predicted taken branch 1, "
                             "mispredict 6, VFMA pipelined 1)",
                             load=1, load_pipelined=1, load_use=1, branch_refill=1, mispredict=6,
                             div=7, vfp_mac=1, vfp_div=14, dual_issue=True),
    # The M55: scalar side like the M33's; Helium dual-beat (M55 TRM 101051: a 128-bit vector
    # instruction is 4 beats, 2 per cycle), loads and arithmetic overlap.
    "cortex-m55": CoreTiming("cortex-m55", "Cortex-M55 TRM (101051) dual-beat Helium; scalar costs assumed "
                             "as the M4's (load 2, 1 pipelined, P 2)", load_pipelined=1, mve_cycles=2),
}


def core_timing(core: str) -> CoreTiming:
    try:
        return CORES[core]
    except KeyError:
        raise ValueError(f"no cycle model for core {core!r}; models: {', '.join(sorted(CORES))}") from None


@dataclass(frozen=True)
class MemorySystem:
    """What flash costs: the wait states at the board's clock, the width of a flash read,
    and the buffer or cache in front of flash that data reads from flash go through."""

    clock_hz: int
    flash_wait_states: int = 0   # per flash read, at the core clock
    flash_read_bytes: int = 8    # bytes one flash read returns
    cache_lines: int = 1         # the data lines modelled in front of flash
    cache_line_bytes: int = 32
    cache_ways: int = 0          # 0: fully associative
    note: str = ""

    @property
    def miss_penalty(self) -> int:
        """Cycles a line fill from flash adds to a load (the load's own cycle is priced already)."""
        reads = max(1, self.cache_line_bytes // self.flash_read_bytes)
        return self.flash_wait_states * reads

    def plugin_args(self) -> list[str]:
        ways = self.cache_ways or self.cache_lines
        return [f"lines={self.cache_lines}", f"line={self.cache_line_bytes}", f"ways={ways}"]


def memory_system(board) -> MemorySystem:
    """The board's memory system: the clock, `flash_latency` from its [platform] table (the wait
    states its platform code programs) or the MCU's [timing] `flash_wait_states`, and the
    MCU's [timing] facts about its flash and the cache in front of it."""
    timing = dict(board.mcu.timing)
    defines = dict(board.defines)
    wait = defines.get("flash_latency", timing.get("flash_wait_states", 0)) * timing.get("bus_clock_divider", 1)
    return MemorySystem(clock_hz=board.target.clock_hz, flash_wait_states=wait,
                        flash_read_bytes=timing.get("flash_read_bytes", 8),
                        cache_lines=timing.get("cache_lines", 1), cache_line_bytes=timing.get("cache_line_bytes", 32),
                        cache_ways=timing.get("cache_ways", 0))


@dataclass(frozen=True)
class BlockRun:
    """One translated block as executed in a window: its instructions' bytes, how often it ran,
    how often the block after it was not its fall-through (its final branch taken), and its
    data reads from flash (and how many missed the modelled cache)."""

    vaddr: int
    code: tuple[bytes, ...]
    count: int
    taken: int = 0
    fall: int = 0
    flash_reads: int = 0
    flash_misses: int = 0


@dataclass
class Estimate:
    cycles: int = 0
    instructions: int = 0
    parts: dict = field(default_factory=dict)   # cycles by source: pipeline, branches, loops, flash

    def add(self, part: str, cycles: int) -> None:
        self.cycles += cycles
        self.parts[part] = self.parts.get(part, 0) + cycles

    def ms(self, clock_hz: int) -> float:
        return 1000.0 * self.cycles / clock_hz


@lru_cache(maxsize=1 << 16)
def _decode(code: bytes, mve: bool) -> Insn:
    return decode(code, mve)


def insn_cycles(insn: Insn, t: CoreTiming) -> int:
    """An instruction's own cost, before the rules between neighbours (branches untaken)."""
    k = insn.kind
    if k in ("load", "store"):
        return t.load + insn.words - 1
    if k in ("ldm", "stm", "vfp_ldm", "vfp_stm"):
        return 1 + insn.words
    if k in ("vfp_load", "vfp_store"):
        return t.load
    if k == "table_branch":
        return 2
    if k in ("mve", "mve_mem"):
        return t.mve_cycles or 1
    if k == "lob_end":
        return 0                      # priced per loop run (block_cycles's caller)
    return {"mul": t.mul, "mla": t.mla, "lmul": t.lmul, "lmla": t.lmla, "dsp_mul": t.dsp_mul, "div": t.div,
            "vfp": t.vfp, "vfp_mac": t.vfp_mac, "vfp_div": t.vfp_div, "it": t.it}.get(k, 1)


def block_cycles(insns: list[Insn], t: CoreTiming) -> int:
    """Cycles of one pass through a straight-line block, its final branch untaken: each
    instruction's cost with the rules between neighbours (pipelined loads, load-use, dual
    issue, Helium overlap). A block that ends in LE loops onto itself: its first vector
    instruction may overlap its last."""
    total = 0
    paired = False
    loops = bool(insns) and insns[-1].kind == "lob_end"
    vectors = [i for i in insns if i.kind in ("mve", "mve_mem")]
    prev_vector = vectors[-1] if loops and vectors else None
    for n, insn in enumerate(insns):
        prev = insns[n - 1] if n else None
        cost = insn_cycles(insn, t)
        if insn.kind in MEMORY and prev is not None and prev.kind in MEMORY and not (insn.addr & prev.writes):
            cost = t.load_pipelined + insn.words - 1
        if prev is not None and prev.kind in ("load", "vfp_load") and insn.reads & prev.writes:
            cost += t.load_use
        if insn.kind in ("mve", "mve_mem"):
            if prev_vector is not None and prev_vector.kind != insn.kind:
                cost = max(1, t.mve_cycles - 1)
            prev_vector = insn
        if t.dual_issue and not paired and prev is not None and _pairs(prev, insn):
            cost, paired = 0, True
        else:
            paired = False
        total += cost
    return total


def _pairs(first: Insn, second: Insn) -> bool:
    """M7 dual issue of `second` with `first` (approximate: TRM DDI0489F 1.2 lists the pipes)."""
    if first.kind not in SIMPLE or second.kind not in SIMPLE | {"branch"}:
        return False
    if first.kind in MEMORY and second.kind in MEMORY:
        return False
    if first.kind in MULTIPLY and second.kind in MULTIPLY:
        return False
    if first.kind == "load" and second.reads & first.writes:
        return False
    return not (second.reads & first.writes) and not (second.writes & first.writes)


def estimate(blocks, t: CoreTiming, mem: MemorySystem, code_lines: int = 0, mve: bool = False) -> Estimate:
    """The estimate for a window of BlockRuns. `code_lines`: the distinct flash lines of code
    the window executed (each fetched from flash once)."""
    est = Estimate()
    for b in blocks:
        if b.count == 0 and b.taken == 0:
            continue
        insns = [_decode(c, mve) for c in b.code]
        est.instructions += b.count * len(insns)
        est.add("pipeline", b.count * block_cycles(insns, t))
        last = insns[-1] if insns else None
        if last is None or not last.writes_pc:
            continue
        if last.kind == "lob_end":
            est.add("loops", b.fall * (1 + t.branch_refill))
        elif last.kind == "lob_start" or last.cond:
            est.add("branches", b.taken * t.branch_refill)
            if t.mispredict:
                est.add("branches", min(b.taken, b.fall) * t.mispredict)
        else:
            est.add("branches", b.count * t.branch_refill)
    est.add("flash", sum(b.flash_misses for b in blocks) * mem.miss_penalty
            + code_lines * mem.miss_penalty)
    return est
